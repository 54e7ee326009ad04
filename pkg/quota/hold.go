package quota

import (
	"time"

	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
)

// Lend holds: no lend-and-reclaim loop. A lender's workload is a stream of pods: a Job
// re-creates a pod moments after the last one ends. If the quota the ended pod frees
// were lent at once, a borrower would take it in that moment, and the lender's next pod
// would reclaim it by eviction: one eviction per pod the lender runs. So the part of its
// hard a member's ended pod frees is held for that member's own pods for the lend hold
// (WithLendHold, 5 s by default): borrowers count it as the member's, as they count
// what its waiting pods ask for (lenderClaims). The member's next admitted pods use it
// up; what is left when the hold ends is lent again, and the family is woken then.

// hold is freed quota kept for a member's own pods until a time.
type hold struct {
	left  amount.List
	until time.Time
}

// freed records, for a member of a borrowing family, the part of its hard that a
// released charge of usage frees (what it used within hard before and no longer does).
// It reports whether the part holds anything now (the core asks expire only then).
func (fs *families) freed(b *budget, usage amount.List) (holds bool) {
	if fs.lendHold <= 0 || b.borrowingParent() == nil {
		return len(fs.holding) > 0
	}
	freed := amount.List{}
	for r, u := range usage {
		acc := b.ledger.Of(r)
		if !acc.Limited || u.Sign() <= 0 {
			continue
		}
		// What was used within hard before the release, less what is used now.
		if d := amount.Min(acc.Used.Add(u), acc.Hard).Sub(acc.Used); d.Sign() > 0 {
			freed[r] = d
		}
	}
	if len(freed) == 0 {
		return len(fs.holding) > 0
	}
	s := familyOf(b)
	s.holds = append(s.holds, hold{left: freed, until: fs.clock.Now().Add(fs.lendHold)})
	fs.holding[b] = struct{}{}
	return true
}

// useHolds lets an admitted pod's usage use up what its budget holds, oldest first:
// as much of the holds together as it asks for. A hold used up is dropped: it holds
// nothing until it ends, and a busy member frees and uses quota many times in a lend
// hold, so the holds read for each unit that would borrow (held) stay few.
func (fs *families) useHolds(b *budget, usage amount.List) {
	s := b.family
	if s == nil || len(s.holds) == 0 {
		return
	}
	for r, want := range usage {
		for i := range s.holds {
			if want.Sign() <= 0 {
				break
			}
			left, ok := s.holds[i].left[r]
			if !ok || left.Sign() <= 0 {
				continue
			}
			take := amount.Min(want, left)
			s.holds[i].left[r] = left.Sub(take)
			want = want.Sub(take)
		}
	}
	kept := s.holds[:0]
	for _, h := range s.holds {
		if positive(h.left) {
			kept = append(kept, h)
		}
	}
	clear(s.holds[len(kept):])
	s.holds = kept
	if len(s.holds) == 0 {
		delete(fs.holding, b)
	}
}

// positive reports whether a holds more than zero of some resource.
func positive(a amount.List) bool {
	for _, v := range a {
		if v.Sign() > 0 {
			return true
		}
	}
	return false
}

// holdsAny reports whether a child of f holds anything (held may still find that its
// holds have ended).
func holdsAny(f *budget) bool {
	for _, c := range f.place.Children() {
		if c.family != nil && len(c.family.holds) > 0 {
			return true
		}
	}
	return false
}

// held is what b holds now for its own pods, per resource.
func held(b *budget, now time.Time) amount.List {
	var out amount.List
	if b.family == nil {
		return out
	}
	for _, h := range b.family.holds {
		if !h.until.After(now) {
			continue
		}
		for r, v := range h.left {
			if v.Sign() <= 0 {
				continue
			}
			if out == nil {
				out = amount.List{}
			}
			out[r] = out[r].Add(v)
		}
	}
	return out
}

// expire drops the holds that ended by now and wakes the families that may lend them
// again. It reports whether the part still holds anything.
func (fs *families) expire(now time.Time) (holds bool) {
	for b := range fs.holding {
		s := b.family
		kept := s.holds[:0]
		for _, h := range s.holds {
			if h.until.After(now) {
				kept = append(kept, h)
			}
		}
		expired := len(kept) < len(s.holds)
		clear(s.holds[len(kept):])
		s.holds = kept
		if len(s.holds) == 0 {
			delete(fs.holding, b)
		}
		if f := b.borrowingParent(); expired && f != nil {
			fs.core.wakeIfAlive(f)
		}
	}
	return len(fs.holding) > 0
}

// nextEnd is when the first hold ends, if any.
func (fs *families) nextEnd() (time.Time, bool) {
	var next time.Time
	for b := range fs.holding {
		for _, h := range b.family.holds {
			if next.IsZero() || h.until.Before(next) {
				next = h.until
			}
		}
	}
	return next, !next.IsZero()
}

// addHeld adds what the children of f hold to claims (lenderClaims).
func addHeld(f *budget, claims map[*budget]amount.List, now time.Time) {
	for _, c := range f.place.Children() {
		held := held(c, now)
		if len(held) == 0 {
			continue
		}
		if claims[c] == nil {
			claims[c] = amount.List{}
		}
		claims[c].Add(held)
	}
}
