package quota

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
	"github.com/quotagate/quotagate/pkg/quota/internal/ledger"
)

// Borrowing between the budgets that name the same parent (their family;
// docs/budgets.md, "Borrowing: idle quota of the budgets under one parent"). A budget
// with a borrowingLimit may use more than its hard, up to its ceiling (the ledger's),
// out of what its siblings do not use. What each member lends is its lendable part of
// hard (lendingLimit, all of hard by default); the rest, hard minus lendable, is
// guaranteed to its own pods. The family must fit:
//
//	sum over members of max(0, used - guaranteed)  <=  sum over members of lendable
//
// for every resource, counting the members whose hard limits it. While nobody borrows
// this holds by itself (each member stays within its hard), so it is checked only in
// families with a borrower. The parent's own hard stays the ceiling of the whole family.
//
// Capacity lent is not taken back from a borrower while it runs (no preemption): a
// member that needs its lent capacity again waits, with reason NoLendableQuota, until
// borrowing pods end. Every pod of the family is charged to the parent too, so each
// release wakes the parent, and with it the pods that wait on the family.

// borrowingFamilies calls f with each distinct borrowing parent of the budgets of
// cover, in cover's order, with what the unit adds (add) to each of its children in
// cover, and the resources the unit adds a non-zero amount of, in name order; it stops
// at the first f that returns true, and reports whether one did.
func borrowingFamilies(cover []*budget, add demand,
	f func(p *budget, adds map[*budget]amount.List, names []corev1.ResourceName) bool) bool {
	var seen []*budget
	for _, b := range cover {
		p := b.borrowingParent()
		if p == nil || slices.Contains(seen, p) {
			continue
		}
		seen = append(seen, p)
		adds := map[*budget]amount.List{}
		names := map[corev1.ResourceName]bool{}
		for _, c := range cover {
			if c.place.Parent() != p {
				continue
			}
			adds[c] = add(c)
			for r, v := range adds[c] {
				if !v.IsZero() {
					names[r] = true
				}
			}
		}
		if f(p, adds, slices.Sorted(maps.Keys(names))) {
			return true
		}
	}
	return false
}

// familyExcess returns why a unit that adds add(b) to each budget b of cover does not
// fit in the family of a borrowing parent: the first parent (in cover's order) and
// resource (in name order) the sum would exceed. over is false when it fits.
//
// claims(f) is what the members of f's family claim for their own pods
// (families.claims), which a unit that borrows leaves them.
func familyExcess(cover []*budget, add demand, claims func(f *budget) map[*budget]amount.List) (w waitInfo, over bool) {
	over = borrowingFamilies(cover, add, func(p *budget, adds map[*budget]amount.List, names []corev1.ResourceName) bool {
		r, requested, over := p.familyExcess(adds, names, claims)
		if over {
			w = waitInfo{code: CodeNoLendable, budget: p, resource: r, requested: requested}
		}
		return over
	})
	return w, over
}

// familyExcess is the first resource of which the children of p, with adds charged to
// some of them, use more above their guaranteed parts than they lend together, and
// what the unit adds of it. A unit that borrows (takes a member beyond its hard) also
// leaves room for what the other members' pods waiting on the family ask within their
// own hard (lenderClaims): a borrower does not take quota its lender waits for, so a
// lender gets its share back as soon as borrowed pods end.
func (p *budget) familyExcess(adds map[*budget]amount.List, names []corev1.ResourceName, lenderClaims func(f *budget) map[*budget]amount.List) (corev1.ResourceName, amount.Amount, bool) {
	var claims map[*budget]amount.List
	for _, r := range names {
		var added amount.Amount
		borrows := false
		for c, a := range adds {
			v, ok := a[r]
			acc := c.ledger.Of(r)
			if !ok || !acc.Limited {
				continue
			}
			added = added.Add(v)
			borrows = borrows || acc.Hard.Less(acc.Used.Add(v))
		}
		if borrows && claims == nil {
			claims = lenderClaims(p)
		}
		pool, above := p.familySum(r, func(c *budget, acc ledger.Account) amount.Amount {
			use := acc.Used
			if a, ok := adds[c]; ok {
				return use.Add(a[r])
			}
			if !borrows {
				return use
			}
			// What its pods waiting on the family ask, up to its hard, is its own.
			if claim, ok := claims[c]; ok {
				use = amount.Max(use, amount.Min(use.Add(claim[r]), acc.Hard))
			}
			return use
		})
		if added.Sign() > 0 && pool.Less(above) {
			return r, added, true
		}
	}
	return "", amount.Amount{}, false
}

