package quota

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func member(name, group string, size int, created int) *podBuilder {
	return makePod(name).Group(group, size).Created(created).Req("cpu=1")
}

// TestGroupWaitsForRoomForAll: a group of 4 waits while only 3 fit, then all 4 go in
// one step.
func TestGroupWaitsForRoomForAll(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=4").Obj())
	q.UpsertPod(makePod("running").Req("cpu=1").Ungated().Pod())
	for i := range 4 {
		q.UpsertPod(member(fmt.Sprintf("g-%d", i), "g", 4, i).Pod())
	}
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v with room for 3 of 4", got)
	}
	r, _ := q.Reader().WaitReason("g-0")
	if diff := cmp.Diff(Reason{Code: CodeInsufficient, Message: "group g: requests.cpu: 4 requested, 3 free in Budget team-a/b; position 1 of 4"}, r); diff != "" {
		t.Errorf("wait reason (-want +got):\n%s", diff)
	}
	q.DeletePod("running")
	adm := q.Admit()
	var names []string
	for _, a := range adm {
		names = append(names, a.Pod.Name)
	}
	if diff := cmp.Diff([]string{"g-0", "g-1", "g-2", "g-3"}, names); diff != "" {
		t.Errorf("admitted (-want +got):\n%s", diff)
	}
}

// TestGroupWaitsForMembers: until size members exist none is admitted; a member
// deleted while the group waits makes it wait for size again.
func TestGroupWaitsForMembers(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=10").Obj())
	for i := range 3 {
		q.UpsertPod(member(fmt.Sprintf("g-%d", i), "g", 4, i).Pod())
	}
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v with 3 of 4 members", got)
	}
	r, _ := q.Reader().WaitReason("g-1")
	if diff := cmp.Diff(Reason{Code: CodeGroupIncomplete, Message: "group g: 3 of 4 members exist"}, r); diff != "" {
		t.Errorf("wait reason (-want +got):\n%s", diff)
	}
	q.UpsertPod(member("g-3", "g", 4, 3).Pod())
	q.DeletePod("g-0")
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v after a member was deleted", got)
	}
	q.UpsertPod(member("g-4", "g", 4, 4).Pod())
	if diff := cmp.Diff([]string{"g-1", "g-2", "g-3", "g-4"}, admitNames(q)); diff != "" {
		t.Errorf("admitted (-want +got):\n%s", diff)
	}
}

// TestHalfFittingGroupsDoNotDeadlock: two groups that each fit alone but not together
// never reserve half each: one goes, the other follows when it ends.
func TestHalfFittingGroupsDoNotDeadlock(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=4").Obj())
	// Interleaved creation: a-0, b-0, a-1, b-1, ...
	for i := range 3 {
		q.UpsertPod(member(fmt.Sprintf("a-%d", i), "a", 3, 2*i).Pod())
		q.UpsertPod(member(fmt.Sprintf("b-%d", i), "b", 3, 2*i+1).Pod())
	}
	if diff := cmp.Diff([]string{"a-0", "a-1", "a-2"}, admitNames(q)); diff != "" {
		t.Fatalf("first (-want +got):\n%s", diff)
	}
	for i := range 3 {
		q.UpsertPod(member(fmt.Sprintf("a-%d", i), "a", 3, 2*i).Phase("Succeeded").Ungated().Pod())
	}
	if diff := cmp.Diff([]string{"b-0", "b-1", "b-2"}, admitNames(q)); diff != "" {
		t.Errorf("second (-want +got):\n%s", diff)
	}
}

// TestGroupTooLargeNeverFits: a group whose sum exceeds hard is reported, and does
// not block the pods behind it.
func TestGroupTooLargeNeverFits(t *testing.T) {
	q, _ := newTestQueue()
	key := BudgetKey{Namespace: "team-a", Name: "b"}
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=2").Strict().Obj())
	for i := range 3 {
		q.UpsertPod(member(fmt.Sprintf("g-%d", i), "g", 3, i).Pod())
	}
	q.UpsertPod(makePod("after").Created(9).Req("cpu=1").Pod())
	if diff := cmp.Diff([]string{"after"}, admitNames(q)); diff != "" {
		t.Errorf("admitted (-want +got):\n%s", diff)
	}
	st := mustStatus(t, q, key)
	var never []string
	for _, n := range st.NeverFit {
		never = append(never, fmt.Sprintf("%s %s %s>%s", n.Pod.Name, n.Resource, n.Requested.String(), n.Hard.String()))
	}
	want := []string{"g-0 requests.cpu 3>2", "g-1 requests.cpu 3>2", "g-2 requests.cpu 3>2"}
	if diff := cmp.Diff(want, never); diff != "" {
		t.Errorf("never fit (-want +got):\n%s", diff)
	}
	r, _ := q.Reader().WaitReason("g-0")
	if diff := cmp.Diff(Reason{Code: CodeNeverFits, Message: "group g: requests.cpu: 3 requested, more than the 2 hard of Budget team-a/b: it can never fit"}, r); diff != "" {
		t.Errorf("wait reason (-want +got):\n%s", diff)
	}
	// Raising hard lets the group in next to the pod that went ahead.
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=4").Strict().Obj())
	if diff := cmp.Diff([]string{"g-0", "g-1", "g-2"}, admitNames(q)); diff != "" {
		t.Errorf("after raising hard (-want +got):\n%s", diff)
	}
}

