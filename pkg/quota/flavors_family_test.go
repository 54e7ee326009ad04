package quota

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Flavors in a borrowing family and under preemption: borrowing, lending, fair sharing,
// reclaim and fungibility's whenCanBorrow and whenCanPreempt, per flavor.

// TestFlavorsInABorrowingFamily: borrowing and lending work per flavor.
func TestFlavorsInABorrowingFamily(t *testing.T) {
	q := flavorQueue(t, h100, a100)
	q.UpsertBudget(makeBudget("", "org").flavor("h100", "nvidia.com/gpu=4", "").flavor("a100", "nvidia.com/gpu=2", "").Obj())
	q.UpsertBudget(makeBudget("team-a", "a").Parent("org").flavor("h100", "nvidia.com/gpu=2", "nvidia.com/gpu=2").flavor("a100", "nvidia.com/gpu=1", "").Obj())
	q.UpsertBudget(makeBudget("team-b", "b").Parent("org").flavor("h100", "nvidia.com/gpu=2", "").flavor("a100", "nvidia.com/gpu=1", "").Obj())
	for i := range 5 {
		q.UpsertPod(makePod("a" + string(rune('0'+i))).Created(i).Req("nvidia.com/gpu=1").Pod())
	}
	got := admitFlavors(q)
	want := []string{"a0@h100", "a1@h100", "a2@h100", "a3@h100", "a4@a100"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("team-a borrows team-b's unused h100, not its a100 (-want +got):\n%s", diff)
	}
	st := mustStatus(t, q, BudgetKey{Namespace: "team-a", Name: "a"})
	if len(st.Flavors) != 2 || st.Flavors[0].Borrowed.Name("requests.nvidia.com/gpu", resource.DecimalSI).Value() != 2 || st.Flavors[1].Borrowed != nil {
		t.Errorf("team-a's flavors: %+v, want 2 borrowed on h100 and nothing on a100", st.Flavors)
	}
	if _, flavored := st.Hard["requests.nvidia.com/gpu@h100"]; flavored || len(st.Hard) != 0 {
		t.Errorf("status hard %v carries flavored names; they belong in flavors", st.Hard)
	}
	q.UpsertPod(makePod("b0").NS("team-b").Created(9).Req("nvidia.com/gpu=1").Pod())
	if diff := cmp.Diff([]string{"b0@a100"}, admitFlavors(q)); diff != "" {
		t.Errorf("team-b's h100 is lent out; it takes its a100 (-want +got):\n%s", diff)
	}
}

func TestAvoidBorrowingTriesTheNextFlavorFirst(t *testing.T) {
	q := flavorQueue(t, h100, a100)
	q.UpsertBudget(makeBudget("", "org").flavor("h100", "nvidia.com/gpu=2", "").flavor("a100", "nvidia.com/gpu=2", "").Obj())
	a := makeBudget("team-a", "a").Parent("org").flavor("h100", "nvidia.com/gpu=0", "nvidia.com/gpu=2").flavor("a100", "nvidia.com/gpu=1", "").Obj()
	a.Fungibility.AvoidBorrowing = true
	q.UpsertBudget(a)
	q.UpsertBudget(makeBudget("team-b", "b").Parent("org").flavor("h100", "nvidia.com/gpu=2", "").flavor("a100", "nvidia.com/gpu=1", "").Obj())
	for i := range 3 {
		q.UpsertPod(makePod("a" + string(rune('0'+i))).Created(i).Req("nvidia.com/gpu=1").Pod())
	}
	want := []string{"a0@a100", "a1@h100", "a2@h100"}
	if diff := cmp.Diff(want, admitFlavors(q)); diff != "" {
		t.Errorf("own a100 first, then borrowed h100 (-want +got):\n%s", diff)
	}
}

// TestPreemptionOnAFlavor: a pod of higher priority that may go only on h100 preempts a
// lower one on h100, never the one on a100, which would not make room for it.
func TestPreemptionOnAFlavor(t *testing.T) {
	q, clk := newTestQueue(victimsAtOnce)
	q.UpsertFlavor(h100)
	q.UpsertFlavor(a100)
	q.UpsertBudget(makeBudget("team-a", "gpus").PreemptLowerPriority().flavor("h100", "nvidia.com/gpu=1", "").flavor("a100", "nvidia.com/gpu=1", "").Obj())
	for i, n := range []string{"low-h", "low-a"} {
		q.UpsertPod(makePod(n).Created(i).Priority(1).Req("nvidia.com/gpu=1").Pod())
		admitFlavors(q)
		clk.Step(1e9)
	}
	q.UpsertPod(withSelector(makePod("urgent").Created(10).Priority(10).Req("nvidia.com/gpu=1").Pod(), map[string]string{"gpu": "h100"}))
	if got := admitFlavors(q); len(got) != 0 {
		t.Fatalf("admitted %v onto a full h100", got)
	}
	if diff := cmp.Diff([]string{"low-h"}, victimNames(t, q)); diff != "" {
		t.Errorf("victims (-want +got):\n%s", diff)
	}
}

