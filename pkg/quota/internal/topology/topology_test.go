package topology

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// node is the least a budget can be to the topology: a key, its spec's inputs, whether
// it borrows, and what its ledger is told about its family.
type node struct {
	key         Key
	in          Inputs
	borrows     bool
	underParent bool
	place       Place[*node]
}

func (n *node) Key() Key             { return n.key }
func (n *node) Place() *Place[*node] { return &n.place }
func (n *node) Inputs() Inputs       { return n.in }
func (n *node) Borrows() bool        { return n.borrows }
func (n *node) SetFamily(under bool) bool {
	changed := n.borrows && n.underParent != under
	n.underParent = under
	return changed
}

func newNode(ns, name, parent string) *node {
	return &node{key: Key{Namespace: ns, Name: name}, in: Inputs{Parent: parent, Open: true}}
}

func sortedNames(ns []*node) []string {
	out := names(ns)
	slices.Sort(out)
	return out
}

func names(ns []*node) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.key.String()
	}
	return out
}

// A budget's problem and state, derived from its own spec and its ancestors': a loop,
// a missing parent, a missing Flavor, a closed ancestor.
func TestResolveProblemsAndStates(t *testing.T) {
	tp := New[*node]()
	tp.KnowFlavors(func(name string) bool { return name == "a100" })
	a, b := newNode("", "a", "b"), newNode("", "b", "a")
	orphan := newNode("team-a", "orphan", "gone")
	flavored := newNode("team-a", "flavored", "")
	flavored.in.Flavors = "a100,h100"
	closed := newNode("", "closed", "")
	closed.in.Open = false
	under := newNode("team-b", "under", "closed")
	under.borrows = true
	for _, n := range []*node{a, b, orphan, flavored, closed, under} {
		tp.Add(n)
	}
	changed, started, limits, families := tp.Resolve()
	if diff := cmp.Diff([]string{"team-b/under"}, names(limits)); diff != "" {
		t.Errorf("limits: the borrower that gained a parent (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a", "b", "closed"}, names(families)); diff != "" {
		t.Errorf("families: the parents that gained a child (-want +got):\n%s", diff)
	}
	if len(started) != 0 {
		t.Errorf("started %v: nothing here admits", names(started))
	}
	// closed is as a new budget starts (not admitting, no problem), so it did not change.
	if diff := cmp.Diff([]string{"a", "b", "team-a/flavored", "team-a/orphan", "team-b/under"}, sortedNames(changed)); diff != "" {
		t.Errorf("changed: those with a problem or closed by a parent (-want +got):\n%s", diff)
	}
	for n, want := range map[*node]string{
		a:        v1alpha1.ReasonParentCycle + ": parent chain loops: a -> b -> a",
		orphan:   v1alpha1.ReasonParentNotFound + ": parent ClusterBudget gone not found",
		flavored: v1alpha1.ReasonFlavorNotFound + ": Flavor h100 not found",
	} {
		p := n.place.Problem()
		if p == nil || p.Reason+": "+p.Message != want {
			t.Errorf("%s: problem %+v, want %q", n.key, p, want)
		}
	}
	if under.place.Problem() != nil || under.place.Admitting() || under.place.ClosedBy() != closed {
		t.Errorf("under a closed parent: problem %v, admitting %v, closed by %v; want none, false, closed",
			under.place.Problem(), under.place.Admitting(), under.place.ClosedBy())
	}
	if closed.place.Borrowers() != 1 || !slices.Equal(closed.place.Children(), []*node{under}) {
		t.Errorf("closed has %d borrowers and children %v, want 1 and [under]", closed.place.Borrowers(), names(closed.place.Children()))
	}

	// Opening the parent, through Respec: what Resolve reads changed, so it must run,
	// and the child starts admitting.
	if !tp.Respec(closed, func() { closed.in.Open = true }) {
		t.Fatal("Respec of a closed budget that opens says nothing Resolve reads changed")
	}
	if tp.Respec(closed, func() {}) {
		t.Error("Respec that changed nothing says Resolve must run")
	}
	_, started, _, _ = tp.Resolve(closed)
	if diff := cmp.Diff([]string{"team-b/under", "closed"}, names(started)); diff != "" {
		t.Errorf("started once the parent opened (-want +got):\n%s", diff)
	}
	if !under.place.Admitting() || under.place.ClosedBy() != nil {
		t.Errorf("under an open parent: admitting %v, closed by %v", under.place.Admitting(), under.place.ClosedBy())
	}

	// The parent goes: its child loses it, and its ceiling (limits) with it.
	if got := tp.Remove(closed.key); got != closed || tp.Alive(closed) {
		t.Fatalf("Remove returned %v, alive %v", got, tp.Alive(closed))
	}
	_, _, limits, _ = tp.Resolve(closed)
	if diff := cmp.Diff([]string{"team-b/under"}, names(limits)); diff != "" {
		t.Errorf("limits once the parent went (-want +got):\n%s", diff)
	}
	if p := under.place.Problem(); p == nil || p.Reason != v1alpha1.ReasonParentNotFound {
		t.Errorf("under a parent that went: problem %+v, want ParentNotFound", p)
	}
}

// Coverage: the namespace's Budgets that cover the pod by name, the ClusterBudgets
// selecting the namespace by name, then their ancestors.
func TestCoverage(t *testing.T) {
	tp := New[*node]()
	org := newNode("", "org", "")
	prod := newNode("", "prod", "org")
	prod.in.Selects = true
	dev := newNode("", "dev", "")
	dev.in.Selects = true
	y, x := newNode("team-a", "y", "org"), newNode("team-a", "x", "")
	other := newNode("team-b", "z", "")
	for _, n := range []*node{org, prod, dev, y, x, other} {
		tp.Add(n)
	}
	tp.Resolve()
	tp.SetNamespace("team-a", map[string]string{"env": "prod"})
	selects := map[*node]labels.Selector{prod: labels.SelectorFromSet(labels.Set{"env": "prod"}), dev: labels.SelectorFromSet(labels.Set{"env": "dev"})}
	covers := func(n *node, nsLabels labels.Set) bool {
		if sel := selects[n]; sel != nil {
			return sel.Matches(nsLabels)
		}
		return true
	}
	if diff := cmp.Diff([]string{"team-a/x", "team-a/y", "prod", "org"}, names(tp.Coverage("team-a", covers))); diff != "" {
		t.Errorf("coverage of a pod of team-a (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"team-a/x", "team-a/y", "team-b/z", "dev", "org", "prod"}, names(tp.Sorted())); diff != "" {
		t.Errorf("sorted (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"dev", "prod"}, names(tp.Selecting())); diff != "" {
		t.Errorf("selecting (-want +got):\n%s", diff)
	}
}
