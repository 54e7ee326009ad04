package quota

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Preemption victims (preemptions.decide): which running pods may go (compareVictims
// orders them), hiding their charges to ask whether a unit would fit without them, and
// the core's calls about a victim: is it still needed, was it evicted.

// victimCandidates groups running pods into what is evicted together (a group's
// running members, all of them, when each of them is among pods), in the order they
// are to be chosen (compareVictims). It leaves out what may not be
// preempted: a pod not known to run (waiting, or its ungate in flight or unresolved),
// one that counts as gone already (goneAlready), and any unit with a member of the
// preemptor's own unit.
func (pr *preemptions) victimCandidates(pods []*podState, preemptor []*podState) []victimCandidate {
	out := make([]victimCandidate, 0, len(pods))
	var seen map[*group]bool
	var among map[*podState]bool // pods as a set, made for the first group
	for i, p := range pods {
		if !p.running() || pr.goneAlready(p) {
			continue
		}
		u := pods[i : i+1 : i+1]
		if g := p.group; g != nil {
			if among == nil {
				seen, among = map[*group]bool{}, make(map[*podState]bool, len(pods))
				for _, c := range pods {
					among[c] = true
				}
			}
			if seen[g] {
				continue
			}
			seen[g] = true
			if u = pr.groupUnit(g, among); u == nil {
				continue // a member may not be preempted: none is
			}
		}
		if slices.ContainsFunc(u, func(m *podState) bool { return slices.Contains(preemptor, m) }) {
			continue
		}
		out = append(out, newVictimCandidate(u, pr.blockedAt))
	}
	slices.SortStableFunc(out, compareVictims)
	return out
}

// goneAlready reports whether a pod counts as gone already: its eviction was accepted,
// it was chosen as a victim, or it is terminating.
func (pr *preemptions) goneAlready(p *podState) bool {
	_, evicted := pr.evicting[p]
	return evicted || pr.victims[p] != nil || !p.pod.ReleaseAt.IsZero()
}

// groupUnit returns g's running members in UID order, or nil when one of them may not
// be preempted: not among the candidates, or gone already.
func (pr *preemptions) groupUnit(g *group, among map[*podState]bool) []*podState {
	var u []*podState
	for _, m := range g.members {
		if !m.running() {
			continue
		}
		if !among[m] || pr.goneAlready(m) {
			return nil
		}
		u = append(u, m)
	}
	slices.SortFunc(u, compareUIDs)
	return u
}

// running reports whether the pod is known to be ungated: seen so, or its ungate
// reported applied.
func (p *podState) running() bool {
	return p.phase == phaseCharged || (p.phase == phaseAssumed && p.attempt.settled())
}

// admittedTime is when the pod was admitted, or created when the core first saw it
// running.
func (p *podState) admittedTime() time.Time {
	if at := p.attempt.admittedTime(); !at.IsZero() {
		return at
	}
	return p.pod.Created
}

// hide takes pods' charges out of the ledgers, and show puts them back: to ask whether
// a unit would fit without them.
func hide(pods []*podState) {
	for _, p := range pods {
		for _, b := range p.charge.budgets() {
			b.ledger.Release(p.pod.UID, p.charge.amounts(), p.charge.claimAmounts())
		}
	}
}

func show(pods []*podState) {
	for _, p := range pods {
		for _, b := range p.charge.budgets() {
			b.ledger.Charge(p.pod.UID, p, p.charge.amounts(), p.pod.Usage, p.charge.claimAmounts())
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
	p := q.pods.get(uid)
	if p == nil {
		return false
	}
	needed, wake := q.preemptions.needed(p)
	// The pods that counted it as leaving look again (they may need it now).
	if wake != nil && q.topology.Alive(wake) {
		q.agenda.wake(wake)
	}
	return needed
}

// Evicted records that a victim's eviction was accepted: it counts as leaving from now
// on, before the pod's terminating view arrives, so that no room is taken from anyone
// twice, and it is no longer a victim.
func (q *AdmissionQueue) Evicted(uid types.UID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if p := q.pods.get(uid); p != nil {
		q.preemptions.evicted(p)
	}
}