// TestPartiallyAdmittedGroupIsCompleted: after a manager restart, a group with some
// members running and some gated admits the gated rest as soon as they fit.
func TestPartiallyAdmittedGroupIsCompleted(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=3").Obj())
	q.UpsertPod(member("g-0", "g", 4, 0).Ungated().Pod())
	q.UpsertPod(member("g-1", "g", 4, 1).Ungated().Pod())
	q.UpsertPod(member("g-2", "g", 4, 2).Pod())
	q.UpsertPod(member("g-3", "g", 4, 3).Pod())
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v with room for 1 of the 2 gated members", got)
	}
	q.UpsertPod(makePod("x").Ungated().Phase("Succeeded").Pod()) // unrelated: wakes nothing
	q.DeletePod("g-0")
	if diff := cmp.Diff([]string{"g-2", "g-3"}, admitNames(q)); diff != "" {
		t.Errorf("admitted (-want +got):\n%s", diff)
	}
}

// TestGroupMemberFailureRetriesAlone: when one member's ungate fails, the others stay
// admitted and the failed one is retried after its backoff.
func TestGroupMemberFailureRetriesAlone(t *testing.T) {
	q, clk := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=4").Obj())
	for i := range 2 {
		q.UpsertPod(member(fmt.Sprintf("g-%d", i), "g", 2, i).Pod())
	}
	adm := q.Admit()
	if len(adm) != 2 {
		t.Fatalf("admitted %d, want 2", len(adm))
	}
	q.Done("g-0", Ungated, "")
	q.Done("g-1", Unknown, "")
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v during backoff", got)
	}
	clk.Step(DefaultInitialBackoff)
	if diff := cmp.Diff([]string{"g-1"}, admitNames(q)); diff != "" {
		t.Errorf("after backoff (-want +got):\n%s", diff)
	}
}

// TestInvalidGroupSizeHolds: a member with an unusable size is held, with a reason.
func TestInvalidGroupSizeHolds(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=4").Obj())
	q.UpsertPod(makePod("p").Req("cpu=1").Label("quotagate.io/group", "g").Pod())
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v", got)
	}
	r, _ := q.Reader().WaitReason("p")
	if diff := cmp.Diff(Reason{Code: CodeGroupInvalid, Message: "group g: annotation quotagate.io/group-size is missing"}, r); diff != "" {
		t.Errorf("wait reason (-want +got):\n%s", diff)
	}
	q.UpsertPod(makePod("p").Req("cpu=1").Group("g", 1).Pod())
	if diff := cmp.Diff([]string{"p"}, admitNames(q)); diff != "" {
		t.Errorf("after fixing the annotation (-want +got):\n%s", diff)
	}
}

// TestStrictGroupBackoffRecovers: in a StrictFIFO budget, a group whose members come
// back from backoff at different times is admitted when the last one is back, whichever
// member heads the queue.
func TestStrictGroupBackoffRecovers(t *testing.T) {
	q, clk := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=4").Strict().Obj())
	q.UpsertPod(member("a", "g", 2, 0).RV(1).Pod())
	q.UpsertPod(member("b", "g", 2, 0).RV(2).Pod())
	q.UpsertPod(makePod("behind").Created(5).Req("cpu=1").Pod())
	adm := q.Admit()
	if len(adm) != 3 {
		t.Fatalf("admitted %d, want 3", len(adm))
	}
	q.Done("behind", Ungated, "")
	// Each member's ungate is proven not applied (seen gated past the attempt), so it
	// goes back to the queues and backs off: a is back first, alone, and the group
	// waits for b.
	q.Done("a", Unknown, "1")
	q.UpsertPod(member("a", "g", 2, 0).RV(3).Pod())
	clk.Step(50 * time.Millisecond)
	q.Done("b", Unknown, "2")
	q.UpsertPod(member("b", "g", 2, 0).RV(4).Pod())
	clk.Step(50 * time.Millisecond)
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v with b still backing off", got)
	}
	clk.Step(50 * time.Millisecond)
	if diff := cmp.Diff([]string{"a", "b"}, admitNames(q)); diff != "" {
		t.Errorf("after both backoffs (-want +got):\n%s", diff)
	}
}

// TestFreedCapacityCountsGroupOnce: when capacity frees up, a waiting group is counted
// once, so the pod behind it that fits in the rest is admitted in the same round.
func TestFreedCapacityCountsGroupOnce(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=4").Obj())
	q.UpsertPod(makePod("running").Req("cpu=4").Ungated().Pod())
	q.UpsertPod(member("g-0", "g", 2, 1).Pod())
	q.UpsertPod(member("g-1", "g", 2, 1).Pod())
	q.UpsertPod(makePod("p").Created(2).Req("cpu=2").Pod())
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v with no room", got)
	}
	q.DeletePod("running")
	if diff := cmp.Diff([]string{"g-0", "g-1", "p"}, admitNames(q)); diff != "" {
		t.Errorf("admitted (-want +got):\n%s", diff)
	}
}
