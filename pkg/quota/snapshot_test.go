package quota

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

var positionRE = regexp.MustCompile(`position \d+ of \d+`)

// TestSnapshotPositions: in a snapshot, every budget lists its gated pods with
// positions 1..n in admission order; each reason's "position k of n" agrees with the
// snapshot's own order and with WaitReason asked for that pod alone; and freeing room
// one pod at a time admits them in exactly that order.
func TestSnapshotPositions(t *testing.T) {
	tests := map[string]struct {
		strict bool
	}{
		"BestEffortFIFO": {},
		"StrictFIFO":     {strict: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			q, _ := newTestQueue()
			key := BudgetKey{Namespace: "team-a", Name: "b"}
			bb := makeBudget("team-a", "b").Hard("cpu=4")
			if tc.strict {
				bb = bb.Strict()
			}
			q.UpsertBudget(bb.Obj())
			// A second budget covering some of the pods: their reasons may name it.
			q.UpsertBudget(makeBudget("team-a", "gpu").Hard("cpu=20").Selector("kind", "gpu").Obj())
			q.UpsertPod(makePod("running").Req("cpu=4").Ungated().Pod())
			pods := []*podBuilder{
				makePod("low-early").Created(0).Req("cpu=1"),
				makePod("high-late").Priority(10).Created(9).Req("cpu=1"),
				makePod("mid").Priority(5).Created(3).Req("cpu=1").Label("kind", "gpu"),
				makePod("same-time-b").Created(4).Req("cpu=1"),
				makePod("same-time-a").Created(4).Req("cpu=1").Label("kind", "gpu"),
				member("g-1", "g", 2, 6),
				member("g-0", "g", 2, 2),
				makePod("late").Created(8).Req("cpu=1"),
			}
			for _, p := range pods {
				q.UpsertPod(p.Pod())
			}
			q.Admit()

			snap := q.Reader().Snapshot()
			var uids []types.UID
			for _, bq := range snap.Budgets {
				for _, p := range bq.Pods {
					uids = append(uids, p.Pod.UID)
				}
			}
			batch := q.Reader().WaitReasons(append(uids, "unknown", "running"))
			if len(batch) != 8 {
				t.Errorf("WaitReasons returned %d reasons, want one for each of the 8 gated pods", len(batch))
			}
			var order []string
			for _, bq := range snap.Budgets {
				for i, p := range bq.Pods {
					if p.Position != i+1 {
						t.Errorf("%v: %s at index %d has position %d", bq.Budget, p.Pod.Name, i, p.Position)
					}
					if bq.Budget == key {
						order = append(order, p.Pod.Name)
					}
					alone, _ := q.Reader().WaitReason(p.Pod.UID)
					if diff := cmp.Diff(alone, p.Reason); diff != "" {
						t.Errorf("%s: snapshot reason differs from WaitReason (-alone +snapshot):\n%s", p.Pod.Name, diff)
					}
					if diff := cmp.Diff(alone, batch[p.Pod.UID]); diff != "" {
						t.Errorf("%s: WaitReasons differs from WaitReason (-alone +batch):\n%s", p.Pod.Name, diff)
					}
					got := positionRE.FindString(p.Reason.Message)
					if bq.Budget == key && got != "" && strings.Contains(p.Reason.Message, key.Describe()) {
						if want := fmt.Sprintf("position %d of %d", p.Position, len(bq.Pods)); got != want {
							t.Errorf("%s: reason says %q, snapshot %q", p.Pod.Name, got, want)
						}
					}
				}
			}
			wantOrder := []string{"high-late", "mid", "low-early", "g-0", "g-1", "same-time-a", "same-time-b", "late"}
			if diff := cmp.Diff(wantOrder, order); diff != "" {
				t.Fatalf("snapshot order (-want +got):\n%s", diff)
			}

			// Free just enough room for the snapshot's first pod (with its group) each
			// time: it is the one admitted.
			hard := 4
			for round := 0; round < len(wantOrder); round++ {
				head := q.Reader().Snapshot().Budgets[0].Pods
				if len(head) == 0 {
					break
				}
				want := []string{head[0].Pod.Name}
				if head[0].Group != "" {
					want = []string{"g-0", "g-1"}
				}
				hard += len(want)
				q.UpsertBudget(bb.Hard(fmt.Sprintf("cpu=%d", hard)).Obj())
				if diff := cmp.Diff(want, admitNames(q)); diff != "" {
					t.Fatalf("admitted after freeing room for %s (-want +got):\n%s", head[0].Pod.Name, diff)
				}
			}
			if n := len(q.Reader().Snapshot().Budgets[0].Pods); n != 0 {
				t.Errorf("%d pods still gated", n)
			}
		})
	}
}

// TestSnapshotAndStatus: the snapshot lists queues in admission order and is JSON; the
// status counts and dirty set follow changes.
func TestSnapshotAndStatus(t *testing.T) {
	q, _ := newTestQueue()
	key := BudgetKey{Namespace: "team-a", Name: "b"}
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=2").Obj())
	if diff := cmp.Diff([]BudgetKey{key}, q.DirtyStatuses()); diff != "" {
		t.Errorf("dirty after create (-want +got):\n%s", diff)
	}
	if got := q.DirtyStatuses(); len(got) != 0 {
		t.Errorf("dirty twice: %v", got)
	}
	q.UpsertPod(makePod("p1").Created(1).Req("cpu=2").Pod())
	q.UpsertPod(makePod("p2").Created(2).Req("cpu=1").Pod())
	q.UpsertPod(makePod("huge").Created(0).Req("cpu=3").Pod())
	admitNames(q)
	if diff := cmp.Diff([]BudgetKey{key}, q.DirtyStatuses()); diff != "" {
		t.Errorf("dirty after admissions (-want +got):\n%s", diff)
	}
	st := mustStatus(t, q, key)
	type summary struct {
		State           v1alpha1.BudgetState
		Admitted, Gated int32
		Used, Pending   string
		NeverFit        int
	}
	used, pending := st.Used["requests.cpu"], st.Pending["requests.cpu"]
	got := summary{State: st.State, Admitted: st.AdmittedPods, Gated: st.GatedPods, Used: used.String(), Pending: pending.String(), NeverFit: len(st.NeverFit)}
	want := summary{State: v1alpha1.StateOpen, Admitted: 1, Gated: 2, Used: "2", Pending: "4", NeverFit: 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}

	snap := q.Reader().Snapshot()
	var rows []string
	for _, p := range snap.Budgets[0].Pods {
		rows = append(rows, string(p.Queue)+" "+p.Pod.Name+" "+string(p.Reason.Code))
	}
	if diff := cmp.Diff([]string{"parked huge RequestsExceedHard", "inadmissible p2 InsufficientQuota"}, rows); diff != "" {
		t.Errorf("snapshot (-want +got):\n%s", diff)
	}
	if _, err := json.Marshal(snap); err != nil {
		t.Errorf("snapshot does not marshal: %v", err)
	}
}
