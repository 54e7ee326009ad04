package quota

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// snapshotRows lists one budget's snapshot as "position name queue: reason".
func snapshotRows(t *testing.T, q *AdmissionQueue, key BudgetKey) []string {
	t.Helper()
	for _, bq := range q.Reader().Snapshot().Budgets {
		if bq.Budget != key {
			continue
		}
		rows := []string{}
		for _, p := range bq.Pods {
			rows = append(rows, fmt.Sprintf("%d %s %s: %s", p.Position, p.Pod.Name, p.Queue, p.Reason.Message))
		}
		return rows
	}
	t.Fatalf("no budget %v in the snapshot", key)
	return nil
}

// TestGroupMembersStayParkedUntilComplete: whatever order the members arrive in, each
// is parked with the group's count until the last one comes; they share the place of
// the best member that has arrived (here before or after a pod created in between),
// and the group is admitted in one step once complete.
func TestGroupMembersStayParkedUntilComplete(t *testing.T) {
	key := BudgetKey{Namespace: "team-a", Name: "b"}
	// Members g-0..g-4 are created at 0, 1, 2, 4, 5; "solo" at 3 waits for room.
	created := map[string]int{"g-0": 0, "g-1": 1, "g-2": 2, "g-3": 4, "g-4": 5}
	tests := map[string]struct {
		arrivals []string
		// want is the snapshot after each arrival but the last.
		want [][]string
	}{
		"in creation order": {
			arrivals: []string{"g-0", "g-1", "g-2", "g-3", "g-4"},
			want: [][]string{
				{"1 g-0 parked: group g: 1 of 5 members exist", "2 solo inadmissible: requests.cpu: 6 requested, 5 free in Budget team-a/b; position 2 of 2"},
				{"1 g-0 parked: group g: 2 of 5 members exist", "2 g-1 parked: group g: 2 of 5 members exist", "3 solo inadmissible: requests.cpu: 6 requested, 5 free in Budget team-a/b; position 3 of 3"},
				{"1 g-0 parked: group g: 3 of 5 members exist", "2 g-1 parked: group g: 3 of 5 members exist", "3 g-2 parked: group g: 3 of 5 members exist", "4 solo inadmissible: requests.cpu: 6 requested, 5 free in Budget team-a/b; position 4 of 4"},
				{"1 g-0 parked: group g: 4 of 5 members exist", "2 g-1 parked: group g: 4 of 5 members exist", "3 g-2 parked: group g: 4 of 5 members exist", "4 g-3 parked: group g: 4 of 5 members exist", "5 solo inadmissible: requests.cpu: 6 requested, 5 free in Budget team-a/b; position 5 of 5"},
			},
		},
		"in reverse order: each arrival is the group's new best member": {
			arrivals: []string{"g-4", "g-3", "g-2", "g-1", "g-0"},
			want: [][]string{
				{"1 solo inadmissible: requests.cpu: 6 requested, 5 free in Budget team-a/b; position 1 of 2", "2 g-4 parked: group g: 1 of 5 members exist"},
				{"1 solo inadmissible: requests.cpu: 6 requested, 5 free in Budget team-a/b; position 1 of 3", "2 g-3 parked: group g: 2 of 5 members exist", "3 g-4 parked: group g: 2 of 5 members exist"},
				{"1 g-2 parked: group g: 3 of 5 members exist", "2 g-3 parked: group g: 3 of 5 members exist", "3 g-4 parked: group g: 3 of 5 members exist", "4 solo inadmissible: requests.cpu: 6 requested, 5 free in Budget team-a/b; position 4 of 4"},
				{"1 g-1 parked: group g: 4 of 5 members exist", "2 g-2 parked: group g: 4 of 5 members exist", "3 g-3 parked: group g: 4 of 5 members exist", "4 g-4 parked: group g: 4 of 5 members exist", "5 solo inadmissible: requests.cpu: 6 requested, 5 free in Budget team-a/b; position 5 of 5"},
			},
		},
		"the best member last": {
			arrivals: []string{"g-3", "g-1", "g-4", "g-2", "g-0"},
			want: [][]string{
				{"1 solo inadmissible: requests.cpu: 6 requested, 5 free in Budget team-a/b; position 1 of 2", "2 g-3 parked: group g: 1 of 5 members exist"},
				{"1 g-1 parked: group g: 2 of 5 members exist", "2 g-3 parked: group g: 2 of 5 members exist", "3 solo inadmissible: requests.cpu: 6 requested, 5 free in Budget team-a/b; position 3 of 3"},
				{"1 g-1 parked: group g: 3 of 5 members exist", "2 g-3 parked: group g: 3 of 5 members exist", "3 g-4 parked: group g: 3 of 5 members exist", "4 solo inadmissible: requests.cpu: 6 requested, 5 free in Budget team-a/b; position 4 of 4"},
				{"1 g-1 parked: group g: 4 of 5 members exist", "2 g-2 parked: group g: 4 of 5 members exist", "3 g-3 parked: group g: 4 of 5 members exist", "4 g-4 parked: group g: 4 of 5 members exist", "5 solo inadmissible: requests.cpu: 6 requested, 5 free in Budget team-a/b; position 5 of 5"},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			q, _ := newTestQueue()
			q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=6").Obj())
			q.UpsertPod(makePod("running").Req("cpu=1").Ungated().Pod())
			q.UpsertPod(makePod("solo").Created(3).Req("cpu=6").Pod())
			for i, name := range tc.arrivals {
				q.UpsertPod(member(name, "g", 5, created[name]).Pod())
				got := admitNames(q)
				if i == len(tc.arrivals)-1 {
					if diff := cmp.Diff([]string{"g-0", "g-1", "g-2", "g-3", "g-4"}, got); diff != "" {
						t.Errorf("admitted when complete (-want +got):\n%s", diff)
					}
					break
				}
				if len(got) != 0 {
					t.Fatalf("admitted %v with %d of 5 members", got, i+1)
				}
				if diff := cmp.Diff(tc.want[i], snapshotRows(t, q, key)); diff != "" {
					t.Errorf("after %d arrivals (-want +got):\n%s", i+1, diff)
				}
			}
		})
	}
}

