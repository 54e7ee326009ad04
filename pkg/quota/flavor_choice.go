package quota

import (
	"slices"

	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
)

// The admitter's side of flavors: which flavor a unit is admitted on, and the Flavor
// events.

// UpsertFlavor adds or changes a Flavor. Running pods whose node selector selects it
// are charged on it from now on (pods may arrive before the Flavors they run on), and
// the pods waiting in budgets that name it are looked at again.
func (q *AdmissionQueue) UpsertFlavor(f Flavor) {
	q.mu.Lock()
	defer q.mu.Unlock()
	existed := q.flavors.exists(f.Name)
	if q.flavors.set(f) {
		q.admit.flavorChanged()
	}
	if !existed {
		q.flavorCameOrWent(f.Name)
	}
}

// DeleteFlavor forgets a Flavor: the pods running on it are no longer charged on it,
// and no pod is put on it any more.
func (q *AdmissionQueue) DeleteFlavor(name string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	existed := q.flavors.exists(name)
	if q.flavors.remove(name) {
		q.admit.flavorChanged()
	}
	if existed {
		q.flavorCameOrWent(name)
	}
}

// flavorCameOrWent resolves again the budgets that name a Flavor that came or went: a
// budget naming one that does not exist admits nothing (FlavorNotFound).
func (q *AdmissionQueue) flavorCameOrWent(name string) {
	for _, b := range q.topology.Sorted() {
		if slices.ContainsFunc(b.spec.Flavors, func(f FlavorQuota) bool { return f.Name == name }) {
			q.resolveTopology(b)
		}
	}
}

// FlavorNesting returns, sorted, the Flavors nested in the named one (their labels
// contain its labels and more: their nodes are among its nodes) and those it is nested
// in: where a pod may be charged on both (flavorIndex.reach). Nil and nil for a Flavor
// the core does not know.
func (q *AdmissionQueue) FlavorNesting(name string) (contains, within []string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.flavors.nested(name), q.flavors.nestedAround(name)
}

// flavorChanged moves the charges of running pods to the flavors they reach now, and
// wakes every budget with flavors.
func (a *admitter) flavorChanged() {
	a.charges.setFlavored(a.flavors.any())
	for _, p := range a.pods.sorted() {
		if p.phase == phaseCharged {
			a.charges.reflavor(p)
		}
	}
	// Every budget with flavors: which flavors a pod selects depends on which exist.
	for _, b := range a.topology.Sorted() {
		if len(b.flavorNames) > 0 {
			a.agenda.wakeAll(b)
		}
	}
}

// flavoredDemand is d with every resource counted on each flavor of fs too (d when fs
// is empty).
func flavoredDemand(d demand, fs []string) demand {
	if len(fs) == 0 {
		return d
	}
	return func(b *budget) amount.List { return onFlavors(d(b), fs) }
}

// addsOnFlavor is what admitting p on a flavor (by name; "" for none) would add to each
// budget: its usage on every flavor it would reach there.
func (a *admitter) addsOnFlavor(p *podState) func(f string) demand {
	return func(f string) demand {
		if f == "" {
			return p.adds
		}
		return p.addsOn(a.flavors.reach(&p.pod, a.flavors.get(f)))
	}
}

// groupOnFlavor is what admitting a group's members on a flavor ("" for none) would
// add to each budget: sums without one, else each member's usage on every flavor it
// would reach there, added up per budget.
func (a *admitter) groupOnFlavor(members []*podState, sums map[*budget]amount.List) func(f string) demand {
	return func(f string) demand {
		if f == "" {
			return sumsDemand(sums)
		}
		on := a.flavors.get(f)
		out := make(map[*budget]amount.List, len(sums))
		for _, m := range members {
			u := onFlavors(m.usage(), a.flavors.reach(&m.pod, on))
			for _, b := range m.cover {
				if out[b] == nil {
					out[b] = amount.List{}
				}
				out[b].Add(u)
			}
		}
		return sumsDemand(out)
	}
}

// onFlavors decides for a unit that nothing but capacity blocks, given the flavors it
// may be put on (none: it is admitted without one, as any unit), on the flavor
// flavorFor picks. When it waits although several flavors could take it, any event in
// a budget that covers it looks at it again. It returns the flavor to admit the unit
// on, or waits.
func (a *admitter) onFlavors(unit []*podState, budgets []*budget, c flavorChoice, add func(f string) demand) (*Flavor, bool) {
	if len(c.names) == 0 {
		return nil, a.waitsForCapacity(unit, budgets, add(""), waitOn{})
	}
	name, fits := a.flavorFor(unit, budgets, c, add)
	others := len(c.names) > 1 && (fits || !c.home.spec.Fungibility.WaitForPreferred)
	return a.onFlavor(unit, budgets, name, add(name), others)
}

