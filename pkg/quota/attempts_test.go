package quota

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/types"
)

// TestUncertainUngate: what an ungate attempt's outcome, and the views of the pod that
// follow it, do to the reservation. The budget holds 2 CPU; p1 and p2 want 2 each, so
// p2 may be admitted only once p1's charge is proven free.
func TestUncertainUngate(t *testing.T) {
	type step struct {
		done   *Result // report this outcome for p1, fenced on resourceVersion 10
		view   *podBuilder
		delete bool
	}
	unknown, ungated, gone := Unknown, Ungated, Gone
	p1 := func() *podBuilder { return makePod("p1").Created(1).Req("cpu=2") }
	tests := map[string]struct {
		steps     []step
		wantAdmit []string // admitted after the steps (p1's retry counts)
		wantUsed  string
	}{
		"ungated keeps the charge": {
			steps:    []step{{done: &ungated}},
			wantUsed: "requests.cpu=2",
		},
		"unknown keeps the charge": {
			// The chain: the patch applied, its response was lost.
			steps:    []step{{done: &unknown}},
			wantUsed: "requests.cpu=2",
		},
		"unknown, then seen ungated: charged once": {
			steps:    []step{{done: &unknown}, {view: p1().RV(11).Ungated()}},
			wantUsed: "requests.cpu=2",
		},
		"unknown, then seen gated at the attempt's version: proves nothing": {
			steps:    []step{{done: &unknown}, {view: p1().RV(10).Label("x", "y")}},
			wantUsed: "requests.cpu=2",
		},
		"unknown, then seen gated at a newer version: given back": {
			steps:     []step{{done: &unknown}, {view: p1().RV(11)}},
			wantAdmit: []string{"p2"},
			wantUsed:  "requests.cpu=2",
		},
		"seen gated at a newer version before the outcome: given back when it comes": {
			steps:     []step{{view: p1().RV(11)}, {done: &unknown}},
			wantAdmit: []string{"p2"},
			wantUsed:  "requests.cpu=2",
		},
		"seen ungated before the outcome: an unknown outcome changes nothing": {
			steps:    []step{{view: p1().RV(11).Ungated()}, {done: &unknown}},
			wantUsed: "requests.cpu=2",
		},
		"a view older than the core's is ignored": {
			steps: []step{
				{done: &unknown},
				{view: p1().RV(12).Ungated()},
				{view: p1().RV(11)}, // the informer's late event, after a fresh read
			},
			wantUsed: "requests.cpu=2",
		},
		"unresolved and deleted: the charge goes": {
			steps:     []step{{done: &unknown}, {delete: true}},
			wantAdmit: []string{"p2"},
			wantUsed:  "requests.cpu=2",
		},
		"gone forgets the pod": {
			steps:     []step{{done: &gone}},
			wantAdmit: []string{"p2"},
			wantUsed:  "requests.cpu=2",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			q, _ := newTestQueue()
			key := BudgetKey{Namespace: "team-a", Name: "b"}
			q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=2").Obj())
			q.UpsertPod(p1().RV(10).Pod())
			q.UpsertPod(makePod("p2").Created(2).Req("cpu=2").RV(20).Pod())
			if diff := cmp.Diff([]string{"p1"}, names(q.Admit())); diff != "" {
				t.Fatalf("first Admit (-want +got):\n%s", diff)
			}
			for _, s := range tc.steps {
				switch {
				case s.done != nil:
					q.Done("p1", *s.done, "10")
				case s.delete:
					q.DeletePod("p1")
				default:
					q.UpsertPod(s.view.Pod())
				}
			}
			// Nothing is due by the clock: only proof may free p1's charge.
			if diff := cmp.Diff(tc.wantAdmit, admitNames(q)); diff != "" {
				t.Errorf("admitted (-want +got):\n%s", diff)
			}
			st := mustStatus(t, q, key)
			if diff := listDiff(parseList(tc.wantUsed), st.Used); diff != "" {
				t.Errorf("used (-want +got):\n%s", diff)
			}
			if err := q.checkInvariants(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestUnresolvedUngateIsRetried: an admission whose outcome is unknown is handed out
// again after its backoff, still charged, until an attempt is known to have applied.
func TestUnresolvedUngateIsRetried(t *testing.T) {
	q, clk := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=2").Obj())
	q.UpsertPod(makePod("p1").Created(1).Req("cpu=2").RV(10).Pod())
	q.UpsertPod(makePod("p2").Created(2).Req("cpu=2").RV(20).Pod())
	first := q.Admit()
	q.Done("p1", Unknown, "10")
	clk.Step(DefaultInitialBackoff)
	retry := q.Admit()
	if diff := cmp.Diff(first, retry, cmpopts.IgnoreUnexported(Admission{})); diff != "" {
		t.Fatalf("the retry differs from the admission (-first +retry):\n%s", diff)
	}
	// The retry finds the pod moved on without the gate: the first attempt applied.
	q.Done("p1", Ungated, "")
	clk.Step(DefaultMaxBackoff)
	if got := admitNames(q); len(got) != 0 {
		t.Errorf("admitted %v into p1's charge", got)
	}
}

// TestRelabelKeepsCharge: relabelling a running pod out of the budget that admitted it
// does not free its charge there, and relabelling it into another budget's selector
// does not charge that one: its charge is fixed when it is admitted (a tenant who could
// move a running pod's charge could push another budget over its hard).
func TestRelabelKeepsCharge(t *testing.T) {
	q, _ := newTestQueue()
	web := BudgetKey{Namespace: "team-a", Name: "web"}
	batch := BudgetKey{Namespace: "team-a", Name: "batch"}
	q.UpsertBudget(makeBudget("team-a", "web").Hard("cpu=2").Selector("app", "web").Obj())
	q.UpsertBudget(makeBudget("team-a", "batch").Hard("cpu=4").Selector("app", "batch").Obj())
	q.UpsertPod(makePod("p1").Created(1).Req("cpu=2").Label("app", "web").Pod())
	q.UpsertPod(makePod("p2").Created(2).Req("cpu=2").Label("app", "web").Pod())
	if diff := cmp.Diff([]string{"p1"}, admitNames(q)); diff != "" {
		t.Fatalf("admitted (-want +got):\n%s", diff)
	}
	q.UpsertPod(makePod("p1").Created(1).Req("cpu=2").Label("app", "batch").Ungated().Pod())
	if got := admitNames(q); len(got) != 0 {
		t.Errorf("admitted %v after p1 left the web selector while running", got)
	}
	for key, want := range map[BudgetKey]string{web: "requests.cpu=2", batch: "requests.cpu=0"} {
		if diff := listDiff(parseList(want), mustStatus(t, q, key).Used); diff != "" {
			t.Errorf("%s used (-want +got):\n%s", key.Describe(), diff)
		}
	}
	// A budget created afterwards that its admission labels put it in counts it (as a
	// new ResourceQuota counts the pods that run); one its new labels put it in does not.
	q.UpsertBudget(makeBudget("team-a", "all-web").Hard("cpu=8").Selector("app", "web").Obj())
	q.UpsertBudget(makeBudget("team-a", "all-batch").Hard("cpu=8").Selector("app", "batch").Obj())
	for key, want := range map[BudgetKey]string{{Namespace: "team-a", Name: "all-web"}: "requests.cpu=2", {Namespace: "team-a", Name: "all-batch"}: "requests.cpu=0"} {
		if diff := listDiff(parseList(want), mustStatus(t, q, key).Used); diff != "" {
			t.Errorf("%s used (-want +got):\n%s", key.Describe(), diff)
		}
	}
	// When p1 ends, its charge goes and p2 is admitted.
	q.DeletePod("p1")
	if diff := cmp.Diff([]string{"p2"}, admitNames(q)); diff != "" {
		t.Errorf("after p1 ended (-want +got):\n%s", diff)
	}
}

// TestPinsAreNotReadFromThePod: the budgets a running pod stays charged to are the
// core's own record. A pod that names another team's budget in its admitted-by
// annotation charges nothing there.
func TestPinsAreNotReadFromThePod(t *testing.T) {
	q, _ := newTestQueue()
	other := BudgetKey{Namespace: "team-b", Name: "b"}
	q.UpsertBudget(makeBudget("team-b", "b").Hard("cpu=2").Obj())
	forged := makePod("p").Req("cpu=2").Ungated().AdmittedBy("team-b/b")
	q.UpsertPod(forged.Pod())
	q.UpsertPod(makePod("p").Req("cpu=2").Ungated().Label("x", "y").Pod())
	if diff := listDiff(parseList("requests.cpu=0"), mustStatus(t, q, other).Used); diff != "" {
		t.Errorf("%s used (-want +got):\n%s", other.Describe(), diff)
	}
}

// TestStandbyForgetsDeletedPods: a replica that never admits (a standby) keeps nothing
// for pods that came and went, not even the ones it would admit without quota.
func TestStandbyForgetsDeletedPods(t *testing.T) {
	q, _ := newTestQueue()
	for i := range 100 {
		uid := "p" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		q.UpsertPod(makePod(uid).Pod()) // uncovered: to be admitted at the next Admit
		q.DeletePod(types.UID(uid))
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if n := len(q.admit.immediate) + len(q.pods.byUID) + len(q.pods.byNS); n != 0 {
		t.Errorf("%d entries left after every pod was deleted", n)
	}
}

func names(adm []Admission) []string {
	var out []string
	for _, a := range adm {
		out = append(out, a.Pod.Name)
	}
	return out
}