// TestGroupPlacementFollowsChanges: changes to one member that change how the whole
// group waits (it becomes incomplete, the size changes, a better member arrives while
// it is queued) re-place every member.
func TestGroupPlacementFollowsChanges(t *testing.T) {
	key := BudgetKey{Namespace: "team-a", Name: "b"}
	insufficient := func(name string, pos, n int) string {
		return fmt.Sprintf("%d %s inadmissible: group g: requests.cpu: 4 requested, 3 free in Budget team-a/b; position %d of %d", pos, name, pos, n)
	}

	t.Run("a deleted member makes a complete group wait for members again", func(t *testing.T) {
		q, _ := newTestQueue()
		q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=4").Obj())
		q.UpsertPod(makePod("running").Req("cpu=1").Ungated().Pod())
		for i := range 4 {
			q.UpsertPod(member(fmt.Sprintf("g-%d", i), "g", 4, i).Pod())
		}
		if got := admitNames(q); len(got) != 0 {
			t.Fatalf("admitted %v with room for 3 of 4", got)
		}
		want := []string{insufficient("g-0", 1, 4), insufficient("g-1", 2, 4), insufficient("g-2", 3, 4), insufficient("g-3", 4, 4)}
		if diff := cmp.Diff(want, snapshotRows(t, q, key)); diff != "" {
			t.Errorf("complete, no room (-want +got):\n%s", diff)
		}
		q.DeletePod("g-3")
		q.DeletePod("running")
		if got := admitNames(q); len(got) != 0 {
			t.Fatalf("admitted %v with 3 of 4 members", got)
		}
		want = []string{"1 g-0 parked: group g: 3 of 4 members exist", "2 g-1 parked: group g: 3 of 4 members exist", "3 g-2 parked: group g: 3 of 4 members exist"}
		if diff := cmp.Diff(want, snapshotRows(t, q, key)); diff != "" {
			t.Errorf("after a member is deleted (-want +got):\n%s", diff)
		}
		q.UpsertPod(member("g-4", "g", 4, 9).Pod())
		if diff := cmp.Diff([]string{"g-0", "g-1", "g-2", "g-4"}, admitNames(q)); diff != "" {
			t.Errorf("admitted (-want +got):\n%s", diff)
		}
	})

	t.Run("the largest size wins, and counts again when the member giving it leaves", func(t *testing.T) {
		q, _ := newTestQueue()
		q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=10").Obj())
		q.UpsertPod(member("a", "g", 2, 0).Pod())
		q.UpsertPod(member("b", "g", 3, 1).Pod())
		if got := admitNames(q); len(got) != 0 {
			t.Fatalf("admitted %v with 2 members when one says 3", got)
		}
		if diff := cmp.Diff([]string{"1 a parked: group g: 2 of 3 members exist", "2 b parked: group g: 2 of 3 members exist"}, snapshotRows(t, q, key)); diff != "" {
			t.Errorf("sizes 2 and 3 (-want +got):\n%s", diff)
		}
		// b changes its mind: the group's size is 2 again, and it is complete.
		q.UpsertPod(member("b", "g", 2, 1).Pod())
		if diff := cmp.Diff([]string{"a", "b"}, admitNames(q)); diff != "" {
			t.Errorf("admitted after b says 2 (-want +got):\n%s", diff)
		}
	})

	t.Run("a better member arriving at a queued group moves the whole group ahead", func(t *testing.T) {
		q, _ := newTestQueue()
		q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=4").Strict().Obj())
		q.UpsertPod(makePod("running").Req("cpu=1").Ungated().Pod())
		q.UpsertPod(makePod("solo").Created(5).Req("cpu=4").Pod())
		q.UpsertPod(member("g-10", "g", 2, 10).Pod())
		q.UpsertPod(member("g-11", "g", 2, 11).Pod())
		if got := admitNames(q); len(got) != 0 {
			t.Fatalf("admitted %v with 3 CPUs free", got)
		}
		// A third member created before solo: the group now goes first, and StrictFIFO
		// admits it before solo once there is room.
		q.UpsertPod(member("g-01", "g", 2, 1).Req("cpu=1").Pod())
		q.DeletePod("running")
		if diff := cmp.Diff([]string{"g-01", "g-10", "g-11"}, admitNames(q)); diff != "" {
			t.Errorf("admitted (-want +got):\n%s", diff)
		}
		want := []string{"1 solo inadmissible: requests.cpu: 4 requested, 1 free in Budget team-a/b; position 1 of 1"}
		if diff := cmp.Diff(want, snapshotRows(t, q, key)); diff != "" {
			t.Errorf("after the group (-want +got):\n%s", diff)
		}
	})

	t.Run("a member failing its ungate waits alone in backoff while the group runs", func(t *testing.T) {
		q, clk := newTestQueue()
		q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=10").Obj())
		for i := range 3 {
			q.UpsertPod(member(fmt.Sprintf("g-%d", i), "g", 3, i).RV(1).Pod())
		}
		for _, a := range q.Admit() {
			if a.Pod.Name != "g-1" {
				q.Done(a.Pod.UID, Ungated, "")
				continue
			}
			// g-1's ungate did not apply: seen gated past the attempt, it is given back.
			q.Done(a.Pod.UID, Unknown, "1")
			q.UpsertPod(member("g-1", "g", 3, 1).RV(2).Pod())
		}
		// A late fourth member of the started group is admitted without waiting for
		// size again; the failed one waits for its backoff.
		q.UpsertPod(member("g-3", "g", 3, 3).Pod())
		if diff := cmp.Diff([]string{"g-3"}, admitNames(q)); diff != "" {
			t.Errorf("admitted during g-1's backoff (-want +got):\n%s", diff)
		}
		clk.Step(DefaultInitialBackoff)
		if diff := cmp.Diff([]string{"g-1"}, admitNames(q)); diff != "" {
			t.Errorf("admitted after the backoff (-want +got):\n%s", diff)
		}
	})
}
