package quota

import (
	"iter"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/labels"
)

// topology is which budgets exist and how they hang together: the budgets by key and
// by namespace, the ClusterBudgets that select namespaces, the namespaces' labels, and
// (resolve) each budget's parent, ancestors, problem and effective state. It answers
// which budgets cover a pod (coverage). It knows nothing of pods' queues or charges:
// the AdmissionQueue re-covers pods and wakes budgets when it changes.
type topology struct {
	budgets    map[BudgetKey]*budget
	byNS       map[string]map[string]*budget // namespaced budgets by namespace, name
	selecting  []*budget                     // ClusterBudgets with a namespaceSelector, by key
	namespaces map[string]labels.Set         // namespaces seen, with their labels
	// named holds the budgets naming each parent name, whether that ClusterBudget
	// exists or not: the budgets resolve derives again when it comes, goes or changes.
	named map[string]map[*budget]struct{}
	// rederived counts the budgets resolve has derived, for tests: an update that
	// changes nothing resolve reads derives none.
	rederived int
	// flavorExists reports whether a Flavor exists (nil: every one does); a budget
	// naming one that does not is a problem (FlavorNotFound).
	flavorExists func(name string) bool
}

func newTopology() topology {
	return topology{
		budgets:    map[BudgetKey]*budget{},
		byNS:       map[string]map[string]*budget{},
		namespaces: map[string]labels.Set{},
		named:      map[string]map[*budget]struct{}{},
	}
}

// add creates the budget of spec and indexes it; call resolve(b) after.
func (t *topology) add(spec Budget) *budget {
	b := newBudget(spec)
	t.budgets[spec.Key] = b
	if !spec.Key.IsCluster() {
		ns := t.byNS[spec.Key.Namespace]
		if ns == nil {
			ns = map[string]*budget{}
			t.byNS[spec.Key.Namespace] = ns
		}
		ns[spec.Key.Name] = b
	}
	t.name(b)
	return b
}

// remove forgets the budget of key and returns it (nil when unknown); call resolve(b)
// after.
func (t *topology) remove(key BudgetKey) *budget {
	b := t.budgets[key]
	if b == nil {
		return nil
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

// setSpec applies a new spec to b (budget.setSpec, whose reports it passes on) and
// reports whether anything resolve reads of b changed: only then must resolve(b) run.
// A status-only update, or a change of hard alone, changes nothing it reads.
func (t *topology) setSpec(b *budget, spec Budget) (topologyChanged, hardChanged, resolve bool) {
	before := b.resolveInputs()
	t.unname(b)
	topologyChanged, hardChanged = b.setSpec(spec)
	t.name(b)
	return topologyChanged, hardChanged, b.resolveInputs() != before
}

func (t *topology) name(b *budget) {
	if p := b.spec.Parent; p != "" {
		if t.named[p] == nil {
			t.named[p] = map[*budget]struct{}{}
		}
		t.named[p][b] = struct{}{}
	}
}

func (t *topology) unname(b *budget) {
	if set := t.named[b.spec.Parent]; set != nil {
		delete(set, b)
		if len(set) == 0 {
			delete(t.named, b.spec.Parent)
		}
	}
}

// knowFlavors tells the topology which Flavors exist (resolve's FlavorNotFound).
func (t *topology) knowFlavors(exists func(name string) bool) { t.flavorExists = exists }

// budgetsOf returns the Budgets of a namespace, by name.
func (t *topology) budgetsOf(ns string) []*budget {
	byName := t.byNS[ns]
	out := make([]*budget, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[name])
	}
	return out
}

// lookup returns the budget of key (nil when there is none).
func (t *topology) lookup(key BudgetKey) *budget { return t.budgets[key] }

// namespaceLabels returns a namespace's labels and whether it was seen.
func (t *topology) namespaceLabels(name string) (labels.Set, bool) {
	l, known := t.namespaces[name]
	return l, known
}

// seenNamespaces yields every namespace seen, with its labels (not to be changed).
func (t *topology) seenNamespaces() iter.Seq2[string, labels.Set] { return maps.All(t.namespaces) }

// forgetNamespace forgets a namespace's labels.
func (t *topology) forgetNamespace(name string) { delete(t.namespaces, name) }

// alive reports whether b is still the budget of its key (not deleted or replaced).
func (t *topology) alive(b *budget) bool { return b != nil && t.budgets[b.key] == b }

// setNamespace records a namespace's labels and reports whether they changed.
func (t *topology) setNamespace(name string, l map[string]string) (changed bool) {
	old, known := t.namespaces[name]
	if known && maps.Equal(old, labels.Set(l)) {
		return false
	}
	t.namespaces[name] = maps.Clone(labels.Set(l))
	return true
}

// coverage returns the budgets that cover a pod: Budgets of its namespace whose
// podSelector matches, ClusterBudgets whose namespaceSelector matches its namespace
// (and podSelector the pod), then all their ancestors.
func (t *topology) coverage(p *Pod) []*budget {
	var out []*budget
	for _, b := range t.byNS[p.Namespace] {
		if b.coversDirectly(p, nil) {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, compareBudgets)
	if len(t.selecting) > 0 {
		nsLabels := t.namespaces[p.Namespace]
		for _, b := range t.selecting {
			if b.coversDirectly(p, nsLabels) {
				out = append(out, b)
			}
		}
	}
	direct := len(out)
	for i := 0; i < direct; i++ {
		for _, a := range out[i].ancestors {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

// sorted returns every budget in BudgetKey order.
func (t *topology) sorted() []*budget {
	keys := slices.SortedFunc(maps.Keys(t.budgets), BudgetKey.Compare)
	out := make([]*budget, len(keys))
	for i, k := range keys {
		out[i] = t.budgets[k]
	}
	return out
}
