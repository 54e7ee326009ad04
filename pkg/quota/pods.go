package quota

import (
	"maps"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// UpsertPod tells the core the latest view of a pod (informer add or update). A
// terminal pod is forgotten and its charge released. A pod seen ungated for the first
// time is charged at once (it runs, whether or not it fits). An upsert never charges a
// pod twice: the informer's view of a pod the core admitted confirms the reservation.
func (q *AdmissionQueue) UpsertPod(pod Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	p := q.pods[pod.UID]
	switch {
	case pod.Terminal:
		if p != nil {
			q.forget(p)
		}
	case p == nil:
		q.addPod(pod)
	default:
		q.updatePod(p, pod)
	}
}

// DeletePod tells the core a pod is gone; its charge, if any, is released and only the
// budgets it was charged to are woken.
func (q *AdmissionQueue) DeletePod(uid types.UID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if p := q.pods[uid]; p != nil {
		q.forget(p)
	}
}

func (q *AdmissionQueue) addPod(pod Pod) {
	p := &podState{pod: pod, order: ownKey(&pod), backoffIndex: -1, releaseIndex: -1}
	q.pods[pod.UID] = p
	ns := q.podsNS[pod.Namespace]
	if ns == nil {
		ns = map[types.UID]*podState{}
		q.podsNS[pod.Namespace] = ns
	}
	ns[pod.UID] = p
	p.cover = q.coverage(&p.pod)
	q.joinGroup(p)
	if !pod.Gated {
		p.phase = phaseCharged
		q.charge(p)
		if p.group != nil {
			q.settleMember(p)
		}
		return
	}
	p.phase = phaseWaiting
	q.settleWaiting(p)
}

func (q *AdmissionQueue) updatePod(p *podState, pod Pod) {
	old := p.pod
	sameGroup := old.Group == pod.Group && old.GroupSize == pod.GroupSize && old.GroupError == pod.GroupError
	sameLabels := maps.Equal(old.Labels, pod.Labels)
	sameUsage := equality.Semantic.DeepEqual(old.Usage, pod.Usage)

	if p.phase == phaseWaiting {
		if pod.Gated && sameGroup && sameLabels && sameUsage && old.Priority == pod.Priority && old.Created.Equal(pod.Created) {
			p.pod = pod
			return
		}
		q.detach(p) // before p.pod changes: pending is given back with the old usage
		p.pod = pod
		p.cover = q.coverage(&p.pod)
		if !pod.Gated {
			// Ungated by someone else (the namespace's release, an admin): it runs now.
			q.backoff.remove(p)
			p.inBackoff, p.parked, p.wait = false, false, waitInfo{}
			p.phase = phaseCharged
			q.charge(p)
		}
		if !sameGroup {
			q.leaveGroup(p)
			q.joinGroup(p)
		}
		if p.phase == phaseWaiting {
			q.settleWaiting(p)
		} else if p.group != nil {
			q.settleMember(p)
		}
		return
	}

	// Admitted (assumed or charged). A gated view of an assumed pod is older than the
	// patch the core sent: it changes nothing (Done or the next view settles it).
	p.pod = pod
	if !pod.Gated && p.phase == phaseAssumed {
		p.phase = phaseCharged
	}
	if !sameLabels || !sameUsage {
		q.recharge(p, q.coverage(&p.pod))
	} else if !pod.ReleaseAt.IsZero() {
		q.releases.set(p)
	}
	if !sameGroup {
		q.leaveGroup(p)
		q.joinGroup(p)
		if p.group != nil {
			q.settleMember(p)
		}
	}
}

// recharge moves an admitted pod's charge to a new set of covering budgets (its labels,
// its usage or the budgets changed).
func (q *AdmissionQueue) recharge(p *podState, cover []*budget) {
	q.release(p)
	p.cover = cover
	q.charge(p)
}

// forget drops a pod that ended or was deleted.
func (q *AdmissionQueue) forget(p *podState) {
	if p.phase == phaseWaiting {
		q.detach(p)
	} else {
		q.release(p)
	}
	q.backoff.remove(p)
	q.releases.remove(p)
	delete(q.pods, p.pod.UID)
	if ns := q.podsNS[p.pod.Namespace]; ns != nil {
		delete(ns, p.pod.UID)
		if len(ns) == 0 {
			delete(q.podsNS, p.pod.Namespace)
		}
	}
	q.leaveGroup(p)
}

// settleWaiting (re)places a gated pod after anything about it changed: admitted at
// once when its namespace is not opted in or no budget covers it, else parked or
// queued in every budget that covers it.
func (q *AdmissionQueue) settleWaiting(p *podState) {
	q.detach(p)
	if p.group != nil {
		q.settleMember(p)
		return
	}
	p.order = ownKey(&p.pod)
	if !p.inBackoff {
		var reason Reason
		switch {
		case q.released(p.pod.Namespace):
			reason = q.releaseReason(p.pod.Namespace)
		case len(p.cover) == 0 && !q.opts.holdUncovered && p.pod.GroupError == "":
			reason = noBudgetReason()
		}
		if reason.Code != "" && q.admitNow([]*podState{p}, reason) {
			return
		}
	}
	q.place(p, q.singlePark(p))
}

// place puts a detached gated pod where it belongs: parked (with why) when park is
// set, else in backoff or active in every covering budget. Pods no budget covers are
// held, or wait for their group or their backoff.
func (q *AdmissionQueue) place(p *podState, park *waitInfo) {
	p.parked = park != nil
	switch {
	case park != nil:
		p.wait = *park
	case p.wait.parks():
		p.wait = waitInfo{} // no longer parked: the next evaluation says why it waits
	}
	if len(p.cover) == 0 {
		if park == nil && q.opts.holdUncovered && !q.released(p.pod.Namespace) {
			p.parked = true
			p.wait = waitInfo{code: CodeUncovered}
		}
		if p.parked {
			q.held[p.pod.UID] = p
		}
		return
	}
	switch {
	case park != nil:
		q.attach(p, queueParked)
	case p.inBackoff:
		q.attach(p, queueBackoff)
	default:
		q.attach(p, queueActive)
	}
}

// singlePark returns why a pod outside any group cannot be queued, or nil.
func (q *AdmissionQueue) singlePark(p *podState) *waitInfo {
	if p.pod.GroupError != "" {
		return &waitInfo{code: CodeGroupInvalid}
	}
	for _, b := range p.cover {
		if r, over := firstExcess(b.hardNames, b.hard, nil, p.pod.Usage); over {
			return &waitInfo{code: CodeNeverFits, budget: b, resource: r, requested: p.pod.Usage[r]}
		}
	}
	return nil
}

// released reports whether a namespace is known and not opted in: its gated pods are
// let go without quota (removing the opt-in label releases them).
func (q *AdmissionQueue) released(namespace string) bool {
	l, known := q.namespaces[namespace]
	return known && l[v1alpha1.EnabledLabel] != "true"
}

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
		q.detach(p)
		q.backoff.remove(p)
		p.inBackoff, p.parked, p.wait = false, false, waitInfo{}
		p.phase = phaseAssumed
		p.inFlight = true
		q.charge(p)
		var keys []BudgetKey
		for _, b := range p.cover {
			keys = append(keys, b.key)
		}
		q.out = append(q.out, Admission{
			Pod:     p.pod.PodRef,
			Budgets: keys,
			Group:   p.pod.Group,
			Reason:  reason,
			Created: p.pod.Created,
		})
	}
}