// TestWhenCanPreempt: a pod of higher priority, with h100 full of a lower one and room
// on a100, takes a100 by default and preempts on h100 under whenCanPreempt: Preempt;
// with both full, it preempts on the first flavor where that makes room (a100 here,
// where the pod of lower priority runs), unless it waits for its preferred one.
func TestWhenCanPreempt(t *testing.T) {
	for name, tc := range map[string]struct {
		fung     Fungibility
		running  []string // "name/priority", admitted in order: h100 first, then a100
		admitted []string
		victims  []string
	}{
		"room on a100: taken by default": {
			running:  []string{"low/1"},
			admitted: []string{"urgent@a100"},
		},
		"room on a100: Preempt stops at h100 and preempts there": {
			fung:    Fungibility{StopToPreempt: true},
			running: []string{"low/1"},
			victims: []string{"low"},
		},
		"room on a100, but h100 holds only higher priorities: Preempt moves on": {
			fung:     Fungibility{StopToPreempt: true},
			running:  []string{"high/20"},
			admitted: []string{"urgent@a100"},
		},
		"both full: preempts where that makes room, a100": {
			running: []string{"high/20", "low/1"},
			victims: []string{"low"},
		},
		"both full, Preempt: the same": {
			fung:    Fungibility{StopToPreempt: true},
			running: []string{"high/20", "low/1"},
			victims: []string{"low"},
		},
		"both full, WaitForPreferred: only h100, where nobody may be preempted": {
			fung:    Fungibility{WaitForPreferred: true},
			running: []string{"high/20", "low/1"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			q, clk := newTestQueue(victimsAtOnce)
			q.UpsertFlavor(h100)
			q.UpsertFlavor(a100)
			b := makeBudget("team-a", "gpus").PreemptLowerPriority().flavor("h100", "nvidia.com/gpu=1", "").flavor("a100", "nvidia.com/gpu=1", "").Obj()
			q.UpsertBudget(b)
			for i, r := range tc.running {
				n, prio, _ := strings.Cut(r, "/")
				p, _ := strconv.Atoi(prio)
				q.UpsertPod(makePod(n).Created(i).Priority(int32(p)).Req("nvidia.com/gpu=1").Pod())
				if got := admitFlavors(q); len(got) != 1 {
					t.Fatalf("%s: admitted %v", n, got)
				}
				clk.Step(1e9)
			}
			b.Fungibility = tc.fung
			q.UpsertBudget(b)
			q.UpsertPod(makePod("urgent").Created(10).Priority(10).Req("nvidia.com/gpu=1").Pod())
			if diff := cmp.Diff(tc.admitted, admitFlavors(q)); diff != "" {
				t.Errorf("admitted (-want +got):\n%s", diff)
			}
			victims := victimNames(t, q)
			if diff := cmp.Diff(tc.victims, victims); diff != "" {
				t.Fatalf("victims (-want +got):\n%s", diff)
			}
			for _, v := range victims {
				q.DeletePod(makePod(v).Pod().UID)
			}
			if len(victims) > 0 {
				// The victim's flavor is the one freed: the pod goes there.
				want := "urgent@a100"
				if tc.running[0] == "low/1" {
					want = "urgent@h100"
				}
				if diff := cmp.Diff([]string{want}, admitFlavors(q)); diff != "" {
					t.Errorf("once the victim is gone (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestWhenCanPreemptReclaims: in a family, team-b's h100 is lent to team-a. A pod of
// team-b takes its a100 by default, and reclaims its h100 under whenCanPreempt:
// Preempt.
func TestWhenCanPreemptReclaims(t *testing.T) {
	for name, tc := range map[string]struct {
		fung     Fungibility
		admitted []string
		victims  []string
	}{
		"default: its own free a100":        {admitted: []string{"b0@a100"}},
		"Preempt: takes its lent h100 back": {fung: Fungibility{StopToPreempt: true}, victims: []string{"a3"}},
	} {
		t.Run(name, func(t *testing.T) {
			q, clk := newTestQueue(victimsAtOnce)
			q.UpsertFlavor(h100)
			q.UpsertFlavor(a100)
			q.UpsertBudget(makeBudget("", "org").flavor("h100", "nvidia.com/gpu=4", "").flavor("a100", "nvidia.com/gpu=2", "").Obj())
			q.UpsertBudget(makeBudget("team-a", "a").Parent("org").flavor("h100", "nvidia.com/gpu=2", "nvidia.com/gpu=2").flavor("a100", "nvidia.com/gpu=1", "").Obj())
			b := makeBudget("team-b", "b").Parent("org").flavor("h100", "nvidia.com/gpu=2", "").flavor("a100", "nvidia.com/gpu=1", "").Obj()
			b.Fungibility = tc.fung
			q.UpsertBudget(b)
			for i := range 4 {
				q.UpsertPod(makePod("a" + strconv.Itoa(i)).Created(i).Req("nvidia.com/gpu=1").Pod())
				admitFlavors(q)
				clk.Step(1e9)
			}
			q.UpsertPod(makePod("b0").NS("team-b").Created(9).Req("nvidia.com/gpu=1").Pod())
			if diff := cmp.Diff(tc.admitted, admitFlavors(q)); diff != "" {
				t.Errorf("admitted (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.victims, victimNames(t, q)); diff != "" {
				t.Errorf("victims (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFairSharingOnAFlavor: fair sharing works per flavor as per resource. Two budgets
// borrow h100 GPUs under one parent, with room left for one more: team-a borrows 4
// already, team-b nothing, so team-b's pod goes first although team-a's is ahead in
// admission order, unless team-a's weight says otherwise. A head that goes on another
// flavor does not compete.
func TestFairSharingOnAFlavor(t *testing.T) {
	for name, tc := range map[string]struct {
		weightA  string
		ySelects map[string]string
		admitted []string
	}{
		// The other borrows a100 then: its next flavor, with room.
		"the smaller share on h100 goes first":               {admitted: []string{"y@h100", "x@a100"}},
		"a weight of 8 lets team-a go":                       {weightA: "8", admitted: []string{"x@h100", "y@a100"}},
		"team-b's head goes on a100: no competition on h100": {ySelects: a100.NodeLabels, admitted: []string{"x@h100", "y@a100"}},
	} {
		t.Run(name, func(t *testing.T) {
			q := flavorQueue(t, h100, a100)
			q.UpsertBudget(makeBudget("", "org").flavor("h100", "nvidia.com/gpu=100", "").flavor("a100", "nvidia.com/gpu=100", "").Obj())
			a := makeBudget("team-a", "a").Parent("org").flavor("h100", "nvidia.com/gpu=2", "nvidia.com/gpu=10").flavor("a100", "nvidia.com/gpu=0", "nvidia.com/gpu=10")
			if tc.weightA != "" {
				a.Weight(tc.weightA)
			}
			q.UpsertBudget(a.Obj())
			q.UpsertBudget(makeBudget("team-b", "b").Parent("org").flavor("h100", "nvidia.com/gpu=2", "nvidia.com/gpu=10").flavor("a100", "nvidia.com/gpu=0", "nvidia.com/gpu=10").Obj())
			// Idle: lends 5 on h100 and 5 on a100.
			q.UpsertBudget(makeBudget("team-c", "c").Parent("org").flavor("h100", "nvidia.com/gpu=5", "").flavor("a100", "nvidia.com/gpu=5", "").Obj())
			q.UpsertPod(makePod("a-run").NS("team-a").Req("nvidia.com/gpu=6").Pod())
			q.UpsertPod(makePod("b-run").NS("team-b").Req("nvidia.com/gpu=2").Pod())
			if got := admitFlavors(q); len(got) != 2 {
				t.Fatalf("admitted %v, want a-run and b-run", got)
			}
			q.UpsertPod(makePod("x").NS("team-a").Created(1).Priority(10).Req("nvidia.com/gpu=1").Pod())
			q.UpsertPod(withSelector(makePod("y").NS("team-b").Created(2).Req("nvidia.com/gpu=1").Pod(), tc.ySelects))
			if diff := cmp.Diff(tc.admitted, admitFlavors(q)); diff != "" {
				t.Errorf("admitted (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReclaimOnAFlavorHoldsWhatItFrees: team-b takes back the h100 GPU it lent to
// team-a; once the victim ends, the GPU goes to team-b's pod, not to team-a's next pod,
// which was created earlier but would borrow it again (the claim is on the flavor).
func TestReclaimOnAFlavorHoldsWhatItFrees(t *testing.T) {
	q, clk := newTestQueue(victimsAtOnce)
	q.UpsertFlavor(h100)
	q.UpsertBudget(makeBudget("", "org").flavor("h100", "nvidia.com/gpu=4", "").Obj())
	q.UpsertBudget(makeBudget("team-a", "a").Parent("org").flavor("h100", "nvidia.com/gpu=2", "nvidia.com/gpu=2").Obj())
	q.UpsertBudget(makeBudget("team-b", "b").Parent("org").flavor("h100", "nvidia.com/gpu=2", "").Obj())
	for i := range 4 {
		q.UpsertPod(makePod("a" + strconv.Itoa(i)).Created(i).Req("nvidia.com/gpu=1").Pod())
		admitFlavors(q)
		clk.Step(1e9)
	}
	q.UpsertPod(makePod("a4").Created(10).Req("nvidia.com/gpu=1").Pod())
	q.UpsertPod(makePod("b0").NS("team-b").Created(11).Req("nvidia.com/gpu=1").Pod())
	if got := admitFlavors(q); len(got) != 0 {
		t.Fatalf("admitted %v into a full family", got)
	}
	victims := victimNames(t, q)
	if diff := cmp.Diff([]string{"a3"}, victims); diff != "" {
		t.Fatalf("victims (-want +got):\n%s", diff)
	}
	q.DeletePod(makePod("a3").Pod().UID)
	if diff := cmp.Diff([]string{"b0@h100"}, admitFlavors(q)); diff != "" {
		t.Errorf("once the victim ends (-want +got):\n%s", diff)
	}
}
