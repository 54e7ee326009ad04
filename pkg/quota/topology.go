package quota

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/quotagate/quotagate/api/v1alpha1"
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
}

func newTopology() topology {
	return topology{
		budgets:    map[BudgetKey]*budget{},
		byNS:       map[string]map[string]*budget{},
		namespaces: map[string]labels.Set{},
	}
}

// add creates the budget of spec and indexes it; call resolve after.
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
	return b
}

// remove forgets the budget of key and returns it (nil when unknown); call resolve
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
	return b
}

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

// resolve derives parents, children, ancestors, problems and effective states of every
// budget.
// It returns the budgets whose state or problem changed (their status must be written),
// those that started admitting (their pods may go now), those whose ceiling changed
// because they gained or lost a parent to borrow under, and the parents that gained or
// lost a child (their families changed; a parent that is gone may be among them).
func (t *topology) resolve() (changed, started, limits, families []*budget) {
	// Map order is fine here: nothing below depends on the order of budgets except
	// selecting, which is sorted.
	all := slices.Collect(maps.Values(t.budgets))
	type view struct {
		admitting bool
		problem   problem
		closedBy  *budget
	}
	viewOf := func(b *budget) view {
		v := view{admitting: b.admitting, closedBy: b.closedBy}
		if b.problem != nil {
			v.problem = *b.problem
		}
		return v
	}
	was := make(map[*budget]view, len(all))
	wasParent := make(map[*budget]*budget, len(all))
	t.selecting = t.selecting[:0]
	for _, b := range all {
		was[b], wasParent[b] = viewOf(b), b.parent
		b.parent, b.ancestors, b.problem, b.closedBy = nil, nil, nil, nil
		b.children, b.borrowers = b.children[:0], 0
		if b.spec.Parent != "" {
			b.parent = t.budgets[BudgetKey{Name: b.spec.Parent}]
		}
		if b.key.IsCluster() && b.spec.NamespaceSelector != nil {
			t.selecting = append(t.selecting, b)
		}
	}
	slices.SortFunc(t.selecting, compareBudgets)
	for _, b := range all {
		if b.setFamily(b.parent != nil) {
			limits = append(limits, b)
		}
		if old := wasParent[b]; old != b.parent {
			for _, p := range []*budget{old, b.parent} {
				if p != nil && !slices.Contains(families, p) {
					families = append(families, p)
				}
			}
		}
	}
	for _, b := range all {
		if p := b.parent; p != nil {
			p.children = append(p.children, b)
			if b.borrows() {
				p.borrowers++
			}
		}
	}
	for _, b := range all {
		slices.SortFunc(b.children, compareBudgets)
	}
	for _, b := range all {
		seen := map[*budget]bool{b: true}
		for a := b.parent; a != nil; a = a.parent {
			if seen[a] {
				if a == b {
					b.problem = &problem{Reason: v1alpha1.ReasonParentCycle, Message: "parent chain loops: " + cycleString(b)}
				}
				break
			}
			seen[a] = true
			b.ancestors = append(b.ancestors, a)
		}
		switch {
		case b.problem != nil:
		case b.specErr != "":
			b.problem = &problem{Reason: b.specReason, Message: b.specErr}
		case b.spec.Parent != "" && b.parent == nil:
			b.problem = &problem{Reason: v1alpha1.ReasonParentNotFound, Message: fmt.Sprintf("parent ClusterBudget %s not found", b.spec.Parent)}
		}
	}
	for _, b := range all {
		b.admitting = b.problem == nil && b.specOpen()
		for _, a := range b.ancestors {
			if a.problem != nil || !a.specOpen() {
				b.admitting = false
				if b.problem == nil && b.specOpen() && b.closedBy == nil {
					b.closedBy = a
				}
			}
		}
	}
	for _, b := range all {
		if viewOf(b) != was[b] {
			changed = append(changed, b)
		}
		if b.admitting && !was[b].admitting {
			started = append(started, b)
		}
	}
	slices.SortFunc(limits, compareBudgets)
	slices.SortFunc(families, compareBudgets)
	return changed, started, limits, families
}

func cycleString(b *budget) string {
	names := []string{b.key.Name}
	for a := b.parent; a != nil && a != b; a = a.parent {
		names = append(names, a.key.Name)
	}
	return strings.Join(append(names, b.key.Name), " -> ")
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
