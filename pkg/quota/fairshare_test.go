package quota

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Two budgets borrow under one parent, with room left for one more pod: team-a already
// borrows 4, team-b nothing. team-a's pod is ahead in admission order (priority 10),
// but fair sharing lets team-b, whose borrowing would be the smaller share, go first,
// unless the weights say otherwise.
func TestFairSharing(t *testing.T) {
	for name, tc := range map[string]struct {
		weightA, weightB string
		admitted         string
		waits            ReasonCode // why the other one waits
	}{
		"the smaller share goes first, whatever the priorities": {admitted: "y", waits: CodeNoLendable},
		"a weight of 4 is not enough for team-a":                {weightA: "4", admitted: "y", waits: CodeNoLendable},
		"a weight of 8 is":                                      {weightA: "8", admitted: "x", waits: CodeNoLendable},
		"weight 0 borrows only what nobody else waits for":      {weightA: "8", weightB: "0", admitted: "x", waits: CodeNoLendable},
		"weight 0 on both: admission order":                     {weightA: "0", weightB: "0", admitted: "x", waits: CodeNoLendable},
		"a negative weight (past an older CRD) counts as 0":     {weightB: "-1", admitted: "x", waits: CodeNoLendable},
	} {
		t.Run(name, func(t *testing.T) {
			q, _ := newTestQueue()
			q.UpsertBudget(makeBudget("", "org").Hard("cpu=100").Obj())
			a := makeBudget("team-a", "a").Hard("cpu=2").Borrow("cpu=10").Parent("org")
			b := makeBudget("team-b", "b").Hard("cpu=2").Borrow("cpu=10").Parent("org")
			if tc.weightA != "" {
				a.Weight(tc.weightA)
			}
			if tc.weightB != "" {
				b.Weight(tc.weightB)
			}
			q.UpsertBudget(a.Obj())
			q.UpsertBudget(b.Obj())
			q.UpsertBudget(makeBudget("team-c", "c").Hard("cpu=5").Parent("org").Obj()) // idle: lends 5
			q.UpsertPod(makePod("a-run").NS("team-a").Req("cpu=6").Pod())
			q.UpsertPod(makePod("b-run").NS("team-b").Req("cpu=2").Pod())
			if got := admitNames(q); len(got) != 2 {
				t.Fatalf("admitted %v, want a-run and b-run", got)
			}
			// The family lends 9 and uses 8 beyond what its members keep: room for one.
			q.UpsertPod(makePod("x").NS("team-a").Created(1).Priority(10).Req("cpu=1").Pod())
			q.UpsertPod(makePod("y").NS("team-b").Created(2).Req("cpu=1").Pod())
			if diff := cmp.Diff([]string{tc.admitted}, admitNames(q)); diff != "" {
				t.Errorf("admitted (-want +got):\n%s", diff)
			}
			other := "x"
			if tc.admitted == "x" {
				other = "y"
			}
			uid := makePod(other).Pod().UID
			if code, _ := q.Reader().WaitCode(uid); code != tc.waits {
				r, _ := q.Reader().WaitReason(uid)
				t.Errorf("%s waits with %s (%s), want %s", other, code, r.Message, tc.waits)
			}
		})
	}
}

// A pod that yields names the pod it yields to, and is admitted once that pod is
// decided, when room is left.
func TestFairSharingYieldsThenGoes(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("", "org").Hard("cpu=100").Obj())
	q.UpsertBudget(makeBudget("team-a", "a").Hard("cpu=2").Borrow("cpu=10").Parent("org").Obj())
	q.UpsertBudget(makeBudget("team-b", "b").Hard("cpu=2").Borrow("cpu=10").Parent("org").Obj())
	q.UpsertBudget(makeBudget("team-c", "c").Hard("cpu=6").Parent("org").Obj())
	q.UpsertPod(makePod("a-run").NS("team-a").Req("cpu=6").Pod())
	q.UpsertPod(makePod("b-run").NS("team-b").Req("cpu=2").Pod())
	admitNames(q)
	// Room for two now: both go, team-b's first.
	q.UpsertPod(makePod("x").NS("team-a").Created(1).Priority(10).Req("cpu=1").Pod())
	q.UpsertPod(makePod("y").NS("team-b").Created(2).Req("cpu=1").Pod())
	if diff := cmp.Diff([]string{"y", "x"}, admitNames(q)); diff != "" {
		t.Errorf("admitted (-want +got):\n%s", diff)
	}
}
