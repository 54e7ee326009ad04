package quota

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// overHardWorld is Budget team-a/b of hard cpu=6 running pods of 1 CPU each, admitted in
// order, one second apart, with the priorities given.
func overHardWorld(t *testing.T, priorities ...int32) *AdmissionQueue {
	t.Helper()
	q, clk := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=6").Obj())
	for i, prio := range priorities {
		q.UpsertPod(makePod("p" + string(rune('0'+i))).NS("team-a").Created(i).Priority(prio).Req("cpu=1").Pod())
		if got := admitNames(q); len(got) != 1 {
			t.Fatalf("p%d: admitted %v", i, got)
		}
		clk.Step(1e9)
	}
	return q
}

// windowEndVictims returns the victims decided since the last call, sorted, and checks
// each is a window end's, with its message, and still needed.
func windowEndVictims(t *testing.T, q *AdmissionQueue) []string {
	t.Helper()
	var out []string
	for _, p := range q.Preemptions() {
		if p.Reason != PreemptWindowEnd || p.Preemptor.Name != "" || !strings.HasPrefix(p.VictimMessage, "window night") || !strings.Contains(p.VictimMessage, "ended with endPolicy Reclaim") {
			t.Errorf("preemption of %s is not a window end's: %+v", p.Victim.Name, p)
		}
		if !q.PreemptionNeeded(p.Victim.UID) {
			t.Errorf("%s was just chosen, but is not needed", p.Victim.Name)
		}
		out = append(out, p.Victim.Name)
	}
	slices.Sort(out)
	return out
}

// TestWindowEndReclaimsBackToHard: after a window with endPolicy Reclaim ends, the
// budget evicts its running pods, lowest priority first and then the most recently
// admitted, until used is within hard; nothing more is evicted once they go.
func TestWindowEndReclaimsBackToHard(t *testing.T) {
	q := overHardWorld(t, 5, 0, 5, 0, 5, 5)
	// The window ends: hard back to 3, named by the window that ended.
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=3").ReclaimAfter("night").Obj())
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v over hard", got)
	}
	// Priority 0 (p1, p3), then of priority 5 the most recently admitted (p5).
	if diff := cmp.Diff([]string{"p1", "p3", "p5"}, windowEndVictims(t, q)); diff != "" {
		t.Fatalf("victims (-want +got):\n%s", diff)
	}
	key := BudgetKey{Namespace: "team-a", Name: "b"}
	if st, _ := q.Reader().Status(key); st.ReclaimingAfter != "night" {
		t.Errorf("while it reclaims, the status names window %q, want night", st.ReclaimingAfter)
	}
	// Asked again before they end, nobody more.
	admitNames(q)
	if got := windowEndVictims(t, q); len(got) != 0 {
		t.Errorf("a second pass chose %v", got)
	}
	for _, v := range []string{"p1", "p3", "p5"} {
		uid := makePod(v).NS("team-a").Pod().UID
		q.Evicted(uid)
		q.DeletePod(uid)
	}
	q.DirtyStatuses()
	admitNames(q)
	if got := windowEndVictims(t, q); len(got) != 0 {
		t.Errorf("within hard, chose %v", got)
	}
	if st, _ := q.Reader().Status(key); st.ReclaimingAfter != "" {
		t.Errorf("within hard, the status still names window %q", st.ReclaimingAfter)
	}
	if dirty := q.DirtyStatuses(); !slices.Contains(dirty, key) {
		t.Errorf("the reclaim ended, but the budget's status is not to be written: %v", dirty)
	}
	// The reclaim is done: a hard lowered by hand later evicts nothing, though the
	// spec still names the window.
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=1").ReclaimAfter("night").Obj())
	admitNames(q)
	if got := windowEndVictims(t, q); len(got) != 0 {
		t.Errorf("a hard lowered after the reclaim was done evicted %v", got)
	}
}

// TestWindowEndHoldEvictsNothing: the same end without Reclaim (Hold) keeps every pod.
func TestWindowEndHoldEvictsNothing(t *testing.T) {
	q := overHardWorld(t, 0, 0, 0, 0)
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=2").Obj())
	admitNames(q)
	if got := q.Preemptions(); len(got) != 0 {
		t.Errorf("Hold evicted %v", got)
	}
}

// TestWindowEndReclaimBlockedByPDB: a victim whose eviction a PodDisruptionBudget
// refuses ranks last: another pod goes in its place; with none left, it is tried again.
func TestWindowEndReclaimBlockedByPDB(t *testing.T) {
	q := overHardWorld(t, 0, 0, 0)
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=2").ReclaimAfter("night").Obj())
	admitNames(q)
	if diff := cmp.Diff([]string{"p2"}, windowEndVictims(t, q)); diff != "" {
		t.Fatalf("victims (-want +got):\n%s", diff)
	}
	if retry, _ := q.EvictionBlocked(makePod("p2").NS("team-a").Pod().UID); retry {
		t.Error("p2 is to be tried again though p1 may go instead")
	}
	if diff := cmp.Diff([]string{"p1"}, windowEndVictims(t, q)); diff != "" {
		t.Fatalf("victims after p2 refused (-want +got):\n%s", diff)
	}
	if retry, _ := q.EvictionBlocked(makePod("p1").NS("team-a").Pod().UID); retry {
		t.Error("p1 is to be tried again though p0 may go instead")
	}
	if diff := cmp.Diff([]string{"p0"}, windowEndVictims(t, q)); diff != "" {
		t.Fatalf("victims after p1 refused (-want +got):\n%s", diff)
	}
	// All three refused: the most recently admitted of them is tried again.
	if retry, _ := q.EvictionBlocked(makePod("p0").NS("team-a").Pod().UID); retry {
		t.Error("p0 is to be tried again though a refused pod admitted later may go instead")
	}
	if diff := cmp.Diff([]string{"p2"}, windowEndVictims(t, q)); diff != "" {
		t.Fatalf("victims after all refused (-want +got):\n%s", diff)
	}
}

// TestWindowEndReclaimStopsWhenAWindowOpens: a window that opens again (the spec names
// no window that ended, and hard is raised) makes the victims not needed.
func TestWindowEndReclaimStopsWhenAWindowOpens(t *testing.T) {
	q := overHardWorld(t, 0, 0, 0, 0)
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=2").ReclaimAfter("night").Obj())
	admitNames(q)
	if diff := cmp.Diff([]string{"p2", "p3"}, windowEndVictims(t, q)); diff != "" {
		t.Fatalf("victims (-want +got):\n%s", diff)
	}
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=4").Obj())
	for _, v := range []string{"p2", "p3"} {
		if q.PreemptionNeeded(makePod(v).NS("team-a").Pod().UID) {
			t.Errorf("%s is still to be evicted after the window opened again", v)
		}
	}
	// A budget deleted while it reclaims: nothing is needed either.
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=2").ReclaimAfter("night-2").Obj())
	admitNames(q)
	if got := windowEndVictims(t, q); len(got) != 2 {
		t.Fatalf("a second window's end chose %v, want two", got)
	}
	q.DeleteBudget(BudgetKey{Namespace: "team-a", Name: "b"})
	for _, v := range []string{"p2", "p3"} {
		if q.PreemptionNeeded(makePod(v).NS("team-a").Pod().UID) {
			t.Errorf("%s is still to be evicted after its budget was deleted", v)
		}
	}
}
