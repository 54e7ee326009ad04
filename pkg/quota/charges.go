package quota

import "slices"

// Charges: what each admitted or running pod is charged to. A pod is charged to every
// budget that covers it and to the budgets it is pinned to (the ones that admitted it),
// from the moment it is admitted until it ends; release gives the charge back and wakes
// only those budgets.

// charge charges the pod's usage to every budget that covers it, and to those it is
// pinned to.
func (q *AdmissionQueue) charge(p *podState) {
	p.chargedTo = slices.Clone(q.chargeSet(p, p.cover))
	p.chargedUsage, p.chargedClaims = p.usage(), p.claims()
	for _, b := range p.chargedTo {
		b.ledger.charge(p, p.chargedUsage, p.chargedClaims)
		if len(p.chargedClaims) > 0 {
			q.wakeClaimSharers(b, p.chargedClaims)
		}
		if b.family != nil {
			q.families.useHolds(b, p.chargedUsage)
		}
		q.markStatus(b)
	}
	if !p.pod.ReleaseAt.IsZero() {
		q.releases.set(p)
	}
}

// wakeClaimSharers moves back to active the pods waiting in b that use one of claims
// that b has just started to charge: what each of them would add shrank by that claim,
// so an answer "does not fit" given before may be wrong now.
func (q *AdmissionQueue) wakeClaimSharers(b *budget, claims []claimAmount) {
	var sharers []*entry
	for _, c := range claims {
		if b.ledger.claimUsers(c.Key) != 1 {
			continue // charged before this pod: nothing changed for the others
		}
		for e := range b.queues.in(queueInadmissible) {
			if usesClaim(e.pod.pod.Claims, c.Key) && !slices.Contains(sharers, e) {
				sharers = append(sharers, e)
			}
		}
	}
	for _, e := range sharers {
		q.moveEntry(e, queueActive)
	}
	if len(sharers) > 0 {
		q.markDirty(b)
	}
}

// usesClaim reports whether claims has the claim key.
func usesClaim(claims []ClaimCharge, key string) bool {
	return slices.ContainsFunc(claims, func(c ClaimCharge) bool { return c.Key == key })
}

// release gives the pod's charge back and wakes only the budgets it was charged to.
func (q *AdmissionQueue) release(p *podState) {
	for _, b := range p.chargedTo {
		b.ledger.release(p, p.chargedUsage, p.chargedClaims)
		f := b.borrowingParent()
		if f != nil {
			q.holds = q.families.freed(b, p.chargedUsage)
		}
		q.markStatus(b)
		if q.topology.lookup(b.key) != nil {
			q.wake(b)
		}
		// A pod charged to a member of a borrowing family need not be charged to the
		// family's parent (it may be pinned to a budget that changed parents since).
		if f != nil && q.topology.alive(f) && !slices.Contains(p.chargedTo, f) {
			q.wake(f)
		}
	}
	p.chargedTo, p.chargedUsage, p.chargedClaims = nil, nil, nil
	q.releases.remove(p)
}

// recharge moves an admitted pod's charge to a new set of covering budgets (its labels,
// its usage or the budgets changed). It stays charged to the budgets it was pinned to
// when it was admitted, for as long as they exist: relabelling a running pod does not
// free what it holds.
func (q *AdmissionQueue) recharge(p *podState, cover []*budget) {
	q.release(p)
	p.cover = cover
	q.charge(p)
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
func (q *AdmissionQueue) coverAdmitted(p *podState, cover []*budget) {
	if sameBudgets(q.chargeSet(p, cover), p.chargedTo) {
		p.cover = cover
		return
	}
	q.recharge(p, cover)
}

// chargeSet is where an admitted pod with the given coverage is charged: its covering
// budgets, then the budgets it is pinned to that still exist.
func (q *AdmissionQueue) chargeSet(p *podState, cover []*budget) []*budget {
	out := cover
	for _, k := range p.pinned {
		if b := q.topology.lookup(k); b != nil && !slices.Contains(out, b) {
			if len(out) == len(cover) {
				out = slices.Clone(cover)
			}
			out = append(out, b)
		}
	}
	return out
}
