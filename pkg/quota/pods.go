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
	p := q.pods.get(pod.UID)
	switch {
	case pod.Terminal:
		if p != nil {
			q.place.forget(p)
		}
	case p == nil:
		q.place.addPod(pod)
	case newerVersion(p.pod.ResourceVersion, pod.ResourceVersion):
	default:
		q.place.updatePod(p, pod)
	}
}

// DeletePod tells the core a pod is gone; its charge, if any, is released and only the
// budgets it was charged to are woken.
func (q *AdmissionQueue) DeletePod(uid types.UID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if p := q.pods.get(uid); p != nil {
		q.place.forget(p)
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

// firstSeenLabels returns the charge labels of a pod first seen running: those its
// admitted-labels annotation records (the labels the manager admitted it with, or first
// saw it running with, before a restart or a failover), else those it has now; recorded
// says they came from the annotation.
func firstSeenLabels(p *podState) (labels map[string]string, recorded bool) {
	if l, ok := p.pod.admittedLabels(); ok {
		return l, true
	}
	return p.pod.Labels, false
}

// terminating returns the charged pods within their grace period (preemptionCore).
func (q *AdmissionQueue) terminating() []*podState { return q.charges.terminating() }

// markStatus marks b's status to be written (preemptionCore).
func (q *AdmissionQueue) markStatus(b *budget) { q.agenda.markStatus(b) }

// lendWaiters returns the pods waiting on f's family for lendable quota
// (preemptionCore).
func (q *AdmissionQueue) lendWaiters(f *budget) []*podState { return q.families.lendWaiters(f) }

// CatchUpNamespaces returns, sorted, the namespaces a new leader must read fresh before
// it admits: those where the core has gated pods, and those that are opted in (a pod
// the previous leader ungated may not have reached this replica's informer at all).
func (q *AdmissionQueue) CatchUpNamespaces() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	set := map[string]struct{}{}
	for ns, l := range q.topology.SeenNamespaces() {
		if l[v1alpha1.EnabledLabel] == "true" {
			set[ns] = struct{}{}
		}
	}
	for ns := range q.pods.waitingNamespaces() {
		set[ns] = struct{}{}
	}
	return slices.Sorted(maps.Keys(set))
}
