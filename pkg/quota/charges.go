package quota

import (
	"slices"
	"time"

	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
	"github.com/quotagate/quotagate/pkg/quota/internal/heap"
	"github.com/quotagate/quotagate/pkg/quota/internal/topology"
)

// charges is the part that charges each admitted or running pod. A pod is charged to
// every budget that covers it and to the budgets it is pinned to (the ones that
// admitted it), from the moment it is admitted until it ends; release gives the charge
// back and wakes only those budgets.
//
// A charge is fixed when it is made (docs/guarantees.md, "What a tenant may change
// after admission"): which budgets cover an admitted pod is decided by the labels it was
// admitted with (podCharge.labels), so relabelling it changes nothing; what it is charged
// is what it used then, lowered when it uses less (a resize down the kubelet applied,
// as ResourceQuota lowers it) and never raised; its claims are those it was charged
// for. Only what an administrator changes (budgets, their selectors, namespaces'
// labels, Flavors) moves a charge. It keeps the charged pods within their grace
// period (releases: they stop counting at its end), and whether the family part holds
// quota that a release freed (holds: Admit expires holds only then).
type charges struct {
	agenda   *agenda
	topology *topology.Topology[*budget]
	families *families
	flavors  *flavorIndex
	hours    *hourBooks

	releases heap.Heap[*podState] // charged pods that stop counting at their grace period's end
	holds    bool                 // the family part said it holds freed quota
	// flavored: some Flavor exists (the admitter's flavor side says so), so a charge
	// asks which flavors a pod reaches; without one, a charge never enters flavorIndex.
	flavored bool
}

func newCharges(a *agenda, t *topology.Topology[*budget], f *families, fl *flavorIndex, h *hourBooks) *charges {
	return &charges{agenda: a, topology: t, families: f, flavors: fl, hours: h, releases: heap.New(
		func(p, o *podState) bool { return p.pod.ReleaseAt.Before(o.pod.ReleaseAt) },
		func(p *podState) *int { return &p.charge.releaseIndex })}
}

// charge charges the pod's usage to every budget that covers it, and to those it is
// pinned to (pins); labels are the labels that decide its coverage while it is
// charged (podCharge.labels). A pod not put on a flavor by an admission is charged on
// every flavor whose nodes it can reach as it is (flavorIndex.reach): a pod seen
// running may be on any of them.
func (c *charges) charge(p *podState, pins []BudgetKey, labels map[string]string) {
	p.charge.pinned, p.charge.labels = pins, labels
	if p.flavor == nil && c.flavored {
		p.place(nil, c.flavors.reach(&p.pod, nil))
	}
	c.chargeWith(p, p.usage(), p.claims())
}

// setFlavored says whether some Flavor exists.
func (c *charges) setFlavored(any bool) { c.flavored = any }

// chargeWith charges the pod usage and claims (its charge: what it used when it was
// admitted, or less) to every budget its charge labels put it in, and to those it is
// pinned to.
func (c *charges) chargeWith(p *podState, usage amount.List, claims []claimAmount) {
	ch := &p.charge
	ch.to = slices.Clone(c.chargeSet(p, p.cover))
	ch.usage, ch.claims = usage, claims
	for _, b := range ch.to {
		b.ledger.Charge(p.pod.UID, p, ch.usage, p.pod.Usage, ch.claims)
		if len(ch.claims) > 0 {
			c.wakeClaimSharers(b, ch.claims)
		}
		if b.family != nil {
			c.families.useHolds(b, ch.usage)
		}
		c.agenda.markStatus(b)
	}
	if !p.pod.ReleaseAt.IsZero() {
		c.releases.Fix(p)
	}
	c.hours.start(p)
}

// wakeClaimSharers moves back to active the pods waiting in b that use one of claims
// that b has just started to charge: what each of them would add shrank by that claim,
// so an answer "does not fit" given before may be wrong now.
func (c *charges) wakeClaimSharers(b *budget, claims []claimAmount) {
	var sharers []*entry
	for _, c := range claims {
		if b.ledger.ClaimUsers(c.Key) != 1 {
			continue // charged before this pod: nothing changed for the others
		}
		for e := range b.queues.in(queueInadmissible) {
			if usesClaim(e.pod.pod.Claims, c.Key) && !slices.Contains(sharers, e) {
				sharers = append(sharers, e)
			}
		}
	}
	for _, e := range sharers {
		c.agenda.move(e, queueActive)
	}
	if len(sharers) > 0 {
		c.agenda.markDirty(b)
	}
}

// usesClaim reports whether claims has the claim key.
func usesClaim(claims []ClaimCharge, key string) bool {
	return slices.ContainsFunc(claims, func(c ClaimCharge) bool { return c.Key == key })
}

// release gives the pod's charge back and wakes only the budgets it was charged to.
func (c *charges) release(p *podState) {
	c.hours.end(p)
	ch := &p.charge
	for _, b := range ch.to {
		b.ledger.Release(p.pod.UID, ch.usage, ch.claims)
		f := b.borrowingParent()
		if f != nil {
			c.holds = c.families.freed(b, ch.usage)
		}
		c.agenda.markStatus(b)
		if c.topology.Lookup(b.key) != nil {
			c.agenda.wake(b)
		}
		// A pod charged to a member of a borrowing family need not be charged to the
		// family's parent (it may be pinned to a budget that changed parents since).
		if f != nil && c.topology.Alive(f) && !slices.Contains(ch.to, f) {
			c.agenda.wake(f)
		}
	}
	ch.to, ch.usage, ch.claims = nil, nil, nil
	c.releases.Remove(p)
}

