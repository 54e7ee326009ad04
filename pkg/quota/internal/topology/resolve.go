package topology

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// What Resolve derives: each budget's parent, family, ancestors, problem and effective
// state, derived again for the budgets an event touches.

// Resolve derives parents, children, ancestors, problems and effective states after
// the budgets of seeds were added, removed, or changed what Resolve reads of them
// (Respec), or of every budget when seeds is empty.
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
func (t *Topology[B]) Resolve(seeds ...B) (changed, started, limits, families []B) {
	var zero B
	var set []B
	full := len(seeds) == 0
	if full {
		// Map order is fine here: nothing below depends on the order of the budgets.
		set = slices.Collect(maps.Values(t.budgets))
		t.reindex(set)
	} else {
		set = t.affected(seeds)
		for _, s := range seeds {
			t.updateSelecting(s)
			if p := s.Place().parent; !t.Alive(s) && t.Alive(p) {
				t.leaveFamily(s, p)
			}
		}
	}
	t.rederived += len(set)
	type view struct {
		admitting bool
		problem   Problem
		closedBy  B
	}
	viewOf := func(pl *Place[B]) view {
		v := view{admitting: pl.admitting, closedBy: pl.closedBy}
		if pl.problem != nil {
			v.problem = *pl.problem
		}
		return v
	}
	was := make([]view, len(set))
	wasParent := make([]B, len(set))
	for i, b := range set {
		pl := b.Place()
		was[i], wasParent[i] = viewOf(pl), pl.parent
		pl.parent, pl.ancestors, pl.problem, pl.closedBy = zero, nil, nil, zero
		if pl.in.Parent != "" {
			pl.parent = t.budgets[Key{Name: pl.in.Parent}]
		}
	}
	for i, b := range set {
		pl := b.Place()
		if b.SetFamily(pl.parent != zero) {
			limits = append(limits, b)
		}
		old := wasParent[i]
		if old != pl.parent {
			for _, p := range []B{old, pl.parent} {
				if p != zero && !slices.Contains(families, p) {
					families = append(families, p)
				}
			}
		}
		if !full && t.Alive(old) {
			t.leaveFamily(b, old)
		}
		pl.counted = false // under a parent that is gone, or (full) not counted yet
		t.joinFamily(b, full)
	}
	if full {
		for _, b := range set {
			slices.SortFunc(b.Place().children, compare[B])
		}
	}
	for _, b := range set {
		pl := b.Place()
		var loops bool
		pl.ancestors, loops = chain(b)
		switch {
		case loops:
			pl.problem = &Problem{Reason: v1alpha1.ReasonParentCycle, Message: "parent chain loops: " + cycleString(b)}
		case pl.in.SpecErr != "":
			pl.problem = &Problem{Reason: pl.in.SpecReason, Message: pl.in.SpecErr}
		case pl.in.Parent != "" && pl.parent == zero:
			pl.problem = &Problem{Reason: v1alpha1.ReasonParentNotFound, Message: fmt.Sprintf("parent ClusterBudget %s not found", pl.in.Parent)}
		default:
			if missing := t.missingFlavors(pl.in.Flavors); len(missing) > 0 {
				pl.problem = &Problem{Reason: v1alpha1.ReasonFlavorNotFound, Message: flavorsNotFound(missing)}
			}
		}
	}
	for _, b := range set {
		pl := b.Place()
		pl.admitting = pl.problem == nil && pl.in.Open
		for _, a := range pl.ancestors {
			if apl := a.Place(); apl.problem != nil || !apl.in.Open {
				pl.admitting = false
				if pl.problem == nil && pl.in.Open && pl.closedBy == zero {
					pl.closedBy = a
				}
			}
		}
	}
	for i, b := range set {
		pl := b.Place()
		if viewOf(pl) != was[i] {
			changed = append(changed, b)
		}
		if pl.admitting && !was[i].admitting {
			started = append(started, b)
		}
	}
	slices.SortFunc(started, compare[B])
	slices.SortFunc(limits, compare[B])
	slices.SortFunc(families, compare[B])
	return changed, started, limits, families
}