// Result is the outcome of an ungate patch, reported with Done.
type Result int

const (
	// Ungated: the patch succeeded; the charge stays.
	Ungated Result = iota
	// Failed: a transient failure (429, 5xx, timeout): the charge is given back and
	// the pod backs off (100 ms, doubling, at most 10 s).
	Failed
	// Conflict: the gate was not where the patch expected (409, or 422 on the test
	// op). The charge is given back and the pod backs off, so that the informer's view
	// (gate gone: charged; gate moved: retried) settles it before the next try.
	Conflict
	// Gone: the pod no longer exists (404); it is forgotten.
	Gone
)

// Done reports the outcome of the ungate patch for a pod Admit returned. Done must be
// called once for every admission; calls for unknown pods are ignored.
func (q *AdmissionQueue) Done(uid types.UID, r Result) {
	q.mu.Lock()
	defer q.mu.Unlock()
	p := q.pods[uid]
	if p == nil || !p.inFlight {
		return
	}
	p.inFlight = false
	switch r {
	case Ungated:
		p.attempts = 0
	case Gone:
		q.forget(p)
	case Failed, Conflict:
		if p.phase != phaseAssumed {
			return // the informer already shows it ungated: it runs, the charge stays
		}
		q.release(p)
		p.phase = phaseWaiting
		p.attempts++
		p.retryAt = q.opts.clock.Now().Add(q.backoffDuration(p.attempts))
		p.inBackoff = true
		q.backoff.set(p)
		q.settleWaiting(p)
	}
}

// runTimers applies what the clock says: backoffs that ended, terminating pods past
// their grace period, and the periodic flush of inadmissible pods.
func (q *AdmissionQueue) runTimers(now time.Time) {
	for p := q.backoff.min(); p != nil && !p.retryAt.After(now); p = q.backoff.min() {
		q.backoff.remove(p)
		p.inBackoff = false
		if p.phase != phaseWaiting {
			continue
		}
		if len(p.entries) > 0 && !p.parked {
			q.moveAll(p, queueBackoff, queueActive)
		} else {
			q.settleWaiting(p)
		}
	}
	for p := q.releases.min(); p != nil && !p.pod.ReleaseAt.After(now); p = q.releases.min() {
		q.forget(p)
	}
	if now.Sub(q.lastFlush) >= q.opts.flushInterval {
		if q.nInadm > 0 {
			for _, b := range q.sortedBudgets() {
				q.wakeAll(b)
			}
		}
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
	if p := q.releases.min(); p != nil {
		consider(p.pod.ReleaseAt)
	}
	if q.nInadm > 0 {
		consider(q.lastFlush.Add(q.opts.flushInterval))
	}
	return next, !next.IsZero()
}
