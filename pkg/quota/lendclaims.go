package quota

import (
	"fmt"
	"maps"
	"slices"

	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
)

// What a family's waiting pods claim (lenderClaims) is read for every unit that would
// borrow, and it is a walk over every pod that waits on the family. In one admission
// pass, where each gated pod of a busy family may be looked at, that walk made the pass
// cost the square of the backlog (BenchmarkFamilyFreeingEvent: 14 s for one freed pod
// with 6,000 waiting). So a pass remembers it per family, each member's part apart, and
// forgets it when its inputs may have changed:
//
//   - a member's ledger (its used, through charge and release, a preemption's trial
//     claims included): each ledger counts its changes (ledger.Ledger.Changes), and that
//     member's part is computed again from its own waiting pods (byMember);
//   - which pods wait on the family and how (families.failed): a pod that starts to
//     wait on it is added to the memo, one that stops, or waits on another flavor,
//     forgets every memo;
//   - an admission that leaves a StrictFIFO queue (admitUnit: the pods behind its head
//     may claim now), and the pass's start and end. The admitted pods themselves stop
//     claiming when they are charged: their members' ledgers change.
//
// Nothing else changes a claim's inputs (a pod's cover, usage, backoff, the budgets'
// states) during a pass: those change in events between passes, or in the timers
// run at a pass's start. So a memo computed anew also files each waiting pod under the
// members that cover it now (reindexMembers): a pod that began to wait before a member
// was created or re-parented is that member's too.

// countPassesWith has the part memoize for the admitter's passes (ps).
func (fs *families) countPassesWith(ps *passes) { fs.passes = ps }

// memoGen is what a memo of claims is good for: one pass, while the part's claimsGen is
// what it was.
type memoGen struct{ pass, changes uint64 }

// memoNow is the memo's generation now; ok is false outside a pass, where there is no
// memo.
func (fs *families) memoNow() (g memoGen, ok bool) {
	n, open := fs.passes.current()
	return memoGen{pass: n, changes: fs.claimsGen}, open
}

// changed forgets every family's memo.
func (fs *families) changed() { fs.claimsGen++ }

// lenderClaims is lenderClaims(f), from the pass's memo when it is still good: a
// member whose ledger changed since has its entry computed again from its own waiting
// pods alone. The result is shared with the memo: read it, do not change it.
func (fs *families) lenderClaims(f *budget) map[*budget]amount.List {
	s := f.family
	gen, ok := fs.memoNow()
	if !ok || s == nil {
		return lenderClaims(f, fs.core.stuck)
	}
	if s.claims == nil || s.claimsMemo != gen {
		s.claims, s.claimsMemo = lenderClaims(f, fs.core.stuck), gen
		reindexMembers(f)
		s.claimsOf = make(map[*budget]uint64, len(f.place.Children()))
		for _, c := range f.place.Children() {
			s.claimsOf[c] = c.ledger.Changes()
		}
		return s.claims
	}
	for _, c := range f.place.Children() {
		if v := c.ledger.Changes(); s.claimsOf[c] != v {
			fs.memberClaims(f, c)
			s.claimsOf[c] = v
		}
	}
	if verifyClaimsMemo {
		if fresh := lenderClaims(f, fs.core.stuck); !sameLenderClaims(fresh, s.claims) {
			panic(fmt.Sprintf("the memo of %s's claims is %v, a fresh walk gives %v", f.key, s.claims, fresh))
		}
	}
	return s.claims
}

// indexMember files p under each member of f that covers it now (byMember).
func indexMember(s *familyState, f *budget, p *podState) {
	for _, c := range p.cover {
		if c.place.Parent() != f {
			continue
		}
		if s.byMember[c] == nil {
			s.byMember[c] = map[*podState]struct{}{}
		}
		s.byMember[c][p] = struct{}{}
	}
}

// reindexMembers files every pod that waits on f's family under the members that
// cover it now: a pod's cover and a member's parent change between passes (a relabel,
// a budget re-parented) while the pod stays a lend waiter, and byMember keeps the
// members that covered it when it was noted. A member's set is emptied, not dropped,
// so filing the pods again does not allocate it anew; one that is no longer among f's
// children (deleted, or re-parented) is dropped.
func reindexMembers(f *budget) {
	s := f.family
	for c, m := range s.byMember {
		if !slices.Contains(f.place.Children(), c) {
			delete(s.byMember, c)
			continue
		}
		clear(m)
	}
	for p := range s.lendWaiters {
		indexMember(s, f, p)
	}
}

