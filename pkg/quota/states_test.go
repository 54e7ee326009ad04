package quota

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

type stateView struct {
	State   v1alpha1.BudgetState
	Reason  string
	Message string
}

func stateOf(t *testing.T, q *AdmissionQueue, key BudgetKey) stateView {
	t.Helper()
	st := mustStatus(t, q, key)
	return stateView{st.State, st.StateReason, st.StateMessage}
}

// TestStates walks a parent and a child through Volcano's state machine.
func TestStates(t *testing.T) {
	q, _ := newTestQueue()
	parent := BudgetKey{Name: "ml"}
	child := BudgetKey{Namespace: "team-a", Name: "a"}
	q.UpsertBudget(makeBudget("", "ml").Hard("cpu=10").Obj())
	q.UpsertBudget(makeBudget("team-a", "a").Hard("cpu=10").Parent("ml").Obj())
	q.UpsertPod(makePod("running").Req("cpu=1").Pod())
	if diff := cmp.Diff([]string{"running"}, admitNames(q)); diff != "" {
		t.Fatalf("admitted (-want +got):\n%s", diff)
	}

	steps := []struct {
		name       string
		do         func()
		wantParent stateView
		wantChild  stateView
		wantAdmit  []string
	}{
		{
			name:       "closing the child stops admissions; Closing while its pod runs",
			do:         func() { q.UpsertBudget(makeBudget("team-a", "a").Hard("cpu=10").Parent("ml").Closed().Obj()) },
			wantParent: stateView{v1alpha1.StateOpen, v1alpha1.ReasonActive, "admitting pods that fit"},
			wantChild:  stateView{v1alpha1.StateClosing, v1alpha1.ReasonClosed, "spec.state is Closed; 1 admitted pods still run"},
		},
		{
			name:       "a new pod waits",
			do:         func() { q.UpsertPod(makePod("new").Created(1).Req("cpu=1").Pod()) },
			wantParent: stateView{v1alpha1.StateOpen, v1alpha1.ReasonActive, "admitting pods that fit"},
			wantChild:  stateView{v1alpha1.StateClosing, v1alpha1.ReasonClosed, "spec.state is Closed; 1 admitted pods still run"},
		},
		{
			name:       "Closed once its pods end",
			do:         func() { q.DeletePod("running") },
			wantParent: stateView{v1alpha1.StateOpen, v1alpha1.ReasonActive, "admitting pods that fit"},
			wantChild:  stateView{v1alpha1.StateClosed, v1alpha1.ReasonClosed, "spec.state is Closed"},
		},
		{
			name: "closing the parent closes the reopened child",
			do: func() {
				q.UpsertBudget(makeBudget("", "ml").Hard("cpu=10").Closed().Obj())
				q.UpsertBudget(makeBudget("team-a", "a").Hard("cpu=10").Parent("ml").Obj())
			},
			wantParent: stateView{v1alpha1.StateClosed, v1alpha1.ReasonClosed, "spec.state is Closed"},
			wantChild:  stateView{v1alpha1.StateClosed, v1alpha1.ReasonClosedByParent, "ClusterBudget ml, an ancestor, admits nothing: its spec.state is Closed"},
		},
		{
			name:       "reopening the parent restores the child to its own Open state and admits",
			do:         func() { q.UpsertBudget(makeBudget("", "ml").Hard("cpu=10").Obj()) },
			wantParent: stateView{v1alpha1.StateOpen, v1alpha1.ReasonActive, "admitting pods that fit"},
			wantChild:  stateView{v1alpha1.StateOpen, v1alpha1.ReasonActive, "admitting pods that fit"},
			wantAdmit:  []string{"new"},
		},
	}
	for _, s := range steps {
		s.do()
		got := admitNames(q)
		if diff := cmp.Diff(s.wantAdmit, got); diff != "" {
			t.Errorf("%s: admitted (-want +got):\n%s", s.name, diff)
		}
		if diff := cmp.Diff(s.wantParent, stateOf(t, q, parent)); diff != "" {
			t.Errorf("%s: parent (-want +got):\n%s", s.name, diff)
		}
		if diff := cmp.Diff(s.wantChild, stateOf(t, q, child)); diff != "" {
			t.Errorf("%s: child (-want +got):\n%s", s.name, diff)
		}
	}
}

