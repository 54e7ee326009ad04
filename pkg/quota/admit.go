package quota

import (
	"maps"
	"slices"
	"time"
)

// Admission is one decision: the pod may be ungated. Its usage is already charged to
// Budgets (reserved) when Admit returns it; the controller sends the patch and reports
// the outcome with Done.
type Admission struct {
	Pod PodRef `json:"pod"`
	// Budgets the pod is charged to (for the admitted-by annotation); empty when no
	// budget covers it.
	Budgets []BudgetKey `json:"budgets,omitempty"`
	// Borrowing are the budgets of Budgets it is admitted beyond the hard of, by
	// borrowing under their parent (for the borrowing annotation); empty when none.
	Borrowing []BudgetKey `json:"borrowing,omitempty"`
	// Group is the pod's group, if any; a group's admissions come in one batch.
	Group  string `json:"group,omitempty"`
	Reason Reason `json:"reason"`
	// Created is the pod's creation time, for the wait-time metric.
	Created time.Time `json:"created"`
}

// Admit evaluates the budgets whose queues changed since the last call (and whatever
// the clock made due: backoffs, grace periods, the periodic flush) and returns the
// pods to ungate, each already reserved. It is cheap when nothing changed: only dirty
// budgets are looked at, and only their heads. Done must be called for every
// admission returned.
func (q *AdmissionQueue) Admit() []Admission {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.deciding = true
	defer func() { q.deciding = false }()
	q.runTimers(q.opts.clock.Now())
	if len(q.immediate) > 0 {
		pending := slices.SortedFunc(maps.Values(q.immediate), compareUIDs)
		clear(q.immediate)
		for _, p := range pending {
			if q.pods[p.pod.UID] == p && p.phase == phaseWaiting {
				q.settleWaiting(p)
			}
		}
	}
	for {
		for b := q.agenda.next(); b != nil; b = q.agenda.next() {
			e := b.queues.activeHead()
			if e == nil || !b.admitting || (b.strict() && !sameUnit(b.queues.strictHead(), e)) {
				q.agenda.pop()
				continue
			}
			q.evaluate(e.pod)
		}
		if !q.agenda.recheckWakes() {
			break
		}
	}
	out := q.out
	q.out = nil
	return out
}

// sameUnit reports whether two entries are the same pod or members of one group
// (evaluating one evaluates the whole group).
func sameUnit(a, b *entry) bool {
	return a == b || (a != nil && b != nil && a.pod.group != nil && a.pod.group == b.pod.group)
}

// evaluate decides for the pod at the head of an active queue (with its group, if it
// has one). Either way the pod leaves every active queue: admitted, or inadmissible
// everywhere with the reason.
func (q *AdmissionQueue) evaluate(p *podState) {
	if p.group != nil {
		q.evaluateGroup(p.group)
		return
	}
	unit := []*podState{p}
	if w, blocked := q.blocked(p.cover, func(h *podState) bool { return h == p }); blocked {
		q.fail(unit, w)
		return
	}
	if q.waitsForCapacity(unit, p.cover, p.adds) {
		return
	}
	q.admitUnit(unit, Reason{Code: CodeFits, Message: fitsMessage(nil, p.cover)})
}

// waitsForCapacity decides for a unit that nothing but capacity blocks, adding add(b)
// to each budget b of budgets: when it does not fit, it fails (and may preempt), and
// when it would borrow while a sibling with a smaller share goes first, it yields.
// It reports whether the unit waits; if not, the caller admits it. Only a unit with a
// borrowing family asks the family part, once.
func (q *AdmissionQueue) waitsForCapacity(unit []*podState, budgets []*budget, add demand) bool {
	var w waitInfo
	var over, yield bool
	if inBorrowingFamily(budgets) {
		w, over, yield = q.families.admits(unit[0], budgets, add)
	} else {
		w, over = ledgersWait(budgets, add)
	}
	switch {
	case over:
		q.fail(unit, w)
		q.preemptions.decide(unit, budgets, add, w)
	case yield:
		q.fail(unit, w)
	}
	return over || yield
}

// capacityWait returns why a unit that adds add(b) to each budget b of budgets does not
// fit (over is false when it fits): the first budget that has no room for it, in the
// order of budgets, or its borrowing family (families.capacityWait).
func (q *AdmissionQueue) capacityWait(budgets []*budget, add demand) (w waitInfo, over bool) {
	if inBorrowingFamily(budgets) {
		return q.families.capacityWait(budgets, add)
	}
	return ledgersWait(budgets, add)
}

// ledgersWait is capacityWait for budgets outside any borrowing family: the first
// budget, in the order of budgets, that has no room for what the unit adds to it.
func ledgersWait(budgets []*budget, add demand) (waitInfo, bool) {
	for _, b := range budgets {
		a := add(b)
		if r, over := b.ledger.excess(a); over {
			return waitInfo{code: CodeInsufficient, budget: b, resource: r, requested: a[r]}, true
		}
	}
	return waitInfo{}, false
}

