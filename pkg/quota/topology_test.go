package quota

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// The topology alone, with no pods queued: which budgets cover a pod, and what resolve
// derives (parents, ancestors, problems, states) and reports.
func TestTopologyCoverage(t *testing.T) {
	tp := newTestTopology()
	for _, b := range []Budget{
		makeBudget("team-a", "all").Parent("org").Obj(),
		makeBudget("team-a", "gpu").Selector("kind", "gpu").Obj(),
		makeBudget("team-b", "all").Obj(),
		makeBudget("", "org").Obj(),
		makeBudget("", "prod").Namespaces(labels.SelectorFromSet(labels.Set{"env": "prod"})).Parent("org").Obj(),
		makeBudget("", "everything").Namespaces(labels.Everything()).Obj(),
	} {
		addBudget(tp, b)
	}
	tp.Resolve()
	tp.SetNamespace("team-a", map[string]string{"env": "prod"})
	tp.SetNamespace("team-b", map[string]string{"env": "dev"})

	keysOf := func(bs []*budget) []string {
		var out []string
		for _, b := range bs {
			out = append(out, b.key.String())
		}
		return out
	}
	for name, tc := range map[string]struct {
		pod  Pod
		want []string
	}{
		// Budgets of its namespace by name, then ClusterBudgets selecting it by name,
		// then the ancestors not yet listed.
		"a gpu pod of team-a": {makePod("p").Label("kind", "gpu").Pod(), []string{"team-a/all", "team-a/gpu", "everything", "prod", "org"}},
		"a cpu pod of team-a": {makePod("p").Pod(), []string{"team-a/all", "everything", "prod", "org"}},
		"a pod of team-b":     {makePod("p").NS("team-b").Pod(), []string{"team-b/all", "everything"}},
		"a pod elsewhere":     {makePod("p").NS("team-c").Pod(), []string{"everything"}},
	} {
		if diff := cmp.Diff(tc.want, keysOf(coverage(tp, &tc.pod))); diff != "" {
			t.Errorf("%s: coverage (-want +got):\n%s", name, diff)
		}
	}
	if tp.SetNamespace("team-a", map[string]string{"env": "prod"}) {
		t.Error("setNamespace with the same labels reported a change")
	}
	removed := tp.Remove(BudgetKey{Namespace: "team-a", Name: "gpu"})
	if removed == nil || tp.Alive(removed) || slices.Contains(tp.BudgetsOf("team-a"), removed) {
		t.Errorf("remove left team-a/gpu behind (alive %v)", tp.Alive(removed))
	}
	if diff := cmp.Diff([]string{"team-a/all", "team-b/all", "everything", "org", "prod"}, keysOf(tp.Sorted())); diff != "" {
		t.Errorf("sorted: the budgets left, Budgets then ClusterBudgets (-want +got):\n%s", diff)
	}
}