// chain returns b's ancestors, parent first, stopping before one repeats, and whether
// the chain loops back to b itself.
func chain[B Node[B]](b B) (ancestors []B, loops bool) {
	var zero B
	var seen map[B]bool // only for long chains; a short one is searched
	for a := b.Place().parent; a != zero; a = a.Place().parent {
		if a == b {
			return ancestors, true
		}
		if seen != nil && seen[a] || seen == nil && slices.Contains(ancestors, a) {
			break
		}
		ancestors = append(ancestors, a)
		if len(ancestors) == 16 {
			seen = map[B]bool{}
			for _, x := range ancestors {
				seen[x] = true
			}
		} else if seen != nil {
			seen[a] = true
		}
	}
	return ancestors, false
}

// affected returns the budgets Resolve(seeds) derives again: the seeds still alive,
// and the budgets naming a ClusterBudget among them or among those found, by name.
func (t *Topology[B]) affected(seeds []B) []B {
	var out []B
	in := map[B]bool{}
	add := func(b B) {
		if !in[b] {
			in[b] = true
			out = append(out, b)
		}
	}
	expand := func(b B) {
		if key := b.Key(); key.IsCluster() {
			for c := range t.named[key.Name] {
				add(c)
			}
		}
	}
	for _, s := range seeds {
		if t.Alive(s) {
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

// reindex rebuilds what Resolve keeps between calls (the names, the ClusterBudgets
// that select namespaces, the families) for a Resolve of every budget.
func (t *Topology[B]) reindex(all []B) {
	clear(t.named)
	t.selecting = t.selecting[:0]
	for _, b := range all {
		t.name(b)
		pl := b.Place()
		pl.children, pl.borrowers, pl.counted = pl.children[:0], 0, false
		if pl.in.Selects {
			t.selecting = append(t.selecting, b)
		}
	}
	slices.SortFunc(t.selecting, compare[B])
}

// updateSelecting puts s in selecting, or takes it out, as it now is.
func (t *Topology[B]) updateSelecting(s B) {
	i, found := slices.BinarySearchFunc(t.selecting, s, compare[B])
	present := found && t.selecting[i] == s
	want := t.Alive(s) && s.Place().in.Selects
	switch {
	case present && !want:
		t.selecting = slices.Delete(t.selecting, i, i+1)
	case !present && want:
		t.selecting = slices.Insert(t.selecting, i, s)
	}
}

// leaveFamily takes b out of the children and borrowers of p, its parent when last
// resolved.
func (t *Topology[B]) leaveFamily(b, p B) {
	pl, ppl := b.Place(), p.Place()
	if pl.counted {
		ppl.borrowers--
		pl.counted = false
	}
	if p != pl.parent || !t.Alive(b) {
		if i := slices.Index(ppl.children, b); i >= 0 {
			ppl.children = slices.Delete(ppl.children, i, i+1)
		}
	}
}

// joinFamily adds b to the children (in key order, unless full: then Resolve sorts
// them) and borrowers of its parent.
func (t *Topology[B]) joinFamily(b B, full bool) {
	var zero B
	pl := b.Place()
	p := pl.parent
	if p == zero {
		return
	}
	ppl := p.Place()
	switch i, found := slices.BinarySearchFunc(ppl.children, b, compare[B]); {
	case full:
		ppl.children = append(ppl.children, b)
	case !found || ppl.children[i] != b:
		ppl.children = slices.Insert(ppl.children, i, b)
	}
	if b.Borrows() {
		ppl.borrowers++
		pl.counted = true
	}
}

func cycleString[B Node[B]](b B) string {
	var zero B
	names := []string{b.Key().Name}
	for a := b.Place().parent; a != zero && a != b; a = a.Place().parent {
		names = append(names, a.Key().Name)
	}
	return strings.Join(append(names, b.Key().Name), " -> ")
}

// missingFlavors returns the Flavors named in flavors (joined by ",") that do not
// exist.
func (t *Topology[B]) missingFlavors(flavors string) []string {
	if t.flavorExists == nil || flavors == "" {
		return nil
	}
	var missing []string
	for f := range strings.SplitSeq(flavors, ",") {
		if !t.flavorExists(f) {
			missing = append(missing, f)
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
