package quota

import (
	"time"
)

// The admitter's timers: backoffs, preemption cooldowns, grace periods, lend holds and
// the periodic flush.

// runTimers applies what the clock says, in this order: lend holds that ended, start
// rules whose verdict changed, the hours' timers, preemption cooldowns that ended,
// backoffs that ended, terminating pods past their grace period, and the periodic flush
// of inadmissible pods. A pod whose backoff ended and that is not in its queues is
// placed again by the placer before the next backoff is looked at.
func (q *AdmissionQueue) runTimers(now time.Time) {
	q.charges.expireHolds(now)
	q.place.runStarts(now)
	q.hours.runTimers(now)
	q.admit.endCooldowns(now)
	for p := q.admit.endBackoff(now); p != nil; p = q.admit.endBackoff(now) {
		q.place.settleWaiting(p)
	}
	for p := q.charges.due(now); p != nil; p = q.charges.due(now) {
		q.place.forget(p)
	}
	q.admit.flushIfDue(now)
}

// endCooldowns ends the preemption cooldowns due by now: a pod that waits in its queues
// is evaluated again, as it may preempt now.
func (a *admitter) endCooldowns(now time.Time) {
	for p, ok := a.cooldowns.Peek(); ok && !p.attempt.preemptAt.After(now); p, ok = a.cooldowns.Peek() {
		a.cooldowns.Remove(p)
		if p.phase == phaseWaiting && !p.parked && !p.inBackoff {
			a.agenda.moveAll(p, queueInadmissible, queueActive) // evaluated again: it may preempt now
		}
	}
}

// endBackoff ends the backoffs due by now, in order, until one ends for a waiting pod
// that is not in its queues: it returns that pod, for the caller to place again before
// it asks for the next; nil when no backoff is left due. An assumed pod's backoff ends
// with its admission handed out again, when its ungate is unresolved.
func (a *admitter) endBackoff(now time.Time) *podState {
	for p, ok := a.backoff.Peek(); ok && !p.attempt.retryAt.After(now); p, ok = a.backoff.Peek() {
		a.backoff.Remove(p)
		if p.phase == phaseAssumed {
			if p.attempt.unresolved && !p.attempt.inFlight {
				a.handOut(p) // try the ungate again; the charge still stands
			}
			continue
		}
		p.endBackoff()
		if p.phase != phaseWaiting {
			continue
		}
		if p.queued.any() && !p.parked {
			a.agenda.moveAll(p, queueBackoff, queueActive)
			continue
		}
		return p
	}
	return nil
}

// flushIfDue moves every inadmissible pod back to active once per flush interval.
func (a *admitter) flushIfDue(now time.Time) {
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
	next, ok := q.admit.nextWakeup()
	if t, due := q.place.nextStart(); due && (!ok || t.Before(next)) {
		next, ok = t, true
	}
	return next, ok
}

func (a *admitter) nextWakeup() (time.Time, bool) {
	var next time.Time
	consider := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	if p, ok := a.backoff.Peek(); ok {
		consider(p.attempt.retryAt)
	}
	if p, ok := a.cooldowns.Peek(); ok {
		consider(p.attempt.preemptAt)
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
	if t, ok := a.hours.nextWakeup(); ok {
		consider(t)
	}
	return next, !next.IsZero()
}

// cancelRetry takes a pod out of backoff: it is admitted, or seen ungated.
func (a *admitter) cancelRetry(p *podState) { a.backoff.Remove(p) }

// seenUngated settles an assumed pod seen without its gate: its ungate applied, so
// it is not unresolved, and no retry of it is needed.
func (a *admitter) seenUngated(p *podState) {
	p.attempt.unresolved = false
	a.cancelRetry(p)
}

// coolDown records that a unit waits for its preemption cooldown
// (preemptions.cooldownOf): its pods say so, and are evaluated again when it ends.
func (a *admitter) coolDown(unit []*podState, pending preemptPending) {
	for _, p := range unit {
		p.coolDown(pending)
		p.attempt.preemptAt = pending.at
		a.cooldowns.Fix(p)
	}
}

// forgetPod drops what the admitter keeps of a pod that ended or was deleted.
func (a *admitter) forgetPod(p *podState) {
	a.backoff.Remove(p)
	a.cooldowns.Remove(p)
	delete(a.immediate, p.pod.UID)
}
