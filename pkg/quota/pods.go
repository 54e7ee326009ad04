package quota

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// UpsertPod tells the core the latest view of a pod (an informer add or update, or a
// fresh read from the API server). A terminal pod is forgotten and its charge released.
// A pod seen ungated for the first time is charged at once (it runs, whether or not it
// fits). An upsert never charges a pod twice: the view of a pod the core admitted
// confirms the reservation. A view older than the one the core has is ignored, so a
// fresh read that overtook the informer is not undone by the informer's late events.
func (q *AdmissionQueue) UpsertPod(pod Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	pod.Priority = min(pod.Priority, q.opts.priorityCeiling) // WithPriorityCeiling
	p := q.pods[pod.UID]
	switch {
	case pod.Terminal:
		if p != nil {
			q.forget(p)
		}
	case p == nil:
		q.addPod(pod)
	case newerVersion(p.pod.ResourceVersion, pod.ResourceVersion):
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
	p.cover = q.topology.coverage(&p.pod)
	q.joinGroup(p)
	if !pod.Gated {
		p.phase = phaseCharged
		p.pinned = firstSeenPins(p)
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
	sameGroup := old.Group == pod.Group && old.GroupSize == pod.GroupSize && old.GroupError == pod.GroupError && old.ClaimsError == pod.ClaimsError
	sameLabels := maps.Equal(old.Labels, pod.Labels)
	sameUsage := equalLists(old.Usage, pod.Usage) && sameClaims(old.Claims, pod.Claims)

	if q.provesNotUngated(p, pod) {
		// Seen still gated at a version newer than every attempt to ungate it: none of
		// them applied, and none can any more (each was fenced on an older version).
		p.setPod(pod)
		p.cover = q.topology.coverage(&p.pod)
		if !sameGroup {
			q.leaveGroup(p)
			q.joinGroup(p)
		}
		q.giveBack(p)
		return
	}

	if p.phase == phaseWaiting {
		if pod.Gated && sameGroup && sameLabels && sameUsage && slices.Equal(old.Unset, pod.Unset) && old.Priority == pod.Priority && old.Created.Equal(pod.Created) {
			p.pod = pod
			return
		}
		q.detach(p) // before p.pod changes: pending is given back with the old usage
		p.setPod(pod)
		p.cover = q.topology.coverage(&p.pod)
		if !pod.Gated {
			// Ungated by someone else (the namespace's release, an admin): it runs now.
			q.backoff.remove(p)
			p.inBackoff, p.parked, p.wait = false, false, waitInfo{}
			p.phase = phaseCharged
			p.pinned = firstSeenPins(p)
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

	// Admitted (assumed or charged). A gated view of an assumed pod that does not prove
	// the attempts failed changes nothing: Done, a retry or a newer view settles it.
	p.setPod(pod)
	if !pod.Gated && p.phase == phaseAssumed {
		p.phase = phaseCharged
		p.unresolved = false
		q.backoff.remove(p) // a retry of the ungate is no longer needed
	}
	if !sameLabels || !sameUsage {
		// A relabelled pod stays charged where it was admitted (pinned), and is
		// charged wherever it is covered now as well.
		q.recharge(p, q.topology.coverage(&p.pod))
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

// firstSeenPins returns the budgets a pod first seen running (not admitted by this
// core) stays charged to whatever its labels become: those its admitted-by annotation
// names, the record of the manager that admitted it (a restart, a failover), or, for a
// pod quotagate never admitted (created before its namespace opted in, ungated by an
// administrator), the budgets that cover it now. A pinned budget that does not exist
// (deleted, or not seen yet) is charged from when it does, as before the restart.
func firstSeenPins(p *podState) []BudgetKey {
	if p.pod.HasAdmittedBy {
		return p.pod.AdmittedByKeys()
	}
	return keysOf(p.cover)
}

// known reports whether p is the pod the core holds under its UID (preemptionCore).
func (q *AdmissionQueue) known(p *podState) bool { return q.pods[p.pod.UID] == p }

// terminating returns the charged pods within their grace period (preemptionCore).
func (q *AdmissionQueue) terminating() []*podState { return q.releases.pods }

// lendWaiters returns the pods waiting on f's family for lendable quota
// (preemptionCore).
func (q *AdmissionQueue) lendWaiters(f *budget) []*podState { return q.families.lendWaiters(f) }

// forget drops a pod that ended or was deleted.
func (q *AdmissionQueue) forget(p *podState) {
	if p.phase == phaseWaiting {
		q.detach(p)
	} else {
		q.release(p)
	}
	q.backoff.remove(p)
	q.releases.remove(p)
	delete(q.immediate, p.pod.UID)
	if p.preemption {
		q.preemptions.forget(p)
	}
	if b := p.wait.budget; b != nil && b.family != nil {
		q.families.forgetPod(b, p) // the family's records of what it waited for
	}
	p.pinned = nil
	delete(q.pods, p.pod.UID)
	if ns := q.podsNS[p.pod.Namespace]; ns != nil {
		delete(ns, p.pod.UID)
		if len(ns) == 0 {
			delete(q.podsNS, p.pod.Namespace)
		}
	}
	if p.group != nil { // a pod outside any group does not enter the groups part
		q.leaveGroup(p)
	}
}

// settleWaiting (re)places a gated pod after anything about it changed: admitted at
// once when its namespace is not opted in (or, with WithHoldUncovered(false), no
// budget covers it), else parked or queued in every budget that covers it, or held.
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
		case len(p.cover) == 0 && !q.opts.holdUncovered && p.pod.GroupError == "" && p.pod.ClaimsError == "" && q.knownNamespace(p.pod.Namespace):
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
	if w := q.namespacePark(p.pod.Namespace); w != nil {
		return w
	}
	if p.pod.GroupError != "" {
		return &waitInfo{code: CodeGroupInvalid}
	}
	if p.pod.ClaimsError != "" {
		return &waitInfo{code: CodeClaimPending}
	}
	if w := unsetPark(p.pod.Unset, p.cover, PodRef{}); w != nil {
		return w
	}
	for _, b := range p.cover {
		if r, over := b.ledger.neverFits(p.usage()); over {
			return &waitInfo{code: CodeNeverFits, budget: b, resource: r, requested: p.usage()[r]}
		}
	}
	if !inBorrowingFamily(p.cover) {
		return nil
	}
	if w, never := familyNeverFits(p.cover, usageDemand(p.usage())); never {
		return &w
	}
	return nil
}

// namespacePark holds the gated pods of a namespace the core has not seen yet: until
// its labels are known, neither the opt-in label nor the ClusterBudgets that select it
// by namespaceSelector are, so nothing about its pods may be decided. SetNamespace
// places them again.
func (q *AdmissionQueue) namespacePark(namespace string) *waitInfo {
	if q.knownNamespace(namespace) {
		return nil
	}
	return &waitInfo{code: CodeNamespaceUnknown}
}

func (q *AdmissionQueue) knownNamespace(namespace string) bool {
	_, known := q.topology.namespaceLabels(namespace)
	return known
}

// released reports whether a namespace is known and not opted in: its gated pods are
// let go without quota (removing the opt-in label releases them).
func (q *AdmissionQueue) released(namespace string) bool {
	l, known := q.topology.namespaceLabels(namespace)
	return known && l[v1alpha1.EnabledLabel] != "true"
}

// CatchUpNamespaces returns, sorted, the namespaces a new leader must read fresh before
// it admits: those where the core has gated pods, and those that are opted in (a pod
// the previous leader ungated may not have reached this replica's informer at all).
func (q *AdmissionQueue) CatchUpNamespaces() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	set := map[string]struct{}{}
	for ns, l := range q.topology.seenNamespaces() {
		if l[v1alpha1.EnabledLabel] == "true" {
			set[ns] = struct{}{}
		}
	}
	for ns, pods := range q.podsNS {
		if _, ok := set[ns]; ok {
			continue
		}
		for _, p := range pods {
			if p.phase == phaseWaiting {
				set[ns] = struct{}{}
				break
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}
