package quota

// The evictions of TestRandomizedAdmission: what the core decided to preempt
// (checkPreemptions, randomized_preempt_test.go) carried out as the controller would,
// against a PodDisruptionBudget that refuses some, with answers lost.

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
)

// evict carries out the evictions the core still needs; unless all is true, some are
// refused this time (a PodDisruptionBudget): the core is told (EvictionBlocked), and
// the victim is tried again later only when the core keeps it. An accepted eviction
// is reported (Evicted) and the pod goes at once, or at the next evict, as a pod
// terminating for a while does. Unless all is true, some are applied with the answer
// lost and the controller's fresh read failing too: the pod is on its way out while the
// core still counts it as a victim to evict (see evictUnheard).
func (w *world) evict(all bool) {
	for _, uid := range w.accepted {
		if p := w.pods[uid]; p != nil {
			w.deletePod(p)
		}
	}
	w.accepted, w.untold = w.accepted[:0], w.untold[:0]
	w.evictUnheard()
	var keep []types.UID
	queued := len(w.evicting)
	w.dropped = map[types.UID]bool{}
	defer func() { w.dropped = nil }()
	for _, uid := range w.evicting[:queued] {
		p := w.pods[uid]
		if p == nil || !w.q.PreemptionNeeded(uid) {
			w.dropped[uid] = true
			continue
		}
		if !all && w.rng.IntN(3) == 0 {
			// Refused by a PodDisruptionBudget: the core chooses other victims
			// first (handed out by the next Preemptions), or keeps this one.
			retry, _ := w.q.EvictionBlocked(uid)
			if retry {
				keep = append(keep, uid)
				w.logf("evict %s: refused, tried again", p.obj.Name)
			} else {
				w.dropped[uid] = true
				w.logf("evict %s: refused, other victims instead", p.obj.Name)
			}
			// What it decided instead is checked now, as it stands (and queued).
			if err := w.checkPreemptions(); err != nil && w.failed == nil {
				w.failed = fmt.Errorf("after %s's eviction was refused: %w", p.obj.Name, err)
			}
			continue
		}
		w.logf("evict %s", p.obj.Name)
		if !all && w.rng.IntN(5) == 0 {
			w.logf("evict %s: applied, the answer lost", p.obj.Name)
			w.unheard = append(w.unheard, uid)
			continue
		}
		w.evicted(uid)
		if !all && w.rng.IntN(2) == 0 {
			w.accepted = append(w.accepted, uid) // terminating until the next evict
			continue
		}
		w.deletePod(p)
	}
	w.evicting = append(keep, w.evicting[queued:]...) // and what refusals chose instead
}

// evictUnheard retries the evictions that were applied without the controller hearing
// of it. The informer shows the pod gone before the retry or after it (a lagging
// cache); the retry finds it gone (404) or terminating (accepted again) and reports it
// Evicted, also for a pod the core no longer knows. A pod whose eviction the core no
// longer needs is not retried, and goes all the same.
func (w *world) evictUnheard() {
	for _, uid := range w.unheard {
		p := w.pods[uid]
		if p != nil && w.rng.IntN(2) == 0 {
			w.deletePod(p)
			p = nil
		}
		told := p == nil || w.q.PreemptionNeeded(uid)
		switch {
		case told && p == nil:
			w.logf("evict %s again: gone, reported evicted", uid)
			w.q.Evicted(uid) // a pod the core no longer knows: nothing to count
		case told:
			w.logf("evict %s again: terminating, reported evicted", uid)
			w.evicted(uid)
		}
		if p != nil {
			w.accepted = append(w.accepted, uid)
		}
		if !told {
			w.logf("evict %s: no longer needed, not retried; terminating, the core not told", p.obj.Name)
			w.untold = append(w.untold, uid)
		}
	}
	w.unheard = w.unheard[:0]
}