// familyStatus is what the family of p lends and uses above its guaranteed parts, for
// r: for messages.
func (p *budget) familyStatus(r corev1.ResourceName) (pool, above amount.Amount) {
	return p.familySum(r, func(_ *budget, acc ledger.Account) amount.Amount { return acc.Used })
}

// familySum adds up, over the children of p whose hard limits r, what they lend (pool)
// and how much of use(c) is above each one's guaranteed part, hard minus what it lends
// (above). use is given c's ledger.Account of r.
func (p *budget) familySum(r corev1.ResourceName, use func(c *budget, acc ledger.Account) amount.Amount) (pool, above amount.Amount) {
	for _, c := range p.place.Children() {
		acc := c.ledger.Of(r)
		if !acc.Limited {
			continue
		}
		pool = pool.Add(acc.Lendable)
		if over := use(c, acc).Sub(acc.Hard).Add(acc.Lendable); over.Sign() > 0 {
			above = above.Add(over)
		}
	}
	return pool, above
}

// claims is what the members of f's family claim for their own pods, which a borrower
// leaves them: what their waiting pods ask within their hard (lenderClaims, remembered
// for an admission pass by families.lenderClaims) and what they hold
// (families.useHolds).
func (fs *families) claims(f *budget) map[*budget]amount.List {
	claims := fs.lenderClaims(f)
	if len(fs.holding) > 0 && holdsAny(f) {
		claims = copyClaims(claims) // the pass's memo stays as lenderClaims gave it
		addHeld(f, claims, fs.clock.Now())
	}
	return claims
}

// waitsOnFamily reports whether a pod recorded in f's lendWaiters still waits, queued, for
// lendable quota in f's family (a pod that left the queues, deleted included, does not).
func waitsOnFamily(f *budget, p *podState) bool {
	return p.phase == phaseWaiting && p.wait.code == CodeNoLendable && p.wait.budget == f && p.queued.any()
}

// noteLendWaiter records that p waits on p's family parent f for lendable quota.
func noteLendWaiter(f *budget, p *podState) {
	s := familyOf(f)
	if s.lendWaiters == nil {
		s.lendWaiters = map[*podState]struct{}{}
		s.byMember = map[*budget]map[*podState]struct{}{}
	}
	s.lendWaiters[p] = struct{}{}
	indexMember(s, f, p)
}

// dropLendWaiter forgets a pod that no longer waits on s's family.
func dropLendWaiter(s *familyState, p *podState) {
	delete(s.lendWaiters, p)
	for _, c := range p.cover {
		delete(s.byMember[c], p)
	}
}

// lendWaiters returns the pods that wait on f's family for lendable quota, in admission
// order (each by its own key), and forgets those that no longer do (preemptionCore).
func (fs *families) lendWaiters(f *budget) []*podState {
	if f.family == nil {
		return nil
	}
	var out []*podState
	for p := range f.family.lendWaiters {
		if !waitsOnFamily(f, p) {
			dropLendWaiter(f.family, p) // lenderClaims prunes the same way
			continue
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *podState) int { return a.order.Compare(&b.order) })
	return out
}

// lenderClaims sums, for each child, what its pods that wait on the family
// (NoLendableQuota) ask within the child's own hard, leaving out the pods that are stuck
// for another reason (their claim would hold borrowers back for nothing, and a
// borrower that is a StrictFIFO head ahead of them would wait on them forever). Pods
// that no longer wait so are dropped here: only fail records them, and nothing else
// needs to forget them.
func lenderClaims(f *budget, stuck func(*podState) bool) map[*budget]amount.List {
	out := map[*budget]amount.List{}
	if f.family == nil {
		return out
	}
	for p := range f.family.lendWaiters {
		if !waitsOnFamily(f, p) {
			dropLendWaiter(f.family, p)
			continue
		}
		addLenderClaim(out, f, p, stuck)
	}
	return out
}

