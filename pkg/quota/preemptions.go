package quota

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/utils/clock"
)

// The preemption part (preemptions.decide says what it decides): it owns which pods are
// chosen as victims and for whom, which evictions were accepted and not yet seen
// terminating, which a PodDisruptionBudget refused, and the decisions not yet handed
// out. It reads and changes the ledgers only through the budgets it is handed, and
// hides and shows charges only while it decides, so every ledger is as before once a
// call returns. AdmissionQueue holds it (the field preemptions) under its lock, and
// asks it:
//
//   - decide, when a unit does not fit (admitter), which may say that the unit must wait
//     for its cooldown first (preemptions.cooldownOf);
//   - take, for Preemptions; needed, for PreemptionNeeded; evicted, for Evicted;
//     refused, for EvictionBlocked (EvictionBlocked);
//   - preemptorAdmitted, when a pod it chose victims for is admitted;
//   - forget, when a pod ends or is deleted.
//
// What it needs of the rest of the core is preemptionCore.

// preemptionCore is what the preemption part asks of the core that holds it.
type preemptionCore interface {
	// capacityWait says why a unit that adds add(b) to each budget b of budgets does
	// not fit as the ledgers are now (over is false when it fits; admitter).
	capacityWait(budgets []*budget, add demand) (w waitInfo, over bool)
	// stuck reports whether a waiting pod may not be admitted now whatever is freed: a
	// covering budget does not admit, or a StrictFIFO head of another unit is ahead.
	stuck(p *podState) bool
	// terminating returns the charged pods within their grace period; the caller does
	// not change the slice.
	terminating() []*podState
	// lendWaiters returns the pods waiting on f's family for lendable quota, in
	// admission order (families.lendWaiters).
	lendWaiters(f *budget) []*podState
	// markStatus marks b's status to be written (agenda.markStatus).
	markStatus(b *budget)
}

var _ preemptionCore = (*AdmissionQueue)(nil)

// preemptions is the preemption part's state.
type preemptions struct {
	core preemptionCore

	victims   map[*podState]*victim   // pods chosen for preemption, while still needed
	evicting  map[*podState]struct{}  // evicted (the eviction accepted), not yet seen terminating
	blockedAt map[*podState]time.Time // pods whose eviction a PDB refused, since when
	decided   []Preemption            // not yet returned by take
	// overHard are the budgets to bring back within their ceiling after a window with
	// endPolicy Reclaim ended (reclaimOverHard), until they are.
	overHard map[*budget]struct{}

	// The cooldown and its backoff (preemptions.cooldownOf): the clock they are counted
	// on, the cooldown (0: off) and the most it grows to, each namespace's doubling,
	// and the preemptors victims were chosen for, until they are judged.
	clock      clock.PassiveClock
	cooldown   time.Duration
	maxBackoff time.Duration
	backoffs   map[string]nsBackoff
	made       map[*podState]*roomMade
}

func newPreemptions(core preemptionCore, clk clock.PassiveClock, cooldown, maxBackoff time.Duration) preemptions {
	return preemptions{
		core:       core,
		victims:    map[*podState]*victim{},
		evicting:   map[*podState]struct{}{},
		blockedAt:  map[*podState]time.Time{},
		overHard:   map[*budget]struct{}{},
		clock:      clk,
		cooldown:   max(cooldown, 0),
		maxBackoff: maxBackoff,
		backoffs:   map[string]nsBackoff{},
		made:       map[*podState]*roomMade{},
	}
}

// take returns the decisions taken since the last call, in the order they were taken.
func (pr *preemptions) take() []Preemption {
	out := pr.decided
	pr.decided = nil
	return out
}

// forget drops what the part knows of a pod that ended or was deleted; the core asks
// only for a pod marked preemption. A preemptor is judged first (preemptorGone). A
// victim record whose preemptor it is stays until asked for (stillVictim then says
// no).
func (pr *preemptions) forget(p *podState) {
	pr.preemptorGone(p)
	delete(pr.victims, p)
	delete(pr.evicting, p)
	delete(pr.blockedAt, p)
}

// evicted records that a pod's eviction was accepted: it counts as leaving from now on,
// before its terminating view arrives, so that no room is taken from anyone twice, and
// it is no longer a victim. A waiting pod was not evicted: nothing changes.
func (pr *preemptions) evicted(p *podState) {
	if p.phase == phaseWaiting {
		return
	}
	if rec := pr.victims[p]; rec != nil {
		pr.madeRoom(rec)
	}
	delete(pr.victims, p)
	pr.evicting[p], p.preemption.kept = struct{}{}, true
}

