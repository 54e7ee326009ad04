package quota

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// Fair sharing with memory (docs/budgets.md, "Fair sharing with memory"): team-a ran
// 6 CPUs, 4 of them borrowed, all night; in the morning team-a and team-b each run 4
// and want one more CPU, and the family has room for one. Their current shares are
// equal, so without memory admission order lets team-a's x go first; with a parent's
// usageHalfLife of 8h, team-a's night counts and team-b's y goes first.
func TestFairSharingWithMemory(t *testing.T) {
	for _, tc := range []struct {
		halfLife time.Duration
		admitted string
	}{{0, "x"}, {8 * time.Hour, "y"}} {
		t.Run(tc.halfLife.String(), func(t *testing.T) {
			q, clk := newTestQueue()
			org := makeBudget("", "org").Hard("cpu=100").Obj()
			org.UsageHalfLife = tc.halfLife
			q.UpsertBudget(org)
			q.UpsertBudget(makeBudget("team-a", "a").Hard("cpu=2").Borrow("cpu=10").Parent("org").Obj())
			q.UpsertBudget(makeBudget("team-b", "b").Hard("cpu=2").Borrow("cpu=10").Parent("org").Obj())
			q.UpsertBudget(makeBudget("team-c", "c").Hard("cpu=5").Parent("org").Obj()) // idle: lends 5
			q.UpsertPod(makePod("night").NS("team-a").Req("cpu=6").Pod())
			if got := admitNames(q); len(got) != 1 {
				t.Fatalf("admitted %v at night, want night", got)
			}
			clk.Step(8 * time.Hour)
			q.UpsertPod(makePod("night").NS("team-a").Req("cpu=6").Ungated().Phase(corev1.PodSucceeded).Pod())
			q.UpsertPod(makePod("a-run").NS("team-a").Created(10).Req("cpu=4").Pod())
			q.UpsertPod(makePod("b-run").NS("team-b").Created(11).Req("cpu=4").Pod())
			if got := admitNames(q); len(got) != 2 {
				t.Fatalf("admitted %v in the morning, want a-run and b-run", got)
			}
			// The family lends 9 and uses 8 beyond what its members keep: room for one.
			q.UpsertPod(makePod("x").NS("team-a").Created(20).Req("cpu=1").Pod())
			q.UpsertPod(makePod("y").NS("team-b").Created(21).Req("cpu=1").Pod())
			if diff := cmp.Diff([]string{tc.admitted}, admitNames(q)); diff != "" {
				t.Errorf("admitted (-want +got):\n%s", diff)
			}
		})
	}
}
