package quota

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Evictions a PodDisruptionBudget refuses (docs/budgets.md, "When a
// PodDisruptionBudget refuses"). A borrower with the built-in
// edit role may create a PDB that allows no disruption over its borrowing pods; the
// lender must not wait on it for ever when other victims would do. So a refused victim
// is blocked: from then on it ranks after every victim that is not (compareVictims), and
// the choice is made again at once without it. Only when no set of other victims makes
// room does it stay the victim, and the controller keeps trying it, or deletes it
// despite the PDB once the waiting pod's budget's blockedTimeout has passed since the
// first refusal (Preemption.BlockedTimeout).

// EvictionBlocked records that the eviction of a victim was refused (HTTP 429 from
// pods/eviction: a PodDisruptionBudget), and chooses again for the pod it makes room
// for, with the refused pod ranked last. retry reports whether it is still the victim:
// no other victims make room without it (the controller keeps trying it, and the new
// victims it is needed with, if any, come from Preemptions). since is when its eviction
// was first refused. When retry is false, other victims were chosen in its place (or
// it is no longer needed): the controller stops trying it.
func (q *AdmissionQueue) EvictionBlocked(uid types.UID) (retry bool, since time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	p := q.pods.get(uid)
	if p == nil {
		return false, time.Time{}
	}
	retry, since, wake := q.preemptions.refused(p, q.opts.clock.Now())
	if wake != nil && q.topology.Alive(wake) {
		q.agenda.wake(wake) // its next evaluation waits for the cooldown
	}
	return retry, since
}

// refused is EvictionBlocked for a pod the core knows, now. wake is the budget of a
// preemptor that must now wait for its cooldown before other victims are chosen (nil
// for none): its next evaluation says so, and sets the time.
func (pr *preemptions) refused(p *podState, now time.Time) (retry bool, since time.Time, wake *budget) {
	since, seen := pr.blockedAt[p]
	if !seen {
		since = now
		pr.blockedAt[p], p.preemption.kept = since, true
	}
	rec, ok := pr.victims[p]
	if !ok || !pr.stillVictim(p) {
		return false, since, nil
	}
	// Choose again without it: it is no longer on its way out, and ranks last. The
	// victims of the same decision (its group, or others chosen with it) stay chosen:
	// decide counts them as leaving, and they are still needed or spared as ever.
	delete(pr.victims, p)
	if g := p.group; g != nil {
		for v, r := range pr.victims {
			if r == rec && v.group == g {
				delete(pr.victims, v) // a group goes whole, or not at all
			}
		}
	}
	switch {
	case rec.overrun != nil:
		pr.victims[p] = rec // nobody else can go in its place
	case rec.overHard != nil:
		pr.reclaimOverHard(rec.overHard)
	default:
		w := rec.preemptor().wait
		if pending := pr.decide(rec.unit, rec.budgets, rec.add, w); !pending.at.IsZero() {
			return false, since, w.budget
		}
	}
	if _, again := pr.victims[p]; !again {
		return false, since, nil
	}
	// Still needed: the controller is at work on it already, so the decision is not
	// handed out twice.
	pr.decided = slices.DeleteFunc(pr.decided, func(d Preemption) bool { return d.Victim.UID == p.pod.UID })
	return true, since, nil
}
