package quota

import (
	"math"

	corev1 "k8s.io/api/core/v1"

	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
)

// Fair sharing (docs/budgets.md, "Fair sharing"). When
// the budgets under a borrowing parent compete for what the family lends, the one
// whose borrowing would be the smallest share of it goes first, whatever the
// priorities across budgets; within a budget, admission order stands.
//
// A budget's share is its dominant share, after Kueue's: over the resources, the most
// it uses beyond its hard, as a fraction of what the family lends of that resource,
// divided by its weight (spec.fairSharing.weight, 1 by default; weight 0 borrows only
// what no sibling of positive weight waits for). A unit that would borrow yields to
// the head of a sibling that would borrow too, would end with a smaller share (or the
// same share, and is ahead in admission order), and fits now: the unit waits
// (CodeFairShare) and the sibling's head is evaluated in the same Admit. On flavors, a
// unit competes only with heads that would go on its flavor now, and shares are of
// what the family lends of that flavor: the head then picks the same flavor, and the
// same strict order holds there. When that head
// is admitted or fails, the units that yielded to it are evaluated again. Yielding
// follows the shares strictly, so no two units yield to each other, and an Admit ends.
//
// With memory (the parent's spec.fairSharing.usageHalfLife), each share adds what the
// budget used, decayed with that half-life, over what the family would use lending all
// it lends for ever (its lendable pool times halfLife/ln 2, the most a decayed sum can
// reach), dominant over the resources, divided by its weight (memories.share).
// It is read as it was when the admission pass began, so it is the same constant for
// a budget all through a pass, and the strict order above holds.

// yieldsTo returns why a unit that fits, adding add(b) to each budget b of budgets,
// waits for a sibling with a smaller share, and wakes that sibling's head; ok is false
// when it goes now. first is the unit's first pod (its admission order), fl the flavor
// it goes on ("" for none).
func (fs *families) yieldsTo(first *podState, budgets []*budget, add demand, fl string) (waitInfo, bool) {
	var w waitInfo
	yield := borrowingFamilies(budgets, add, func(f *budget, adds map[*budget]amount.List, _ []corev1.ResourceName) bool {
		mine, borrows := -1.0, false
		for c, a := range adds {
			if s, b := c.shareWith(f, a); b {
				borrows = true
				mine = max(mine, s+fs.core.usageShare(c, f))
			}
		}
		if !borrows {
			return false
		}
		for _, d := range f.place.Children() {
			if _, in := adds[d]; in || !d.ledger.Borrows() {
				continue
			}
			h := fs.fairHead(d)
			if h == nil {
				continue
			}
			usage, hAdds := h.usage(), h.adds
			if fl != "" {
				// The unit goes on flavor fl: it competes with a head that goes there too,
				// for what the family lends of fl, and their shares are of that.
				hf, reach, fits := fs.core.headFlavor(h)
				if !fits || hf != fl {
					continue
				}
				usage, hAdds = onFlavors(usage, reach), h.addsOn(reach)
			}
			theirs, b := d.shareWith(f, usage)
			theirs += fs.core.usageShare(d, f)
			if !b || theirs > mine || (theirs == mine && h.order.Compare(&first.order) >= 0) {
				continue
			}
			if _, over := fs.core.capacityWait(h.cover, hAdds); over {
				continue // it cannot go now either: nothing to yield to
			}
			fs.core.activate(h)
			w = waitInfo{code: CodeFairShare, budget: f, ahead: h.pod.PodRef}
			return true
		}
		return false
	})
	return w, yield
}

// fairHead is the first gated pod of d in admission order that could be admitted now
// for all that order and state say: not in backoff, not parked, not stuck, not in a
// group (a group's turn is its own); nil when there is none.
func (fs *families) fairHead(d *budget) *podState {
	var h *entry
	for _, e := range []*entry{d.queues.activeHead(), d.queues.inadmissibleHead()} {
		if e != nil && (h == nil || e.pod.order.Compare(&h.pod.order) < 0) {
			h = e
		}
	}
	if h == nil || h.pod.group != nil || h.pod.inBackoff || fs.core.stuck(h.pod) {
		return nil
	}
	return h.pod
}

// shareWith is b's dominant share of what the family of f lends, with add charged to
// it, over its weight, and whether it would borrow at all (use beyond its hard).
func (b *budget) shareWith(f *budget, add amount.List) (share float64, borrows bool) {
	for _, r := range b.ledger.Resources() {
		acc := b.ledger.Of(r)
		over := acc.Used.Add(add[r]).Sub(acc.Hard)
		if over.Sign() <= 0 {
			continue
		}
		borrows = true
		pool, _ := f.familyStatus(r)
		s := math.Inf(1)
		if pool.Sign() > 0 {
			s = over.Float64() / pool.Float64()
		}
		share = max(share, s)
	}
	if !borrows {
		return 0, false
	}
	return b.weighted(share), true
}

// weighted is a share of b over its weight (spec.fairSharing.weight, 1 when unset): a
// budget of weight 0 that has any share has an infinite one, so it yields to every
// sibling of positive weight.
func (b *budget) weighted(share float64) float64 {
	weight := 1.0
	if b.spec.Weight != nil {
		weight = b.spec.Weight.AsApproximateFloat64()
	}
	switch {
	case weight > 0:
		return share / weight
	case share > 0:
		return math.Inf(1)
	}
	return 0
}

// noteFairWaiter records that a unit's pod yielded in the family of f; wakeFairWaiters
// moves those pods back to active, once the head they yielded to was decided.
func noteFairWaiter(f *budget, p *podState) {
	s := familyOf(f)
	if s.fairWaiters == nil {
		s.fairWaiters = map[*podState]struct{}{}
	}
	s.fairWaiters[p] = struct{}{}
}

// wakeFairWaiters wakes the pods that yielded in the families p is a member of.
func (fs *families) wakeFairWaiters(p *podState) {
	for _, b := range p.cover {
		f := b.borrowingParent()
		if f == nil || f.family == nil || len(f.family.fairWaiters) == 0 {
			continue
		}
		for w := range f.family.fairWaiters {
			if w != p && w.phase == phaseWaiting && !w.forgotten {
				fs.core.activate(w)
			}
		}
		clear(f.family.fairWaiters)
	}
}