// TestParentUsageCoversSubtree: a parent's used is the sum of its children's pods.
func TestParentUsageCoversSubtree(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("", "org").Hard("cpu=100").Obj())
	q.UpsertBudget(makeBudget("", "ml").Hard("cpu=100").Parent("org").Obj())
	q.UpsertBudget(makeBudget("team-a", "a").Hard("cpu=100").Parent("ml").Obj())
	q.UpsertBudget(makeBudget("team-b", "b").Hard("cpu=100").Parent("org").Obj())
	q.UpsertPod(makePod("a").Req("cpu=1").Pod())
	q.UpsertPod(makePod("b").NS("team-b").Req("cpu=2").Pod())
	admitNames(q)
	for key, want := range map[BudgetKey]string{
		{Name: "org"}:                    "requests.cpu=3",
		{Name: "ml"}:                     "requests.cpu=1",
		{Namespace: "team-a", Name: "a"}: "requests.cpu=1",
		{Namespace: "team-b", Name: "b"}: "requests.cpu=2",
	} {
		if diff := listDiff(parseList(want), mustStatus(t, q, key).Used); diff != "" {
			t.Errorf("%v used (-want +got):\n%s", key, diff)
		}
	}
}

// TestBrokenBudgetsAdmitNothing: a missing parent, a missing Flavor, a cycle or an
// invalid spec holds the budget's pods and says why.
func TestBrokenBudgetsAdmitNothing(t *testing.T) {
	tests := map[string]struct {
		budgets     []Budget
		key         BudgetKey
		wantProblem *Problem
		wantWait    string
	}{
		"parent not found": {
			budgets:     []Budget{makeBudget("team-a", "a").Hard("cpu=1").Parent("nope").Obj()},
			key:         BudgetKey{Namespace: "team-a", Name: "a"},
			wantProblem: &Problem{Reason: v1alpha1.ReasonParentNotFound, Message: "parent ClusterBudget nope not found"},
			wantWait:    "Budget team-a/a cannot admit pods: parent ClusterBudget nope not found",
		},
		"flavors not found": {
			budgets:     []Budget{makeBudget("team-a", "a").flavor("h100", "cpu=4", "").flavor("a100", "cpu=4", "").Obj()},
			key:         BudgetKey{Namespace: "team-a", Name: "a"},
			wantProblem: &Problem{Reason: v1alpha1.ReasonFlavorNotFound, Message: "Flavors h100, a100 not found"},
			wantWait:    "Budget team-a/a cannot admit pods: Flavors h100, a100 not found",
		},
		"parent cycle": {
			budgets: []Budget{
				makeBudget("", "x").Hard("cpu=1").Parent("y").Obj(),
				makeBudget("", "y").Hard("cpu=1").Parent("x").Obj(),
				makeBudget("team-a", "a").Hard("cpu=1").Parent("x").Obj(),
			},
			key:         BudgetKey{Name: "x"},
			wantProblem: &Problem{Reason: v1alpha1.ReasonParentCycle, Message: "parent chain loops: x -> y -> x"},
			wantWait:    "ClusterBudget x cannot admit pods: parent chain loops: x -> y -> x (parent of Budget team-a/a)",
		},
		"invalid hard": {
			budgets:     []Budget{makeBudget("team-a", "a").Hard("cpu=1,services=2").Obj()},
			key:         BudgetKey{Namespace: "team-a", Name: "a"},
			wantProblem: &Problem{Reason: v1alpha1.ReasonInvalidSpec, Message: "unsupported resource names in hard: services (supported: cpu, memory, ephemeral-storage, their requests.* and limits.* forms, requests.hugepages-*, extended resources as requests.<name>, <class>.deviceclass.resource.k8s.io/devices, requests.deviceclass.resource.kubernetes.io/<class>, pods, count/pods)"},
			wantWait:    "Budget team-a/a cannot admit pods: unsupported resource names in hard: services (supported: cpu, memory, ephemeral-storage, their requests.* and limits.* forms, requests.hugepages-*, extended resources as requests.<name>, <class>.deviceclass.resource.k8s.io/devices, requests.deviceclass.resource.kubernetes.io/<class>, pods, count/pods)",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			q, _ := newTestQueue()
			for _, b := range tc.budgets {
				q.UpsertBudget(b)
			}
			q.UpsertPod(makePod("p").Req("cpu=1").Pod())
			if got := admitNames(q); len(got) != 0 {
				t.Errorf("admitted %v", got)
			}
			if diff := cmp.Diff(tc.wantProblem, mustStatus(t, q, tc.key).Problem); diff != "" {
				t.Errorf("problem (-want +got):\n%s", diff)
			}
			r, _ := q.Reader().WaitReason("p")
			if diff := cmp.Diff(Reason{Code: CodeBudgetClosed, Message: tc.wantWait}, r); diff != "" {
				t.Errorf("wait reason (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFixingParentAdmits: once the missing parent appears, the held pod goes.
func TestFixingParentAdmits(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "a").Hard("cpu=1").Parent("ml").Obj())
	q.UpsertPod(makePod("p").Req("cpu=1").Pod())
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v with the parent missing", got)
	}
	q.UpsertBudget(makeBudget("", "ml").Hard("cpu=1").Obj())
	if diff := cmp.Diff([]string{"p"}, admitNames(q)); diff != "" {
		t.Errorf("admitted (-want +got):\n%s", diff)
	}
	if diff := listDiff(parseList("requests.cpu=1"), mustStatus(t, q, BudgetKey{Name: "ml"}).Used); diff != "" {
		t.Errorf("parent used (-want +got):\n%s", diff)
	}
}

// TestCreatingFlavorAdmits: a budget naming a Flavor that does not exist admits once it
// is created, and stops again when it is deleted; a budget that names it with one that
// exists is closed all the same.
func TestCreatingFlavorAdmits(t *testing.T) {
	q, _ := newTestQueue()
	key := BudgetKey{Namespace: "team-a", Name: "a"}
	q.UpsertBudget(makeBudget("team-a", "a").flavor("a100", "cpu=1", "").flavor("h100", "cpu=1", "").Obj())
	q.UpsertFlavor(a100)
	q.UpsertPod(makePod("p1").Created(1).Req("cpu=1").Pod())
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v with Flavor h100 missing", got)
	}
	if diff := cmp.Diff(&Problem{Reason: v1alpha1.ReasonFlavorNotFound, Message: "Flavor h100 not found"}, mustStatus(t, q, key).Problem); diff != "" {
		t.Errorf("problem (-want +got):\n%s", diff)
	}
	q.UpsertFlavor(h100)
	if p := mustStatus(t, q, key).Problem; p != nil {
		t.Errorf("problem %+v once every Flavor exists, want none", *p)
	}
	if diff := cmp.Diff([]string{"p1"}, admitNames(q)); diff != "" {
		t.Errorf("admitted (-want +got):\n%s", diff)
	}
	q.DeleteFlavor("h100")
	q.UpsertPod(makePod("p2").Created(2).Req("cpu=1").Pod())
	if got := admitNames(q); len(got) != 0 {
		t.Errorf("admitted %v after Flavor h100 was deleted", got)
	}
	if diff := cmp.Diff(&Problem{Reason: v1alpha1.ReasonFlavorNotFound, Message: "Flavor h100 not found"}, mustStatus(t, q, key).Problem); diff != "" {
		t.Errorf("problem after the delete (-want +got):\n%s", diff)
	}
}

// TestDeletingBudgetReleasesClaim: pods held by a deleted budget are re-evaluated
// against the budgets that remain.
func TestDeletingBudgetReleasesClaim(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "tight").Hard("cpu=1").Obj())
	q.UpsertBudget(makeBudget("team-a", "loose").Hard("cpu=10").Obj())
	q.UpsertPod(makePod("p1").Created(1).Req("cpu=1").Pod())
	q.UpsertPod(makePod("p2").Created(2).Req("cpu=1").Pod())
	if diff := cmp.Diff([]string{"p1"}, admitNames(q)); diff != "" {
		t.Fatalf("admitted (-want +got):\n%s", diff)
	}
	q.DeleteBudget(BudgetKey{Namespace: "team-a", Name: "tight"})
	if diff := cmp.Diff([]string{"p2"}, admitNames(q)); diff != "" {
		t.Errorf("after delete (-want +got):\n%s", diff)
	}
	if _, ok := q.Reader().Status(BudgetKey{Namespace: "team-a", Name: "tight"}); ok {
		t.Errorf("deleted budget still has a status")
	}
}
