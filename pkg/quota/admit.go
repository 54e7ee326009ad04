package quota

import (
	"container/heap"
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
		for len(q.dirty) > 0 {
			b := q.dirty[0]
			e := b.active.min()
			if e == nil || !b.admitting || (b.strict() && !sameUnit(b.strictHead(), e)) {
				heap.Pop(&q.dirty)
				continue
			}
			q.evaluate(e.pod)
		}
		if !q.recheckWakes() {
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
	for _, b := range p.cover {
		if r, over := b.excess(p.pod.Usage); over {
			q.fail(unit, waitInfo{code: CodeInsufficient, budget: b, resource: r, requested: p.pod.Usage[r]})
			return
		}
	}
	q.admitUnit(unit, Reason{Code: CodeFits, Message: fitsMessage(nil, p.cover)})
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
		if h := b.strictHead(); h != nil && !inUnit(h.pod) {
			return waitInfo{code: CodeBehindHead, budget: b, ahead: h.pod.pod.PodRef}, true
		}
	}
	return waitInfo{}, false
}

// fail records why the unit waits and moves it from active to inadmissible in every
// budget: only an event in the budget that blocks it can change the answer.
func (q *AdmissionQueue) fail(unit []*podState, w waitInfo) {
	for _, p := range unit {
		p.wait = w
		q.moveAll(p, queueActive, queueInadmissible)
	}
}
