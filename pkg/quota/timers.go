package quota

import (
	"container/heap"
	"time"
)

// timerHeap orders pods by a time (retry or release), tracking each pod's position.
type timerHeap struct {
	pods  []*podState
	at    func(*podState) time.Time
	index func(*podState) *int
}

var _ heap.Interface = (*timerHeap)(nil)

func (h *timerHeap) Len() int           { return len(h.pods) }
func (h *timerHeap) Less(i, j int) bool { return h.at(h.pods[i]).Before(h.at(h.pods[j])) }
func (h *timerHeap) Swap(i, j int) {
	h.pods[i], h.pods[j] = h.pods[j], h.pods[i]
	*h.index(h.pods[i]) = i
	*h.index(h.pods[j]) = j
}
func (h *timerHeap) Push(x any) {
	p := x.(*podState)
	*h.index(p) = len(h.pods)
	h.pods = append(h.pods, p)
}
func (h *timerHeap) Pop() any {
	old := h.pods
	p := old[len(old)-1]
	old[len(old)-1] = nil
	h.pods = old[:len(old)-1]
	*h.index(p) = -1
	return p
}

// set adds p or moves it to its new time.
func (h *timerHeap) set(p *podState) {
	if i := *h.index(p); i >= 0 {
		heap.Fix(h, i)
		return
	}
	heap.Push(h, p)
}

func (h *timerHeap) remove(p *podState) {
	if i := *h.index(p); i >= 0 {
		heap.Remove(h, i)
	}
}

func (h *timerHeap) min() *podState {
	if len(h.pods) == 0 {
		return nil
	}
	return h.pods[0]
}

// The admitter's timers: backoffs, preemption cooldowns, grace periods, lend holds and
// the periodic flush.

// runTimers applies what the clock says: lend holds that ended, backoffs that ended,
// preemption cooldowns that ended, terminating pods past their grace period, and the
// periodic flush of inadmissible pods.
func (a *admitter) runTimers(now time.Time) {
	a.charges.expireHolds(now)
	for p := a.cooldowns.min(); p != nil && !p.preemptAt.After(now); p = a.cooldowns.min() {
		a.cooldowns.remove(p)
		if p.phase == phaseWaiting && !p.parked && !p.inBackoff {
			a.agenda.moveAll(p, queueInadmissible, queueActive) // evaluated again: it may preempt now
		}
	}
	for p := a.backoff.min(); p != nil && !p.retryAt.After(now); p = a.backoff.min() {
		a.backoff.remove(p)
		if p.phase == phaseAssumed {
			if p.unresolved && !p.inFlight {
				a.handOut(p) // try the ungate again; the charge still stands
			}
			continue
		}
		p.inBackoff = false
		if p.phase != phaseWaiting {
			continue
		}
		if len(p.entries) > 0 && !p.parked {
			a.agenda.moveAll(p, queueBackoff, queueActive)
		} else {
			a.place.settleWaiting(p)
		}
	}
	for p := a.charges.due(now); p != nil; p = a.charges.due(now) {
		a.place.forget(p)
	}
	if now.Sub(a.lastFlush) >= a.opts.flushInterval {
		a.agenda.flush()
		a.lastFlush = now
	}
}

// NextWakeup returns when Admit should run again even if no event arrives: the first
// backoff end, grace-period end or flush, if any is due.
func (q *AdmissionQueue) NextWakeup() (time.Time, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.admit.nextWakeup()
}

func (a *admitter) nextWakeup() (time.Time, bool) {
	var next time.Time
	consider := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	if p := a.backoff.min(); p != nil {
		consider(p.retryAt)
	}
	if p := a.cooldowns.min(); p != nil {
		consider(p.preemptAt)
	}
	if t, ok := a.charges.nextRelease(); ok {
		consider(t)
	}
	if a.agenda.inadmissible() {
		consider(a.lastFlush.Add(a.opts.flushInterval))
	}
	if t, ok := a.charges.holdEnd(); ok {
		consider(t)
	}
	return next, !next.IsZero()
}

// cancelRetry takes a pod out of backoff: it is admitted, or seen ungated.
func (a *admitter) cancelRetry(p *podState) { a.backoff.remove(p) }

// coolDown records that a unit waits for its preemption cooldown (preemptcooldown.go):
// its pods say so, and are evaluated again when it ends.
func (a *admitter) coolDown(unit []*podState, pending preemptPending) {
	for _, p := range unit {
		p.wait.preempt = pending
		p.preemptAt = pending.at
		a.cooldowns.set(p)
	}
}

// forgetPod drops what the admitter keeps of a pod that ended or was deleted.
func (a *admitter) forgetPod(p *podState) {
	a.backoff.remove(p)
	a.cooldowns.remove(p)
	delete(a.immediate, p.pod.UID)
}
