package quota

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// The topology's derived state (topology): each budget's parent, family, ancestors,
// problem and effective state, derived again for the budgets an event touches.

// resolve derives parents, children, ancestors, problems and effective states after
// the budgets of seeds were added, removed, or changed what resolve reads of them
// (topology.setSpec), or of every budget when seeds is empty.
//
// Only the budgets whose derived state may change are derived again: the seeds that
// still exist and, for a ClusterBudget among them, every budget naming it as parent
// and their descendants (by name, so that a parent that comes or goes reaches the
// budgets that name it). Another budget keeps its parent (what it names did not come
// or go), its ancestors (none of them changed its parent) and their problems and
// states, so its own; only its children and borrowers change, when a budget joins or
// leaves its family, and those are kept here.
//
// It returns the budgets whose state or problem changed (their status must be written),
// those that started admitting (their pods may go now), those whose ceiling changed
// because they gained or lost a parent to borrow under, and the parents that gained or
// lost a child (their families changed; a parent that is gone may be among them).
func (t *topology) resolve(seeds ...*budget) (changed, started, limits, families []*budget) {
	var set []*budget
	full := len(seeds) == 0
	if full {
		// Map order is fine here: nothing below depends on the order of the budgets.
		set = slices.Collect(maps.Values(t.budgets))
		t.reindex(set)
	} else {
		set = t.affected(seeds)
		for _, s := range seeds {
			t.updateSelecting(s)
			if p := s.parent; !t.alive(s) && t.alive(p) {
				t.leaveFamily(s, p)
			}
		}
	}
	t.rederived += len(set)
	type view struct {
		admitting bool
		problem   Problem
		closedBy  *budget
	}
	viewOf := func(b *budget) view {
		v := view{admitting: b.admitting, closedBy: b.closedBy}
		if b.problem != nil {
			v.problem = *b.problem
		}
		return v
	}
	was := make([]view, len(set))
	wasParent := make([]*budget, len(set))
	for i, b := range set {
		was[i], wasParent[i] = viewOf(b), b.parent
		b.parent, b.ancestors, b.problem, b.closedBy = nil, nil, nil, nil
		if b.spec.Parent != "" {
			b.parent = t.budgets[BudgetKey{Name: b.spec.Parent}]
		}
	}
	for i, b := range set {
		if b.ledger.SetFamily(b.parent != nil) {
			limits = append(limits, b)
		}
		old := wasParent[i]
		if old != b.parent {
			for _, p := range []*budget{old, b.parent} {
				if p != nil && !slices.Contains(families, p) {
					families = append(families, p)
				}
			}
		}
		if !full && t.alive(old) {
			t.leaveFamily(b, old)
		}
		b.counted = false // under a parent that is gone, or (full) not counted yet
		t.joinFamily(b, full)
	}
	if full {
		for _, b := range set {
			slices.SortFunc(b.children, compareBudgets)
		}
	}
	for _, b := range set {
		var loops bool
		b.ancestors, loops = chain(b)
		switch {
		case loops:
			b.problem = &Problem{Reason: v1alpha1.ReasonParentCycle, Message: "parent chain loops: " + cycleString(b)}
		case b.specErr != "":
			b.problem = &Problem{Reason: b.specReason, Message: b.specErr}
		case b.spec.Parent != "" && b.parent == nil:
			b.problem = &Problem{Reason: v1alpha1.ReasonParentNotFound, Message: fmt.Sprintf("parent ClusterBudget %s not found", b.spec.Parent)}
		default:
			if missing := t.missingFlavors(b); len(missing) > 0 {
				b.problem = &Problem{Reason: v1alpha1.ReasonFlavorNotFound, Message: flavorsNotFound(missing)}
			}
		}
	}
	for _, b := range set {
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
	for i, b := range set {
		if viewOf(b) != was[i] {
			changed = append(changed, b)
		}
		if b.admitting && !was[i].admitting {
			started = append(started, b)
		}
	}
	slices.SortFunc(started, compareBudgets)
	slices.SortFunc(limits, compareBudgets)
	slices.SortFunc(families, compareBudgets)
	return changed, started, limits, families
}

// chain returns b's ancestors, parent first, stopping before one repeats, and whether
// the chain loops back to b itself.
func chain(b *budget) (ancestors []*budget, loops bool) {
	var seen map[*budget]bool // only for long chains; a short one is searched
	for a := b.parent; a != nil; a = a.parent {
		if a == b {
			return ancestors, true
		}
		if seen != nil && seen[a] || seen == nil && slices.Contains(ancestors, a) {
			break
		}
		ancestors = append(ancestors, a)
		if len(ancestors) == 16 {
			seen = map[*budget]bool{}
			for _, x := range ancestors {
				seen[x] = true
			}
		} else if seen != nil {
			seen[a] = true
		}
	}
	return ancestors, false
}

// affected returns the budgets resolve(seeds) derives again: the seeds still alive,
// and the budgets naming a ClusterBudget among them or among those found, by name.
func (t *topology) affected(seeds []*budget) []*budget {
	var out []*budget
	in := map[*budget]bool{}
	add := func(b *budget) {
		if !in[b] {
			in[b] = true
			out = append(out, b)
		}
	}
	expand := func(b *budget) {
		if b.key.IsCluster() {
			for c := range t.named[b.key.Name] {
				add(c)
			}
		}
	}
	for _, s := range seeds {
		if t.alive(s) {
			add(s)
		} else {
			expand(s)
		}
	}
	for i := 0; i < len(out); i++ {
		expand(out[i])
	}
	return out
}

// reindex rebuilds what resolve keeps between calls (the names, the ClusterBudgets
// that select namespaces, the families) for a resolve of every budget.
func (t *topology) reindex(all []*budget) {
	clear(t.named)
	t.selecting = t.selecting[:0]
	for _, b := range all {
		t.name(b)
		b.children, b.borrowers, b.counted = b.children[:0], 0, false
		if b.key.IsCluster() && b.spec.NamespaceSelector != nil {
			t.selecting = append(t.selecting, b)
		}
	}
	slices.SortFunc(t.selecting, compareBudgets)
}

// updateSelecting puts s in selecting, or takes it out, as it now is.
func (t *topology) updateSelecting(s *budget) {
	i, found := slices.BinarySearchFunc(t.selecting, s, compareBudgets)
	present := found && t.selecting[i] == s
	want := t.alive(s) && s.key.IsCluster() && s.spec.NamespaceSelector != nil
	switch {
	case present && !want:
		t.selecting = slices.Delete(t.selecting, i, i+1)
	case !present && want:
		t.selecting = slices.Insert(t.selecting, i, s)
	}
}

// leaveFamily takes b out of the children and borrowers of p, its parent when last
// resolved.
func (t *topology) leaveFamily(b, p *budget) {
	if b.counted {
		p.borrowers--
		b.counted = false
	}
	if p != b.parent || !t.alive(b) {
		if i := slices.Index(p.children, b); i >= 0 {
			p.children = slices.Delete(p.children, i, i+1)
		}
	}
}

// joinFamily adds b to the children (in key order, unless full: then resolve sorts
// them) and borrowers of its parent.
func (t *topology) joinFamily(b *budget, full bool) {
	p := b.parent
	if p == nil {
		return
	}
	switch i, found := slices.BinarySearchFunc(p.children, b, compareBudgets); {
	case full:
		p.children = append(p.children, b)
	case !found || p.children[i] != b:
		p.children = slices.Insert(p.children, i, b)
	}
	if b.ledger.Borrows() {
		p.borrowers++
		b.counted = true
	}
}

func cycleString(b *budget) string {
	names := []string{b.key.Name}
	for a := b.parent; a != nil && a != b; a = a.parent {
		names = append(names, a.key.Name)
	}
	return strings.Join(append(names, b.key.Name), " -> ")
}

// resolveInputs is what topology.resolve reads of a budget's own spec: while it stays
// the same, a spec change leaves every budget's parent, family, problem and state as
// they are.
type resolveInputs struct {
	parent              string
	selects             bool // a ClusterBudget with a namespaceSelector
	borrowLimited       bool // a borrowingLimit on a resource hard limits
	open                bool
	specErr, specReason string
	// flavors are the names of spec.flavors, joined: a Flavor that does not exist is
	// a problem of the budget.
	flavors string
}

func (b *budget) resolveInputs() resolveInputs {
	return resolveInputs{
		parent:        b.spec.Parent,
		selects:       b.key.IsCluster() && b.spec.NamespaceSelector != nil,
		borrowLimited: b.ledger.BorrowLimited(),
		open:          b.specOpen(),
		specErr:       b.specErr,
		specReason:    b.specReason,
		flavors:       strings.Join(b.flavorList(), ","),
	}
}

// flavorList returns the names of spec.flavors, in their order.
func (b *budget) flavorList() []string {
	names := make([]string, len(b.spec.Flavors))
	for i, f := range b.spec.Flavors {
		names[i] = f.Name
	}
	return names
}

// missingFlavors returns the Flavors b names in spec.flavors that do not exist.
func (t *topology) missingFlavors(b *budget) []string {
	var missing []string
	for _, f := range b.spec.Flavors {
		if t.flavorExists != nil && !t.flavorExists(f.Name) {
			missing = append(missing, f.Name)
		}
	}
	return missing
}

// flavorsNotFound says which Flavors of a budget do not exist.
func flavorsNotFound(missing []string) string {
	if len(missing) == 1 {
		return fmt.Sprintf("Flavor %s not found", missing[0])
	}
	return fmt.Sprintf("Flavors %s not found", strings.Join(missing, ", "))
}