// end releases the pod's charge for good (it waits again, or is gone): the budgets it
// was pinned to and the labels that covered it go with it.
func (c *charges) end(p *podState) {
	c.release(p)
	p.charge.pinned, p.charge.labels = nil, nil
}

// relabel covers a charged pod by labels from now on, pinned to pins, and moves its
// charge to cover (the coverage those labels give) if that changes where it is charged.
func (c *charges) relabel(p *podState, labels map[string]string, pins []BudgetKey, cover []*budget) {
	p.charge.labels, p.charge.pinned = labels, pins
	c.coverAdmitted(p, cover)
}

// recharge moves an admitted pod's charge, unchanged, to a new set of covering budgets
// (the budgets changed). It stays charged to the budgets it was pinned to when it was
// admitted, for as long as they exist.
func (c *charges) recharge(p *podState, cover []*budget) {
	usage, claims := p.charge.usage, p.charge.claims
	c.release(p)
	p.cover = cover
	c.chargeWith(p, usage, claims)
}

// shrink lowers an admitted pod's charge to what it uses now, where that is less (a
// resize down that the kubelet applied: PodUsage charges the larger of spec and status
// until then); a resource it uses more of stays charged as it was, and its claims stay
// the ones it was charged for. It reports whether the charge changed.
func (c *charges) shrink(p *podState) bool {
	if !sameClaimAmounts(p.claims(), p.charge.claims) {
		return false // its claims are pinned (the manager's finalizer): a view that differs is a late one
	}
	now, lower := p.usage(), amount.List(nil)
	for r, v := range p.charge.usage {
		if n := now[r]; n.Less(v) {
			if lower == nil {
				lower = p.charge.usage.Clone()
			}
			lower[r] = n
		}
	}
	if lower == nil {
		return false
	}
	claims := p.charge.claims
	c.release(p)
	c.chargeWith(p, lower, claims)
	return true
}

// sameClaimAmounts reports whether two lists charge the same claims the same.
func sameClaimAmounts(a, b []claimAmount) bool {
	return slices.EqualFunc(a, b, func(x, y claimAmount) bool { return x.Key == y.Key && x.Usage.Equal(y.Usage) })
}

// reflavor moves a charged pod's charge, as much as it was, to the flavors it reaches
// now (a Flavor was created, changed or deleted), if those are others.
func (c *charges) reflavor(p *podState) {
	var reach []string
	if c.flavored {
		reach = c.flavors.reach(&p.pod, p.flavor)
	}
	if slices.Equal(reach, p.reach) {
		return
	}
	usage, claims := onFlavors(withoutFlavors(p.charge.usage), reach), slices.Clone(p.charge.claims)
	for i, cl := range claims {
		claims[i].Usage = onFlavors(withoutFlavors(cl.Usage), reach)
	}
	c.release(p)
	p.place(p.flavor, reach)
	c.chargeWith(p, usage, claims)
}

// keysOf returns the keys of budgets (nil for none).
func keysOf(budgets []*budget) []BudgetKey {
	var out []BudgetKey
	for _, b := range budgets {
		out = append(out, b.key)
	}
	return out
}

// coverAdmitted records an admitted pod's new coverage, and moves its charge when that
// changes where it is charged.
func (c *charges) coverAdmitted(p *podState, cover []*budget) {
	if sameBudgets(c.chargeSet(p, cover), p.charge.to) {
		p.cover = cover
		return
	}
	c.recharge(p, cover)
}

// chargeSet is where an admitted pod with the given coverage is charged: its covering
// budgets, then the budgets it is pinned to that still exist.
func (c *charges) chargeSet(p *podState, cover []*budget) []*budget {
	out := cover
	for _, k := range p.charge.pinned {
		if b := c.topology.Lookup(k); b != nil && !slices.Contains(out, b) {
			if len(out) == len(cover) {
				out = slices.Clone(cover)
			}
			out = append(out, b)
		}
	}
	return out
}

// graceChanged notes a charged pod's grace period (its ReleaseAt), set or moved.
func (c *charges) graceChanged(p *podState) { c.releases.Fix(p) }

// terminating returns the charged pods within their grace period; the caller does not
// change the slice.
func (c *charges) terminating() []*podState { return c.releases.Items() }

// due returns a pod whose grace period ended by now, or nil.
func (c *charges) due(now time.Time) *podState {
	if p, ok := c.releases.Peek(); ok && !p.pod.ReleaseAt.After(now) {
		return p
	}
	return nil
}

// nextRelease is when the first grace period ends.
func (c *charges) nextRelease() (time.Time, bool) {
	if p, ok := c.releases.Peek(); ok {
		return p.pod.ReleaseAt, true
	}
	return time.Time{}, false
}

// expireHolds ends the lend holds that are due (families.expire), when the family part
// holds any.
func (c *charges) expireHolds(now time.Time) {
	if c.holds {
		c.holds = c.families.expire(now)
	}
}

// holdEnd is when the first lend hold ends, if any is held.
func (c *charges) holdEnd() (time.Time, bool) {
	if !c.holds {
		return time.Time{}, false
	}
	return c.families.nextEnd()
}
