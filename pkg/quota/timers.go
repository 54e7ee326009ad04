package quota

import (
	"time"
)

// The admitter's timers: backoffs, preemption cooldowns, grace periods, lend holds and
// the periodic flush.

// runTimers applies what the clock says: lend holds that ended, backoffs that ended,
// preemption cooldowns that ended, terminating pods past their grace period, and the
// periodic flush of inadmissible pods.
func (a *admitter) runTimers(now time.Time) {
	a.charges.expireHolds(now)
	a.place.runStarts(now)
	a.hours.runTimers(now)
	for p, ok := a.cooldowns.Peek(); ok && !p.preemptAt.After(now); p, ok = a.cooldowns.Peek() {
		a.cooldowns.Remove(p)
		if p.phase == phaseWaiting && !p.parked && !p.inBackoff {
			a.agenda.moveAll(p, queueInadmissible, queueActive) // evaluated again: it may preempt now
		}
	}
	for p, ok := a.backoff.Peek(); ok && !p.retryAt.After(now); p, ok = a.backoff.Peek() {
		a.backoff.Remove(p)
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
	if p, ok := a.backoff.Peek(); ok {
		consider(p.retryAt)
	}
	if p, ok := a.cooldowns.Peek(); ok {
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
	if t, ok := a.place.nextStart(); ok {
		consider(t)
	}
	if t, ok := a.hours.nextWakeup(); ok {
		consider(t)
	}
	return next, !next.IsZero()
}

// cancelRetry takes a pod out of backoff: it is admitted, or seen ungated.
func (a *admitter) cancelRetry(p *podState) { a.backoff.Remove(p) }

// coolDown records that a unit waits for its preemption cooldown
// (preemptions.cooldownOf): its pods say so, and are evaluated again when it ends.
func (a *admitter) coolDown(unit []*podState, pending preemptPending) {
	for _, p := range unit {
		p.wait.preempt = pending
		p.preemptAt = pending.at
		a.cooldowns.Fix(p)
	}
}

// forgetPod drops what the admitter keeps of a pod that ended or was deleted.
func (a *admitter) forgetPod(p *podState) {
	a.backoff.Remove(p)
	a.cooldowns.Remove(p)
	delete(a.immediate, p.pod.UID)
}