// blocked returns why a unit may not be admitted now regardless of capacity: a
// covering budget does not admit, or a StrictFIFO budget has a pod of another unit at
// its head. Because admission order is one global order, the unit that is first
// everywhere is never blocked by order, so StrictFIFO budgets cannot wait on each other
// in a cycle.
func (q *AdmissionQueue) blocked(cover []*budget, inUnit func(*podState) bool) (waitInfo, bool) {
	for _, b := range cover {
		if !b.admitting {
			return waitInfo{code: CodeBudgetClosed, budget: b}, true
		}
	}
	for _, b := range cover {
		if !b.strict() {
			continue
		}
		if h := b.queues.strictHead(); h != nil && !inUnit(h.pod) {
			return waitInfo{code: CodeBehindHead, budget: b, ahead: h.pod.pod.PodRef}, true
		}
	}
	return waitInfo{}, false
}

// stuck reports whether a waiting pod may not be admitted now regardless of capacity
// (blocked): a covering budget does not admit, or a StrictFIFO head of another unit is
// ahead of it.
func (q *AdmissionQueue) stuck(p *podState) bool {
	_, blocked := q.blocked(p.cover, func(h *podState) bool { return h == p || (p.group != nil && h.group == p.group) })
	return blocked
}

// fail records why the unit waits and moves it from active to inadmissible in every
// budget: only an event in the budget that blocks it can change the answer. The family
// part records a wait in a borrowing family (families.failed).
func (q *AdmissionQueue) fail(unit []*podState, w waitInfo) {
	for _, p := range unit {
		old := p.wait
		p.wait = w
		q.agenda.moveAll(p, queueActive, queueInadmissible)
		if inBorrowingFamily(p.cover) || familyWait(old) || familyWait(w) {
			if f := q.families.failed(p, old, w); f != nil && q.topology.alive(f) {
				// It no longer claims lendable quota in that family: borrowers it held
				// back look again.
				defer q.agenda.wake(f)
			}
		}
	}
}

// familyWait reports whether a wait is on a borrowing family (the family part's).
func familyWait(w waitInfo) bool { return w.code == CodeNoLendable || w.code == CodeFairShare }

// admitNow admits a unit that needs no quota decision: no budget covers it, or its
// namespace is not opted in. Outside Admit the decision is deferred to the next Admit,
// which checks again (a budget created in between may cover the pods by then); it then
// reports false and the caller places the pods as usual meanwhile.
func (q *AdmissionQueue) admitNow(unit []*podState, reason Reason) bool {
	if q.deciding {
		q.admitUnit(unit, reason)
		return true
	}
	for _, p := range unit {
		q.immediate[p.pod.UID] = p
	}
	return false
}

// admitUnit admits pods in one step: each is charged to every budget that covers it
// (reserved before its patch is sent) and leaves every queue.
func (q *AdmissionQueue) admitUnit(unit []*podState, reason Reason) {
	for _, p := range unit {
		q.agenda.detach(p)
		q.backoff.remove(p)
		p.inBackoff, p.parked, p.wait = false, false, waitInfo{}
		p.phase = phaseAssumed
		p.pinned = keysOf(p.cover)
		p.admitted = reason
		p.admittedAt = q.opts.clock.Now()
		q.charges.charge(p)
		p.borrowing = nil
		if inBorrowingFamily(p.chargedTo) {
			p.borrowing = q.families.admitted(p)
		}
		q.handOut(p)
	}
}

// handOut returns the admission of an assumed pod from this Admit: the first time, or
// again to retry an ungate whose outcome is not known.
func (q *AdmissionQueue) handOut(p *podState) {
	p.inFlight = true
	q.out = append(q.out, Admission{
		Pod:       p.pod.PodRef,
		Budgets:   keysOf(p.chargedTo),
		Borrowing: p.borrowing,
		Group:     p.pod.Group,
		Reason:    p.admitted,
		Created:   p.pod.Created,
	})
}

// runTimers applies what the clock says: lend holds that ended, backoffs that ended,
// terminating pods past their grace period, and the periodic flush of inadmissible
// pods.
func (q *AdmissionQueue) runTimers(now time.Time) {
	q.charges.expireHolds(now)
	for p := q.backoff.min(); p != nil && !p.retryAt.After(now); p = q.backoff.min() {
		q.backoff.remove(p)
		if p.phase == phaseAssumed {
			if p.unresolved && !p.inFlight {
				q.handOut(p) // try the ungate again; the charge still stands
			}
			continue
		}
		p.inBackoff = false
		if p.phase != phaseWaiting {
			continue
		}
		if len(p.entries) > 0 && !p.parked {
			q.agenda.moveAll(p, queueBackoff, queueActive)
		} else {
			q.settleWaiting(p)
		}
	}
	for p := q.charges.due(now); p != nil; p = q.charges.due(now) {
		q.forget(p)
	}
	if now.Sub(q.lastFlush) >= q.opts.flushInterval {
		q.agenda.flush()
		q.lastFlush = now
	}
}

// NextWakeup returns when Admit should run again even if no event arrives: the first
// backoff end, grace-period end or flush, if any is due.
func (q *AdmissionQueue) NextWakeup() (time.Time, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var next time.Time
	consider := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	if p := q.backoff.min(); p != nil {
		consider(p.retryAt)
	}
	if t, ok := q.charges.nextRelease(); ok {
		consider(t)
	}
	if q.agenda.nInadm > 0 {
		consider(q.lastFlush.Add(q.opts.flushInterval))
	}
	if t, ok := q.charges.holdEnd(); ok {
		consider(t)
	}
	return next, !next.IsZero()
}
