package quota

import (
	"time"

	"k8s.io/utils/clock"

	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
)

// The family part (familyExcess says what a family is and how it must fit;
// families.yieldsTo and families.useHolds add fair sharing and lend holds;
// families.lenderClaims remembers what lenders claim for an admission pass). It owns
// what the family decisions leave behind: on each budget (budget.family, nil until the
// part first needs it) the pods waiting on its family for lendable quota, those that
// yielded by fair sharing, what it holds for its own pods and whether a pod was parked
// as never fitting in its family; and which budgets hold. AdmissionQueue holds it (the
// field families) and asks it only for a unit some budget of which has a borrowing
// parent (inBorrowingFamily), once per step of a decision:
//
//   - admits, whether a unit fits in the family, and whether it yields to a sibling's
//     pod by fair sharing (admitter); capacityWait, the first of the two alone;
//   - failed, when a unit waits; admitted, when one is admitted (its borrowing);
//   - freed and useHolds, when a charge is released or made (charges);
//   - expire and nextEnd, for the clock, only while freed or expire last said the
//     part holds something; forgetPod, forgetBudget and watched, when pods or budgets
//     go or a family changes; lendWaiters, for the preemption part (preemptionCore);
//   - familyNeverFits, when a pod or group is placed; lent and familyStatus, to read.
//
// A unit in budgets without a borrowing family never enters these files. What the part
// needs of the rest of the core is familyCore.

// familyCore is what the family part asks of the core that holds it.
type familyCore interface {
	// capacityWait says why a unit that adds add(b) to each budget b of budgets does
	// not fit as the ledgers are now (over is false when it fits; admitter).
	capacityWait(budgets []*budget, add demand) (w waitInfo, over bool)
	// stuck reports whether a waiting pod may not be admitted now whatever is freed.
	stuck(p *podState) bool
	// wakeIfAlive wakes b (wakeable) unless it was deleted or replaced.
	wakeIfAlive(b *budget)
	// activate moves a waiting pod's inadmissible entries back to active.
	activate(p *podState)
	// headFlavor is the flavor a waiting pod would be admitted on now, the flavors it
	// would be charged on there, and whether it fits there; "" and true when no flavor
	// applies to it (admitter.flavorFor).
	headFlavor(p *podState) (string, []string, bool)
	// usageShare is what c used, decayed with its parent f's usageHalfLife, as a share
	// of what f's family lends over as long (hourBooks.usageShare; 0 without one).
	usageShare(c, f *budget) float64
}

var _ familyCore = (*AdmissionQueue)(nil)

// families is the family part's state that is not on a budget.
type families struct {
	core     familyCore
	clock    clock.PassiveClock
	lendHold time.Duration        // WithLendHold
	holding  map[*budget]struct{} // budgets that hold freed quota for their own pods (useHolds)
	// passes is the admitter's count of its passes, and claimsGen moves on whenever
	// what a family's waiting pods claim may have changed other than through its
	// members' ledgers: a pass memoizes lenderClaims under both (families.lenderClaims).
	passes    *passes
	claimsGen uint64
}

func newFamilies(core familyCore, clk clock.PassiveClock, lendHold time.Duration) families {
	// Until an admitter counts passes for it (countPassesWith), no pass is ever open:
	// a part on its own, as in its table tests, has no memo.
	return families{core: core, clock: clk, lendHold: lendHold, holding: map[*budget]struct{}{}, passes: &passes{}}
}

// familyState is what the family part keeps on one budget.
type familyState struct {
	// lendWaiters are pods that waited on this budget's family for lendable quota when
	// last evaluated (checked and pruned when read: lenderClaims, lendWaiters), and
	// byMember the same pods by the member of the family they are in.
	lendWaiters map[*podState]struct{}
	byMember    map[*budget]map[*podState]struct{}
	// fairWaiters are pods that yielded to a sibling's pod by fair sharing
	// (families.yieldsTo), woken once it was decided.
	fairWaiters map[*podState]struct{}
	// holds are freed quota kept for its own pods for a while (families.useHolds).
	holds []hold
	// parks is set once a pod was parked as never fitting in its family: a change to
	// the family must then look at its pods again, even when nobody borrows.
	parks bool
	// claims is lenderClaims as this pass last computed it, good while the pass and
	// the part's claimsGen are as they were then (claimsMemo); each member's entry,
	// while the member's ledger version is the one in claimsOf.
	claims     map[*budget]amount.List
	claimsMemo memoGen
	claimsOf   map[*budget]uint64
}