func TestTopologyResolve(t *testing.T) {
	tp := newTestTopology()
	keysOf := func(bs []*budget) []string { // sorted as strings
		var out []string
		for _, b := range bs {
			out = append(out, b.key.String())
		}
		slices.Sort(out)
		return out
	}
	// A loop (a -> b -> a), a child of the loop, a missing parent, and a closed parent
	// with an open child.
	for _, b := range []Budget{
		makeBudget("", "a").Parent("b").Obj(),
		makeBudget("", "b").Parent("a").Obj(),
		makeBudget("team-a", "under-loop").Parent("a").Obj(),
		makeBudget("team-a", "orphan").Parent("gone").Obj(),
		makeBudget("", "closed").Closed().Obj(),
		makeBudget("team-a", "under-closed").Parent("closed").Obj(),
		makeBudget("team-a", "fine").Obj(),
	} {
		addBudget(tp, b)
	}
	changed, started, _, _ := tp.Resolve()
	// Every budget changes from the zero view of a new one, except "closed": closed by
	// its own spec, with no problem, it was not admitting before either.
	if diff := cmp.Diff([]string{"a", "b", "team-a/fine", "team-a/orphan", "team-a/under-closed", "team-a/under-loop"}, keysOf(changed)); diff != "" {
		t.Errorf("changed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"team-a/fine"}, keysOf(started)); diff != "" {
		t.Errorf("started admitting (-want +got):\n%s", diff)
	}
	get := func(ns, name string) *budget { return tp.Lookup(BudgetKey{Namespace: ns, Name: name}) }
	for _, tc := range []struct {
		b         *budget
		reason    string // the problem's reason, "" for none
		admitting bool
		closedBy  string
	}{
		{get("", "a"), v1alpha1.ReasonParentCycle, false, ""},
		{get("", "b"), v1alpha1.ReasonParentCycle, false, ""},
		{get("team-a", "under-loop"), "", false, "a"},
		{get("team-a", "orphan"), v1alpha1.ReasonParentNotFound, false, ""},
		{get("", "closed"), "", false, ""},
		{get("team-a", "under-closed"), "", false, "closed"},
		{get("team-a", "fine"), "", true, ""},
	} {
		reason := ""
		if tc.b.place.Problem() != nil {
			reason = tc.b.place.Problem().Reason
		}
		closedBy := ""
		if tc.b.place.ClosedBy() != nil {
			closedBy = tc.b.place.ClosedBy().key.Name
		}
		if reason != tc.reason || tc.b.place.Admitting() != tc.admitting || closedBy != tc.closedBy {
			t.Errorf("%s: problem %q, admitting %v, closed by %q; want %q, %v, %q",
				tc.b.key, reason, tc.b.place.Admitting(), closedBy, tc.reason, tc.admitting, tc.closedBy)
		}
	}
	if got := get("", "a").place.Problem(); got == nil || got.Message != "parent chain loops: a -> b -> a" {
		t.Errorf("a's problem = %+v, want the loop spelled out", got)
	}

	// Fixing the loop and opening the parent: what changes is reported, and what may
	// now admit is started.
	tp.Remove(BudgetKey{Name: "a"})
	addBudget(tp, makeBudget("", "a").Obj())
	respec(tp, get("", "closed"), makeBudget("", "closed").Obj())
	changed, started, _, _ = tp.Resolve()
	if diff := cmp.Diff([]string{"a", "b", "closed", "team-a/under-closed", "team-a/under-loop"}, keysOf(changed)); diff != "" {
		t.Errorf("changed after the fixes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a", "b", "closed", "team-a/under-closed", "team-a/under-loop"}, keysOf(started)); diff != "" {
		t.Errorf("started after the fixes (-want +got):\n%s", diff)
	}
	changed, started, _, _ = tp.Resolve()
	if len(changed)+len(started) != 0 {
		t.Errorf("resolving again with nothing changed reported changed %v, started %v", keysOf(changed), keysOf(started))
	}
}

// A budget with a borrowingLimit borrows only under a parent: gaining or losing one
// changes its ceiling, and resolve says so (its waiting pods need another look).
func TestResolveReportsCeilingsThatChange(t *testing.T) {
	tp := newTestTopology()
	child := addBudget(tp, makeBudget("team-a", "a").Hard("cpu=2").Borrow("cpu=3").Parent("org").Obj())
	plain := addBudget(tp, makeBudget("team-b", "b").Hard("cpu=2").Parent("org").Obj())
	if _, _, limits, _ := tp.Resolve(); len(limits) != 0 {
		t.Errorf("no parent yet: limits %v, want none", limits)
	}
	ceiling := func() string { c := child.ledger.Of("requests.cpu").Ceiling; return c.String() }
	if got := ceiling(); got != "2" {
		t.Errorf("without its parent the ceiling is %s, want hard (2)", got)
	}
	org := addBudget(tp, makeBudget("", "org").Hard("cpu=10").Obj())
	_, _, limits, families := tp.Resolve()
	if len(limits) != 1 || limits[0] != child {
		t.Errorf("the parent appeared: limits %v, want only the borrowing child", limits)
	}
	if got := ceiling(); got != "5" {
		t.Errorf("under its parent the ceiling is %s, want hard plus borrowingLimit (5)", got)
	}
	if len(families) != 1 || families[0] != org {
		t.Errorf("the parent appeared: families %v, want the parent's", families)
	}
	if org.place.Borrowers() != 1 || len(org.place.Children()) != 2 || org.place.Children()[0] != child || org.place.Children()[1] != plain {
		t.Errorf("the parent has %d borrowers and children %v, want 1 and [a b]", org.place.Borrowers(), org.place.Children())
	}
	tp.Remove(org.key)
	if _, _, limits, _ := tp.Resolve(); len(limits) != 1 || ceiling() != "2" {
		t.Errorf("the parent went: limits %v and ceiling %s, want the child and 2", limits, ceiling())
	}
}
