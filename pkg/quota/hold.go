package quota

import (
	"time"

	corev1 "k8s.io/api/core/v1"
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
	amount corev1.ResourceList
	until  time.Time
}

// freed records, for a member of a borrowing family, the part of its hard that a
// released charge of usage frees (what it used within hard before and no longer does).
// It reports whether the part holds anything now (the core asks expire only then).
func (fs *families) freed(b *budget, usage corev1.ResourceList) (holds bool) {
	if fs.lendHold <= 0 || b.borrowingParent() == nil {
		return len(fs.holding) > 0
	}
	freed := corev1.ResourceList{}
	for r, u := range usage {
		h, limited := b.ledger.limit(r)
		if !limited || u.Sign() <= 0 {
			continue
		}
		after := b.ledger.usedOf(r) // already released
		before := after.DeepCopy()
		before.Add(u)
		if before.Cmp(h) > 0 {
			before = h.DeepCopy()
		}
		before.Sub(after)
		if before.Sign() > 0 {
			freed[r] = before
		}
	}
	if len(freed) == 0 {
		return len(fs.holding) > 0
	}
	s := familyOf(b)
	s.holds = append(s.holds, hold{amount: freed, until: fs.clock.Now().Add(fs.lendHold)})
	fs.holding[b] = struct{}{}
	return true
}

// useHolds lets an admitted pod's usage use up what its budget holds, oldest first:
// as much of the holds together as it asks for.
func (fs *families) useHolds(b *budget, usage corev1.ResourceList) {
	s := b.family
	if s == nil || len(s.holds) == 0 {
		return
	}
	for r, u := range usage {
		want := u.DeepCopy()
		for i := range s.holds {
			if want.Sign() <= 0 {
				break
			}
			left, ok := s.holds[i].amount[r]
			if !ok || left.Sign() <= 0 {
				continue
			}
			take := want.DeepCopy()
			if take.Cmp(left) > 0 {
				take = left.DeepCopy()
			}
			left.Sub(take)
			want.Sub(take)
			s.holds[i].amount[r] = left
		}
	}
}

// held is what b holds now for its own pods, per resource.
func held(b *budget, now time.Time) corev1.ResourceList {
	var out corev1.ResourceList
	if b.family == nil {
		return out
	}
	for _, h := range b.family.holds {
		if !h.until.After(now) {
			continue
		}
		for r, q := range h.amount {
			if q.Sign() <= 0 {
				continue
			}
			if out == nil {
				out = corev1.ResourceList{}
			}
			sum := out[r]
			sum.Add(q)
			out[r] = sum
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
func addHeld(f *budget, claims map[*budget]corev1.ResourceList, now time.Time) {
	for _, c := range f.children {
		held := held(c, now)
		if len(held) == 0 {
			continue
		}
		if claims[c] == nil {
			claims[c] = corev1.ResourceList{}
		}
		addTo(claims[c], held)
	}
}
