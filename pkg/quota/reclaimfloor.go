package quota

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
)

// The floor of a reclaim (preemptions.decide; docs/budgets.md, "Taking lent quota
// back"): a reclaim takes back only what siblings borrow, never their own hard. Pods
// are whole, so a victim may free a sibling's hard as well as what it borrows (a pod of
// 4 CPU admitted at 1 CPU under hard 4 holds 1 borrowed and 3 of its own): such a
// victim is skipped, and a smaller one within the borrowed part is chosen instead, or
// nobody, and the lender waits for the borrowed pods to end.
//
// The floor is taken once per decision, with every pod already on its way out gone: for
// each sibling s of the lender (a member of the family that the unit's budgets are
// not), and each resource r it limits that is scarce for the unit (the unit does not
// fit for r alone) or that s uses beyond its hard, s keeps min(used, hard) of r. A
// resource neither scarce nor borrowed by s may go below s's hard with a victim: the
// lender does not take it, and nobody else needs it.

// reclaimFloor is what each sibling keeps through one reclaim: floor[s][r].
type reclaimFloor map[*budget]amount.List

// reclaimFloor takes the floor for a unit that waits with w on the family of
// w.budget, adding add(b) to each of budgets, with claims served first; the charges on
// their way out must be hidden already. scarce is the resources the unit does not fit
// for alone, in name order.
func (pr *preemptions) reclaimFloor(claims []*podState, budgets []*budget, add demand, w waitInfo) (floor reclaimFloor, scarce []corev1.ResourceName) {
	f := w.budget
	names := map[corev1.ResourceName]bool{}
	for _, c := range budgets {
		if c.place.Parent() != f {
			continue
		}
		for r, v := range add(c) {
			if !v.IsZero() {
				names[r] = true
			}
		}
	}
	for r := range names {
		only := func(b *budget) amount.List {
			if v, ok := add(b)[r]; ok {
				return amount.List{r: v}
			}
			return amount.List{}
		}
		if !pr.fitsAfter(claims, budgets, only, w) {
			scarce = append(scarce, r)
		}
	}
	slices.Sort(scarce)
	floor = reclaimFloor{}
	for _, s := range f.place.Children() {
		if slices.Contains(budgets, s) {
			continue
		}
		keep := amount.List{}
		for _, r := range s.ledger.Resources() {
			acc := s.ledger.Of(r)
			if acc.Hard.Less(acc.Used) {
				keep[r] = acc.Hard // it borrows r: down to its hard, no further
			} else if slices.Contains(scarce, r) {
				keep[r] = acc.Used // scarce and not borrowed: none of it
			}
		}
		if len(keep) > 0 {
			floor[s] = keep
		}
	}
	return floor, scarce
}

// holds reports whether every sibling keeps its floor with the victims chosen so far
// hidden (charges taken out of the ledgers).
func (fl reclaimFloor) holds() bool {
	for s, keep := range fl {
		for r, k := range keep {
			if s.ledger.Of(r).Used.Less(k) {
				return false
			}
		}
	}
	return true
}

// borrowsScarce returns the sibling under f through which a candidate borrows a scarce
// resource (with the victims chosen so far hidden): a member it is charged to that uses
// more than its hard of it, while the candidate uses some; nil when there is none.
func borrowsScarce(p *podState, f *budget, scarce []corev1.ResourceName) *budget {
	for _, s := range p.charge.budgets() {
		if s.place.Parent() != f || !s.ledger.Borrows() {
			continue
		}
		for _, r := range scarce {
			if acc := s.ledger.Of(r); acc.Limited && acc.Hard.Less(acc.Used) && !p.charge.amounts()[r].IsZero() {
				return s
			}
		}
	}
	return nil
}