// flavorFor picks the flavor for a unit, of the ones it may be put on (c.names, at
// least one), as the ledgers are now: fits says it fits there. It tries them in the
// flavored budget's order and takes the first it fits in, unless its fungibility says
// otherwise: WaitForPreferred stops at the first that it does not fit in;
// AvoidBorrowing passes a flavor it fits in only by borrowing while a later one may
// fit without; StopToPreempt stops at the first where preemption makes room (after a
// flavor it fits in by borrowing, it takes that one instead). When none fits, the unit
// waits on the first where preemption makes room (and preempts there), else on the
// first.
func (a *admitter) flavorFor(unit []*podState, budgets []*budget, c flavorChoice, add func(f string) demand) (name string, fits bool) {
	fung := c.home.spec.Fungibility
	borrowing := ""
	for i, name := range c.names {
		d := add(name)
		if w, over := a.capacityWait(budgets, d); over {
			if fung.WaitForPreferred {
				break
			}
			if fung.StopToPreempt && borrowing == "" && a.preemptions.makesRoom(unit, budgets, d, w) {
				return name, false
			}
			continue
		}
		if fung.AvoidBorrowing && i < len(c.names)-1 && borrowsIn(budgets, d) {
			if borrowing == "" {
				borrowing = name
			}
			continue
		}
		return name, true
	}
	if borrowing != "" {
		return borrowing, true
	}
	if !fung.StopToPreempt && !fung.WaitForPreferred && len(c.names) > 1 {
		// (Stopping to preempt, the loop has asked every flavor already.)
		for _, name := range c.names {
			d := add(name)
			if w, over := a.capacityWait(budgets, d); over && a.preemptions.makesRoom(unit, budgets, d, w) {
				return name, false
			}
		}
	}
	return c.names[0], false
}

// headFlavor is the flavor a waiting pod would be admitted on now, the flavors it would
// be charged on there, and whether it fits there (flavorFor); "" and true when no
// flavor applies to it (a capacity check is then the caller's), and false when no
// flavor can take it.
func (a *admitter) headFlavor(p *podState) (string, []string, bool) {
	c, _, ok := a.flavors.choices(p.cover, &p.pod, p.usage())
	switch {
	case !ok:
		return "", nil, false
	case len(c.names) == 0:
		return "", nil, true
	}
	name, fits := a.flavorFor([]*podState{p}, p.cover, c, a.addsOnFlavor(p))
	return name, a.flavors.reach(&p.pod, a.flavors.get(name)), fits
}

// onFlavor decides for the unit on one flavor (waitsForCapacity); a unit that waits
// although another flavor may take it is marked to be looked at on any event.
func (a *admitter) onFlavor(unit []*podState, budgets []*budget, name string, d demand, others bool) (*Flavor, bool) {
	if a.waitsForCapacity(unit, budgets, d, waitOn{flavor: name, anyFlavor: others}) {
		return nil, true
	}
	return a.flavors.get(name), false
}

// borrowsIn reports whether adding d takes a budget of budgets beyond its hard.
func borrowsIn(budgets []*budget, d demand) bool {
	for _, b := range budgets {
		if _, over := b.ledger.ExcessOverHard(d(b)); over {
			return true
		}
	}
	return false
}

// groupChoices are the flavors every member of a group may be put on, in the first
// member's order: a group's members are admitted on one flavor.
func (a *admitter) groupChoices(members []*podState) (flavorChoice, waitInfo, bool) {
	var out flavorChoice
	for i, m := range members {
		c, w, ok := a.flavors.choices(m.cover, &m.pod, m.usage())
		if !ok {
			return flavorChoice{}, w, false
		}
		switch {
		case c.home == nil:
			// No flavor applies to this member: it goes on the others' flavor, if any.
			continue
		case i == 0 || out.home == nil:
			out = c
			continue
		}
		out.names = slices.DeleteFunc(out.names, func(n string) bool { return !slices.Contains(c.names, n) })
		if len(out.names) == 0 {
			return flavorChoice{}, waitInfo{code: CodeNoFlavor, budget: out.home, detail: "no flavor of " + out.home.key.Describe() + " can take every member of the group"}, false
		}
	}
	return out, waitInfo{}, true
}
