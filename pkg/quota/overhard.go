package quota

import (
	"fmt"
	"slices"
)

// Reclaim at a window's end (docs/budgets.md, "When a window ends"). A window with
// endPolicy Reclaim that ends names itself in its budget's spec (Budget.ReclaimAfter).
// From then on the budget is brought back within what it may hold (its ceiling: hard,
// plus its borrowingLimit when it borrows under a parent) by evicting its running pods
// in the order of compareVictims: pods a PodDisruptionBudget refused last, pods
// admitted by borrowing first, then the lowest priority, then the most recently
// admitted; a group as a whole. Nobody waits for this room, so there is no preemptor
// and no cooldown. Every pod on its way out counts as gone first, so nothing is evicted
// twice for the same excess; and the victims that are not needed once the others go are
// spared. Once used is within the ceiling the budget stops reclaiming, until its spec
// names another window: a hard lowered later by hand, or a window that ends with Hold,
// evicts nothing.

// PreemptWindowEnd: the victim's budget uses more than its hard after a window with
// endPolicy Reclaim ended.
const PreemptWindowEnd PreemptionReason = "WindowEnd"

// setReclaimAfter arms b when its spec names a window it did not name before (was), and
// disarms it when it names none.
func (pr *preemptions) setReclaimAfter(b *budget, was string) {
	switch now := b.spec.ReclaimAfter; {
	case now == "":
		delete(pr.overHard, b)
	case now != was:
		pr.overHard[b] = struct{}{}
	}
}

// reclaiming says whether b is still being brought back within its ceiling.
func (pr *preemptions) reclaiming(b *budget) bool {
	_, armed := pr.overHard[b]
	return armed
}

// forgetBudget drops a deleted budget: its victims are no longer needed (stillVictim).
func (pr *preemptions) forgetBudget(b *budget) { delete(pr.overHard, b) }

// evictOverHard decides, for every armed budget, which of its running pods go so that
// it is within its ceiling, and disarms those already within (the admission pass calls
// it after its evaluations). Budgets in key order, so that decisions are deterministic.
func (pr *preemptions) evictOverHard() {
	if len(pr.overHard) == 0 {
		return
	}
	armed := make([]*budget, 0, len(pr.overHard))
	for b := range pr.overHard {
		armed = append(armed, b)
	}
	slices.SortFunc(armed, func(a, b *budget) int { return a.key.Compare(b.key) })
	for _, b := range armed {
		if _, over := b.ledger.OverCeiling(); !over {
			delete(pr.overHard, b) // within: the reclaim is done
			pr.core.markStatus(b)  // which its status says
			continue
		}
		pr.reclaimOverHard(b)
	}
}

// reclaimOverHard chooses victims among b's running pods until b is within its
// ceiling, every pod already on its way out counted as gone. When even all of them
// would not do (pods in flight count too), all of them go: nothing else can.
func (pr *preemptions) reclaimOverHard(b *budget) {
	going := pr.stillGoing()
	hide(going)
	defer show(going)
	over := func() bool { _, o := b.ledger.OverCeiling(); return o }
	if !over() {
		return
	}
	var chosen [][]*podState
	for _, cand := range pr.victimCandidates(slices.Collect(b.ledger.Charged()), nil) {
		hide(cand.unit)
		chosen = append(chosen, cand.unit)
		if !over() {
			break
		}
	}
	if !over() { // drop every victim the others make room without, latest choice kept
		for i := len(chosen) - 2; i >= 0; i-- {
			show(chosen[i])
			if !over() {
				chosen = slices.Delete(chosen, i, i+1)
				continue
			}
			hide(chosen[i])
		}
	}
	for _, c := range chosen {
		show(c)
	}
	if len(chosen) == 0 {
		return
	}
	rec := &victim{reason: PreemptWindowEnd, overHard: b}
	r, _ := b.ledger.OverCeiling()
	acc := b.ledger.Of(r)
	for _, c := range chosen {
		for _, v := range c {
			pr.victims[v], v.preemption.kept = rec, true
			pr.decided = append(pr.decided, overHardPreemption(v, b, b.text(r, acc.Used), b.text(r, acc.Ceiling)))
		}
	}
}

// stillGoing is every charged pod on its way out, and every victim chosen and not
// evicted yet that is still one; the victims that no longer are are dropped.
func (pr *preemptions) stillGoing() []*podState {
	going := pr.leaving()
	for p := range pr.victims {
		if !pr.stillVictim(p) {
			delete(pr.victims, p)
		} else {
			going = append(going, p) // not terminating yet: stillVictim says so
		}
	}
	return going
}

// overHardPreemption is the decision to evict v from b, which uses used of a resource
// it may hold ceiling of, with its message.
func overHardPreemption(v *podState, b *budget, used, ceiling string) Preemption {
	msg := fmt.Sprintf("window %s ended with endPolicy Reclaim, and %s uses more than it may (%s used, %s allowed); its pods of the lowest priority, the most recently admitted first, go until it is within",
		b.spec.ReclaimAfter, BudgetFor(v.pod.Namespace, b.key), used, ceiling)
	return Preemption{Victim: v.pod.PodRef, Reason: PreemptWindowEnd, Budget: b.key, From: b.key,
		BlockedTimeout: b.spec.BlockedTimeout, VictimMessage: msg}
}