// addLenderClaim adds to out what p, a pod waiting on f's family, claims within its
// budgets' own hard (lenderClaims).
func addLenderClaim(out map[*budget]amount.List, f *budget, p *podState, stuck func(*podState) bool) {
	if stuck(p) || p.inBackoff {
		return // it could not take what it claims now
	}
	for _, c := range p.cover {
		if c.place.Parent() == f {
			addMemberClaim(out, c, p)
		}
	}
}

// addMemberClaim adds to out[c] what p, a pod waiting on the family of c's parent that
// could be admitted now, claims within c's own hard.
func addMemberClaim(out map[*budget]amount.List, c *budget, p *podState) {
	// Only what fits within c's own hard is c's to claim: a pod that would borrow is a
	// borrower, and borrowers do not hold each other back.
	for r, v := range p.waitUsage() {
		acc := c.ledger.Of(r)
		if !acc.Limited || acc.Hard.Less(acc.Used.Add(v)) {
			continue
		}
		if out[c] == nil {
			out[c] = amount.List{}
		}
		out[c][r] = out[c][r].Add(v)
	}
}

// familyNeverFits returns why a unit that adds add(b) to each budget b of cover can
// never be admitted by a borrowing family, even an empty one: what it needs above its
// budgets' guaranteed parts is more than the family lends.
func familyNeverFits(cover []*budget, add demand) (w waitInfo, never bool) {
	never = borrowingFamilies(cover, add, func(p *budget, adds map[*budget]amount.List, names []corev1.ResourceName) bool {
		for _, r := range names {
			var added amount.Amount
			for c, a := range adds {
				if c.ledger.Tracks(r) {
					added = added.Add(a[r])
				}
			}
			pool, above := p.familySum(r, func(c *budget, _ ledger.Account) amount.Amount { return adds[c][r] })
			if added.Sign() > 0 && pool.Less(above) {
				familyOf(p).parks = true
				w = waitInfo{code: CodeNeverFits, budget: p, resource: r, requested: added, family: true}
				return true
			}
		}
		return false
	})
	return w, never
}

// borrowingIn returns the budgets a just-charged pod takes beyond their hard: those that
// borrow and now use more than hard of a resource the pod asks for.
func borrowingIn(p *podState) []BudgetKey {
	var out []BudgetKey
	for _, b := range p.charge.budgets() {
		if !b.ledger.Borrows() {
			continue
		}
		for r, v := range p.charge.amounts() {
			if acc := b.ledger.Of(r); acc.Limited && !v.IsZero() && acc.Hard.Less(acc.Used) {
				out = append(out, b.key)
				break
			}
		}
	}
	return out
}

// lent is the part of b's hard its siblings use by borrowing, per resource (empty when
// none): the family's borrowing (what its members use beyond their hard) shared among
// the members that leave some of what they lend unused, in proportion to that unused
// part. Rounded down to the nano-unit, so the shares may add up to a little less.
// For a status: a list.
func (b *budget) lent() corev1.ResourceList {
	out := corev1.ResourceList{}
	f := b.borrowingParent()
	if f == nil {
		return out
	}
	for _, r := range b.ledger.Resources() {
		var borrowed, idle, mine amount.Amount
		for _, c := range f.place.Children() {
			acc := c.ledger.Of(r)
			if !acc.Limited {
				continue
			}
			if over := acc.Used.Sub(acc.Hard); over.Sign() > 0 {
				borrowed = borrowed.Add(over)
				continue
			}
			if unused := amount.Min(acc.Lendable, acc.Hard.Sub(acc.Used)); unused.Sign() > 0 {
				idle = idle.Add(unused)
				if c == b {
					mine = unused
				}
			}
		}
		if borrowed.Sign() <= 0 || mine.Sign() <= 0 {
			continue
		}
		// min(borrowed, idle) * mine / idle: it is at most mine.
		out[r] = b.ledger.Quantity(r, amount.Min(borrowed, idle).MulDiv(mine, idle))
	}
	return out
}
