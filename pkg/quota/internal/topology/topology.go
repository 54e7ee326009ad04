// Package topology is which budgets of quotagate's core exist and how they hang
// together: the budgets by key and by namespace, the ClusterBudgets that select
// namespaces, the namespaces' labels, and (Resolve) each budget's parent, children,
// ancestors, problem and effective state (docs/budgets.md, "Hierarchy" and "States").
// It answers which budgets cover a pod (Coverage).
//
// It knows nothing of pods' queues or charges, nor of what a budget is beyond Node:
// the core re-covers pods and wakes budgets when it changes. A new rule for what makes
// a budget stop admitting, or for how budgets hang together, is a change here
// (Resolve), with a case in the core's TestTopologyResolve and the incremental-versus-
// full check beside it.
package topology

import (
	"iter"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/labels"
)

// Topology is the budgets and namespaces the core knows, and how they hang together.
// B is the core's budget; its Place holds what Resolve derives.
type Topology[B Node[B]] struct {
	budgets    map[Key]B
	byNS       map[string]map[string]B // namespaced budgets by namespace, name
	selecting  []B                     // ClusterBudgets with a namespaceSelector, by key
	namespaces map[string]labels.Set   // namespaces seen, with their labels
	// named holds the budgets naming each parent name, whether that ClusterBudget
	// exists or not: the budgets Resolve derives again when it comes, goes or changes.
	named map[string]map[B]struct{}
	// rederived counts the budgets Resolve has derived (Rederived).
	rederived int
	// flavorExists reports whether a Flavor exists (nil: every one does); a budget
	// naming one that does not is a problem (FlavorNotFound).
	flavorExists func(name string) bool
}

// New returns an empty topology.
func New[B Node[B]]() *Topology[B] {
	return &Topology[B]{
		budgets:    map[Key]B{},
		byNS:       map[string]map[string]B{},
		namespaces: map[string]labels.Set{},
		named:      map[string]map[B]struct{}{},
	}
}

// compare orders budgets by key (Key.Compare).
func compare[B Node[B]](a, b B) int { return a.Key().Compare(b.Key()) }

// Add indexes b, a budget new to the topology; call Resolve(b) after.
func (t *Topology[B]) Add(b B) {
	key := b.Key()
	b.Place().in = b.Inputs()
	t.budgets[key] = b
	if !key.IsCluster() {
		ns := t.byNS[key.Namespace]
		if ns == nil {
			ns = map[string]B{}
			t.byNS[key.Namespace] = ns
		}
		ns[key.Name] = b
	}
	t.name(b)
}

// Remove forgets the budget of key and returns it (the zero B when unknown); call
// Resolve(b) after.
func (t *Topology[B]) Remove(key Key) B {
	b, ok := t.budgets[key]
	if !ok {
		return b
	}
	delete(t.budgets, key)
	if ns := t.byNS[key.Namespace]; ns != nil && !key.IsCluster() {
		delete(ns, key.Name)
		if len(ns) == 0 {
			delete(t.byNS, key.Namespace)
		}
	}
	t.unname(b)
	return b
}

// Respec applies a new spec to b by calling apply, and reports whether anything
// Resolve reads of b (its Inputs) changed: only then must Resolve(b) run. A status-only
// update, or a change of hard alone, changes nothing it reads.
func (t *Topology[B]) Respec(b B, apply func()) (resolve bool) {
	before := b.Place().in
	t.unname(b)
	apply()
	b.Place().in = b.Inputs()
	t.name(b)
	return b.Place().in != before
}

func (t *Topology[B]) name(b B) {
	if p := b.Place().in.Parent; p != "" {
		if t.named[p] == nil {
			t.named[p] = map[B]struct{}{}
		}
		t.named[p][b] = struct{}{}
	}
}

func (t *Topology[B]) unname(b B) {
	parent := b.Place().in.Parent
	if set := t.named[parent]; set != nil {
		delete(set, b)
		if len(set) == 0 {
			delete(t.named, parent)
		}
	}
}

// KnowFlavors tells the topology which Flavors exist (Resolve's FlavorNotFound).
func (t *Topology[B]) KnowFlavors(exists func(name string) bool) { t.flavorExists = exists }

// BudgetsOf returns the Budgets of a namespace, by name.
func (t *Topology[B]) BudgetsOf(ns string) []B {
	byName := t.byNS[ns]
	out := make([]B, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[name])
	}
	return out
}

// Lookup returns the budget of key (the zero B when there is none).
func (t *Topology[B]) Lookup(key Key) B { return t.budgets[key] }

// Len returns how many budgets there are.
func (t *Topology[B]) Len() int { return len(t.budgets) }

// Rederived counts the budgets Resolve has derived since the topology was made, for
// tests: an update that changes nothing Resolve reads derives none.
func (t *Topology[B]) Rederived() int { return t.rederived }

// NamespaceLabels returns a namespace's labels and whether it was seen.
func (t *Topology[B]) NamespaceLabels(name string) (labels.Set, bool) {
	l, known := t.namespaces[name]
	return l, known
}

// SeenNamespaces yields every namespace seen, with its labels (not to be changed).
func (t *Topology[B]) SeenNamespaces() iter.Seq2[string, labels.Set] {
	return maps.All(t.namespaces)
}

// ForgetNamespace forgets a namespace's labels.
func (t *Topology[B]) ForgetNamespace(name string) { delete(t.namespaces, name) }

// Alive reports whether b is still the budget of its key (not deleted or replaced).
func (t *Topology[B]) Alive(b B) bool {
	var zero B
	return b != zero && t.budgets[b.Key()] == b
}

// SetNamespace records a namespace's labels and reports whether they changed.
func (t *Topology[B]) SetNamespace(name string, l map[string]string) (changed bool) {
	old, known := t.namespaces[name]
	if known && maps.Equal(old, labels.Set(l)) {
		return false
	}
	t.namespaces[name] = maps.Clone(labels.Set(l))
	return true
}

// Coverage returns the budgets that cover a pod of namespace ns: Budgets of ns that
// covers accepts (nsLabels nil), by name; ClusterBudgets with a namespaceSelector that
// covers accepts (with ns's labels), by name; then all their ancestors. covers says
// whether a budget's own selectors select the pod.
func (t *Topology[B]) Coverage(ns string, covers func(b B, nsLabels labels.Set) bool) []B {
	var out []B
	for _, b := range t.byNS[ns] {
		if covers(b, nil) {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, compare[B])
	if len(t.selecting) > 0 {
		nsLabels := t.namespaces[ns]
		for _, b := range t.selecting {
			if covers(b, nsLabels) {
				out = append(out, b)
			}
		}
	}
	direct := len(out)
	for i := 0; i < direct; i++ {
		for _, a := range out[i].Place().ancestors {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

// Sorted returns every budget in key order.
func (t *Topology[B]) Sorted() []B {
	keys := slices.SortedFunc(maps.Keys(t.budgets), Key.Compare)
	out := make([]B, len(keys))
	for i, k := range keys {
		out[i] = t.budgets[k]
	}
	return out
}

// Selecting returns the ClusterBudgets with a namespaceSelector, in key order. Not to
// be changed.
func (t *Topology[B]) Selecting() []B { return t.selecting }
