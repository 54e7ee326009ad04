package quota

import (
	"cmp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Preemption victims (preempt.go): which running pods may go, in which order, asking
// whether a unit would fit without them, and whether a victim is still needed.

// victimUnits groups running pods into what is evicted together (a group's running
// members, all of them, when each of them may be preempted), leaving out the pods not
// known to run and any unit with a member of the preemptor's own unit, in the order
// they are taken: units whose eviction a PodDisruptionBudget refused last, and before
// them units admitted by borrowing (quotagate.io/borrowing) first, then lowest
// priority first, then most recently admitted first.
func (q *AdmissionQueue) victimUnits(pods []*podState, preemptor []*podState) [][]*podState {
	var out [][]*podState
	seen := map[*group]bool{}
	candidate := map[*podState]bool{}
	for _, p := range pods {
		candidate[p] = true
	}
	for _, p := range pods {
		if _, gone := q.evicted[p]; gone || !p.running() {
			continue
		}
		u := []*podState{p}
		if g := p.group; g != nil {
			if seen[g] {
				continue
			}
			seen[g] = true
			u = u[:0]
			for _, m := range g.members {
				if m.running() {
					u = append(u, m)
				}
			}
			if slices.ContainsFunc(u, func(m *podState) bool { _, gone := q.evicted[m]; return gone || !candidate[m] }) {
				continue // a member may not be preempted: none is
			}
			slices.SortFunc(u, compareUIDs)
		}
		if slices.ContainsFunc(u, func(m *podState) bool { return slices.Contains(preemptor, m) }) {
			continue
		}
		out = append(out, u)
	}
	// A unit ranks by its most valuable member: the highest priority, the earliest
	// admitted; it borrows when any member was admitted by borrowing.
	type rank struct {
		blocked      int // a PodDisruptionBudget refused its eviction: last (blocked.go)
		notBorrowing int
		prio         int32
		at           time.Time
	}
	key := func(u []*podState) rank {
		r := rank{notBorrowing: 1, prio: u[0].pod.Priority, at: u[0].admittedTime()}
		for _, m := range u {
			r.prio = max(r.prio, m.pod.Priority)
			if t := m.admittedTime(); t.Before(r.at) {
				r.at = t
			}
			if len(m.borrowing) > 0 {
				r.notBorrowing = 0
			}
			if _, ok := q.blockedAt[m]; ok {
				r.blocked = 1
			}
		}
		return r
	}
	slices.SortStableFunc(out, func(a, b []*podState) int {
		ka, kb := key(a), key(b)
		return cmp.Or(cmp.Compare(ka.blocked, kb.blocked), cmp.Compare(ka.notBorrowing, kb.notBorrowing), cmp.Compare(ka.prio, kb.prio), kb.at.Compare(ka.at), compareUIDs(a[0], b[0]))
	})
	return out
}

// running reports whether the pod is known to be ungated: seen so, or its ungate
// reported applied.
func (p *podState) running() bool {
	return p.phase == phaseCharged || (p.phase == phaseAssumed && !p.inFlight && !p.unresolved)
}

// admittedTime is when the pod was admitted, or created when the core first saw it
// running.
func (p *podState) admittedTime() time.Time {
	if !p.admittedAt.IsZero() {
		return p.admittedAt
	}
	return p.pod.Created
}

// hide takes pods' charges out of the ledgers, and show puts them back: to ask whether
// a unit would fit without them.
func hide(pods []*podState) {
	for _, p := range pods {
		for _, b := range p.chargedTo {
			b.release(p, p.chargedUsage, p.chargedClaims)
		}
	}
}

func show(pods []*podState) {
	for _, p := range pods {
		for _, b := range p.chargedTo {
			b.charge(p, p.chargedUsage, p.chargedClaims)
		}
	}
}

// PreemptionNeeded reports whether the pod is still to be evicted: it was chosen as a
// victim, it still runs and is not already terminating, the pod it makes room for still
// waits, and the room is still needed as it is now: with every other pod on its way out
// gone, and the pods ahead of it served first, the waiting pod fits once this one is
// gone too, and not before. Once it reports false for a pod, the pod is no longer a
// victim (the controller stops trying to evict it).
func (q *AdmissionQueue) PreemptionNeeded(uid types.UID) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	p := q.pods[uid]
	if p == nil {
		return false
	}
	rec, ok := q.victims[p]
	if !ok {
		return false
	}
	if !q.stillVictim(p) || !q.stillNeeded(p) {
		delete(q.victims, p)
		// The pods that counted it as leaving look again (they may need it now).
		if b := rec.preemptor().wait.budget; b != nil && q.alive(b) {
			q.wake(b)
		}
		return false
	}
	return true
}

// stillNeeded reports whether a victim's preemptor would fit with it gone, and not
// without it, every other pod on its way out counted as gone (the members of its own
// group go with it).
func (q *AdmissionQueue) stillNeeded(p *podState) bool {
	rec := q.victims[p]
	going := q.leaving()
	var mine []*podState
	for v, r := range q.victims {
		switch {
		case v == p || (p.group != nil && v.group == p.group && r == rec):
			mine = append(mine, v)
		case q.stillVictim(v): // not terminating yet (those are in leaving)
			going = append(going, v)
		}
	}
	hide(going)
	defer show(going)
	w := rec.preemptor().wait
	claims := q.preemptionClaims(rec.unit, w)
	fits := func() bool { return q.fitsAfter(claims, rec.budgets, rec.add, w) }
	if fits() {
		return false // the others make room enough
	}
	var floor reclaimFloor
	if rec.reason == PreemptReclaim {
		floor, _ = q.newReclaimFloor(claims, rec.budgets, rec.add, w)
	}
	hide(mine)
	defer show(mine)
	// Its sibling may have ended pods since it was chosen: it goes only while the
	// siblings keep their hard without it (reclaimfloor.go).
	return fits() && floor.holds()
}

// Evicted records that a victim's eviction was accepted: it counts as leaving from now
// on, before the pod's terminating view arrives, so that no room is taken from anyone
// twice, and it is no longer a victim.
func (q *AdmissionQueue) Evicted(uid types.UID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if p := q.pods[uid]; p != nil && p.phase != phaseWaiting {
		delete(q.victims, p)
		q.evicted[p] = struct{}{}
	}
}

// leaving is every charged pod on its way out that still counts: terminating (within
// its grace period) or evicted and not yet seen terminating.
func (q *AdmissionQueue) leaving() []*podState {
	going := slices.Clone(q.releases.pods)
	for p := range q.evicted {
		if p.pod.ReleaseAt.IsZero() {
			going = append(going, p)
		}
	}
	return going
}

func (q *AdmissionQueue) stillVictim(p *podState) bool {
	v, ok := q.victims[p]
	if !ok || !p.running() || !p.pod.ReleaseAt.IsZero() {
		return false
	}
	if _, gone := q.evicted[p]; gone {
		return false
	}
	w := v.preemptor()
	if q.pods[w.pod.UID] != w || w.phase != phaseWaiting {
		return false
	}
	// It still waits for what preemption answers: for a reclaim, room within its own
	// hard (pods of its budget admitted since may have taken that).
	_, _, ok = preemptionKind(v.unit, v.budgets, v.add, w.wait)
	return ok
}