// needed reports whether a victim is still to be evicted (PreemptionNeeded). When it
// no longer is, it stops being a victim, and wake is the budget whose pods counted it
// as leaving, to look again (nil for none; the caller wakes it if it still exists).
func (pr *preemptions) needed(p *podState) (ok bool, wake *budget) {
	rec, chosen := pr.victims[p]
	if !chosen {
		return false, nil
	}
	if !pr.stillVictim(p) || !pr.stillNeeded(p) {
		delete(pr.victims, p)
		return false, rec.wakes()
	}
	return true, nil
}

// leaving is every charged pod on its way out that still counts: terminating (within
// its grace period) or evicted and not yet seen terminating.
func (pr *preemptions) leaving() []*podState {
	going := slices.Clone(pr.core.terminating())
	for p := range pr.evicting {
		if p.pod.ReleaseAt.IsZero() {
			going = append(going, p)
		}
	}
	return going
}

// stillVictim reports whether a victim may still be evicted as chosen: it runs, is not
// on its way out, and the unit it makes room for still waits for what preemption
// answers.
func (pr *preemptions) stillVictim(p *podState) bool {
	v, ok := pr.victims[p]
	if !ok || !p.running() || !p.pod.ReleaseAt.IsZero() {
		return false
	}
	if _, gone := pr.evicting[p]; gone {
		return false
	}
	if v.overHard != nil {
		_, armed := pr.overHard[v.overHard]
		return armed
	}
	if v.overrun != nil {
		return true // it ran past its maximum: that does not change
	}
	w := v.preemptor()
	if w.forgotten || w.phase != phaseWaiting {
		return false
	}
	// It still waits for what preemption answers: for a reclaim, room within its own
	// hard (pods of its budget admitted since may have taken that).
	_, _, ok = preemptionKind(v.unit, v.budgets, v.add, w.wait)
	return ok
}

// stillNeeded reports whether a victim's preemptor would fit with it gone, and not
// without it, every other pod on its way out counted as gone (the members of its own
// group go with it).
func (pr *preemptions) stillNeeded(p *podState) bool {
	rec := pr.victims[p]
	going := pr.leaving()
	var mine []*podState
	for v, r := range pr.victims {
		switch {
		case v == p || (p.group != nil && v.group == p.group && r == rec):
			mine = append(mine, v)
		case pr.stillVictim(v): // not terminating yet (those are in leaving)
			going = append(going, v)
		}
	}
	hide(going)
	defer show(going)
	if rec.overHard != nil {
		_, over := rec.overHard.ledger.OverCeiling()
		return over // the others do not bring it within
	}
	if rec.overrun != nil {
		return true
	}
	w := rec.preemptor().wait
	claims := pr.claims(rec.unit, w)
	fits := func() bool { return pr.fitsAfter(claims, rec.budgets, rec.add, w) }
	if fits() {
		return false // the others make room enough
	}
	var floor reclaimFloor
	if rec.reason == PreemptReclaim {
		floor, _ = pr.reclaimFloor(claims, rec.budgets, rec.add, w)
	}
	hide(mine)
	defer show(mine)
	// Its sibling may have ended pods since it was chosen: it goes only while the
	// siblings keep their hard without it (reclaimFloor).
	return fits() && floor.holds()
}

// preemption is the decision to evict v for by, with its messages: room is where the
// room is made (roomBudget), from the budget a reclaimed victim borrows through.
func preemption(reason PreemptionReason, v, by *podState, w waitInfo, room, from *budget) Preemption {
	out := Preemption{Victim: v.pod.PodRef, Preemptor: by.pod.PodRef, Reason: reason, Budget: room.key, BlockedTimeout: room.spec.BlockedTimeout}
	switch reason {
	case PreemptReclaim:
		f := w.budget
		out.From, out.Parent = from.key, f.key
		say := func(ns string, who string) string {
			return fmt.Sprintf("%s takes back quota it lent under %s, which %s borrows, %s",
				BudgetFor(ns, out.Budget), f.key.Describe(), BudgetFor(ns, out.From), who)
		}
		out.VictimMessage = say(v.pod.Namespace, "for "+PodFor(v.pod.Namespace, by.pod.PodRef))
		out.PreemptorMessage = say(by.pod.Namespace, "from "+PodFor(by.pod.Namespace, v.pod.PodRef))
	case PreemptWithinBudget:
		out.From = room.key
		say := func(ns string) string {
			return fmt.Sprintf("%s (priority %d) does not fit in %s; pods of lower priority (%d) make room for it",
				PodFor(ns, by.pod.PodRef), by.pod.Priority, BudgetFor(ns, room.key), v.pod.Priority)
		}
		out.VictimMessage, out.PreemptorMessage = say(v.pod.Namespace), say(by.pod.Namespace)
	}
	return out
}