// memberClaims computes c's entry of f's memo again, from the pods waiting on the family
// in c (byMember), and forgets those that no longer wait so.
func (fs *families) memberClaims(f, c *budget) {
	s := f.family
	delete(s.claims, c)
	for p := range s.byMember[c] {
		if !waitsOnFamily(f, p) {
			dropLendWaiter(s, p)
			continue
		}
		if !fs.core.stuck(p) && !p.inBackoff {
			addMemberClaim(s.claims, c, p)
		}
	}
}

// waitChanged keeps the memos right when p, of a unit that failed, now waits with w
// after old (p.wait is w already).
func (fs *families) waitChanged(p *podState, old, w waitInfo) {
	if old.code == w.code && old.budget == w.budget && old.flavor == w.flavor {
		return // it claims what it claimed
	}
	if old.code == CodeNoLendable {
		fs.changed() // it may have claimed in old.budget's family, on its old flavor
		return
	}
	if w.code != CodeNoLendable {
		return
	}
	// It did not wait on a family: it adds its claim to w.budget's memo, if still good,
	// in each member whose entry is (a member's entry computed again will find it).
	f := w.budget
	s := f.family
	if s == nil || s.claims == nil {
		return
	}
	if gen, ok := fs.memoNow(); !ok || s.claimsMemo != gen || !waitsOnFamily(f, p) || fs.core.stuck(p) || p.inBackoff {
		return
	}
	for _, c := range p.cover {
		if c.place.Parent() == f && s.claimsOf[c] == c.ledger.Changes() {
			addMemberClaim(s.claims, c, p)
		}
	}
}

// unitAdmitted wakes, as for room that grew, the borrowing families of an admitted
// unit whose waiting pods may claim less now (admittedFreesRoom).
func (fs *families) unitAdmitted(unit []*podState) {
	var seen []*budget
	for _, p := range unit {
		for _, b := range p.charge.budgets() {
			f := b.borrowingParent()
			if f == nil || slices.Contains(seen, f) {
				continue
			}
			seen = append(seen, f)
			if fs.admittedFreesRoom(f, unit) {
				fs.core.wakeIfAlive(f)
			}
		}
	}
}

// admittedFreesRoom reports whether admitting unit (each pod charged now) may have
// left borrowers of the family of a parent f more room, by making the pods waiting on
// the family claim less: a pod claims only what fits within its budget's hard beside
// what the budget uses (addLenderClaim), so a budget that uses more may see a waiting
// pod's claim end. It cannot when, for each resource, the budget now uses all its hard,
// or what its waiting pods still claim reaches it: the budget's share is then all its
// hard, as much as before. Otherwise the caller wakes f as for any room that grew.
// Called once the unit left the queues (so its pods claim nothing), it fills the pass's
// memo that the next borrower reads.
func (fs *families) admittedFreesRoom(f *budget, unit []*podState) bool {
	for _, p := range unit {
		for _, b := range p.charge.budgets() {
			if b.place.Parent() != f {
				continue
			}
			for _, r := range b.ledger.Resources() {
				acc := b.ledger.Of(r)
				if !acc.Limited || !acc.Used.Less(acc.Hard) {
					continue
				}
				if fs.lenderClaims(f)[b][r].Less(acc.Hard.Sub(acc.Used)) {
					return true
				}
			}
		}
	}
	return false
}

// copyClaims is a copy of claims that may be changed without changing claims.
func copyClaims(claims map[*budget]amount.List) map[*budget]amount.List {
	out := make(map[*budget]amount.List, len(claims))
	for c, a := range claims {
		out[c] = maps.Clone(a)
	}
	return out
}

// verifyClaimsMemo makes every use of a memo check it against a fresh walk, and panic
// when they differ; verifySettled makes Admit check, at its end, that no pod
// wakeAdmitted left alone would be admitted now (admitter.checkSettled). The package's
// tests set both (TestMain), its benchmarks do not.
var verifyClaimsMemo, verifySettled bool

// sameLenderClaims reports whether two lender claims hold the same amounts, an amount of zero
// being no amount.
func sameLenderClaims(a, b map[*budget]amount.List) bool {
	for _, pair := range [2][2]map[*budget]amount.List{{a, b}, {b, a}} {
		for c, x := range pair[0] {
			for r, v := range x {
				if v != pair[1][c][r] {
					return false
				}
			}
		}
	}
	return true
}