// familyOf is b's family state, created on first use.
func familyOf(b *budget) *familyState {
	if b.family == nil {
		b.family = &familyState{}
	}
	return b.family
}

// admits decides for a unit that nothing but capacity blocks, adding add(b) to each
// budget b of budgets, first pod first: over when it does not fit (capacityWait), else
// yield when it waits for a sibling with a smaller share (yieldsTo); w says why.
func (fs *families) admits(first *podState, budgets []*budget, add demand, fl string) (w waitInfo, over, yield bool) {
	if w, over := fs.capacityWait(budgets, add); over {
		return w, true, false
	}
	w, yield = fs.yieldsTo(first, budgets, add, fl)
	return w, false, yield
}

// capacityWait is the admitter's capacityWait for a unit with a borrowing family. A
// family is checked before its parent's own hard: when borrowers fill the parent, the
// pod of a lender that asks for no more than its own hard waits for lent quota
// (NoLendableQuota, a claim borrowers respect, and what reclaim answers), not for the
// parent.
func (fs *families) capacityWait(budgets []*budget, add demand) (w waitInfo, over bool) {
	for _, b := range budgets {
		if b.place.Borrowers() == 0 {
			if w, over := insufficient(b, add); over {
				return w, true
			}
		}
	}
	if w, over := familyExcess(budgets, add, fs.claims); over {
		return w, true
	}
	for _, b := range budgets {
		if b.place.Borrowers() > 0 {
			if w, over := insufficient(b, add); over {
				return w, true
			}
		}
	}
	return waitInfo{}, false
}

// insufficient says why b has no room for add(b) under its ceiling, if it has none.
func insufficient(b *budget, add demand) (waitInfo, bool) {
	a := add(b)
	if r, over := b.ledger.Excess(a); over {
		return waitInfo{code: CodeInsufficient, budget: b, resource: r, requested: a[r]}, true
	}
	return waitInfo{}, false
}

// failed records a unit's pod p that now waits with w, after old: its claim on the
// family (lenderClaims) or its yield (families.yieldsTo), and wakes the pods that
// yielded to it. It returns the family whose borrowers p no longer holds back (it waits
// for something else now, or on another flavor), to be woken once the unit is placed
// (nil for none).
func (fs *families) failed(p *podState, old, w waitInfo) (wake *budget) {
	if old.code == CodeNoLendable && (w.code != CodeNoLendable || w.budget != old.budget || w.flavor != old.flavor) {
		wake = old.budget
	}
	fs.waitChanged(p, old, w)
	switch w.code {
	case CodeNoLendable:
		noteLendWaiter(w.budget, p)
	case CodeFairShare:
		noteFairWaiter(w.budget, p)
	}
	if w.code != CodeFairShare {
		fs.wakeFairWaiters(p) // the pod they yielded to may have been this one
	}
	return wake
}

// admitted returns the budgets a just-charged pod borrows in (borrowingIn), and wakes
// the pods that yielded to it.
func (fs *families) admitted(p *podState) []BudgetKey {
	borrowing := borrowingIn(p)
	fs.wakeFairWaiters(p)
	return borrowing
}

// forgetPod drops what b's family state records of a pod that ended or was deleted.
func (fs *families) forgetPod(b *budget, p *podState) {
	if s := b.family; s != nil {
		dropLendWaiter(s, p)
		delete(s.fairWaiters, p)
	}
}

// forgetBudget forgets a deleted budget's holds.
func (fs *families) forgetBudget(b *budget) { delete(fs.holding, b) }

// watched reports whether b's family must look at its pods again when it changes even
// though nobody borrows: some wait on it for lendable quota, or were parked in it as
// never fitting.
func (fs *families) watched(b *budget) bool {
	s := b.family
	return s != nil && (len(s.lendWaiters) > 0 || s.parks)
}
