package quota

import (
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodWait is where one gated pod waits and why: its place in the queue of every budget
// that holds it, or, for a pod no budget covers, that the core holds it.
type PodWait struct {
	Pod      PodRef
	Group    string
	Priority int32
	Requests corev1.ResourceList
	Created  time.Time
	// RetryAt is when a pod in backoff is tried again.
	RetryAt *time.Time
	// Reason is why it waits: the sentence of its Waiting event.
	Reason Reason
	// Places are its places in the budgets that cover it, in the order the core
	// evaluates them (direct Budgets, then ClusterBudgets, then ancestors). Empty for a
	// held pod.
	Places []PodPlace
	// Held is set for a pod no budget covers that the core holds (WithHoldUncovered,
	// or a group member waiting for its group), as Snapshot.Held lists them.
	Held bool
}

// PodPlace is a pod's place in one budget's queues.
type PodPlace struct {
	Budget BudgetKey
	// Position is 1 for the next pod the budget admits; Total is how many pods the
	// budget keeps gated.
	Position, Total int
	Queue           Queue
}

// PodWaitByName returns where the gated pod namespace/name waits, and false when the
// core holds no gated pod by that name in a queue or held (as Snapshot shows them). Should the core hold two gated pods of that
// name (a pod deleted and created again before the deletion was seen), the newer one
// answers. It looks through the namespace's pods, O(pods in the namespace), and counts
// each budget that holds the pod, O(n) in that budget's gated pods: no queue is copied
// or sorted. (An index by name would make the look-up O(1) at some 60 bytes per pod;
// a user's question does not pay for that.)
func (r *Reads) PodWaitByName(namespace, name string) (PodWait, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var found *podState
	for p := range maps.Values(r.pods.inNamespace(namespace)) {
		if p.phase != phaseWaiting || p.pod.Name != name {
			continue
		}
		if found == nil || p.pod.Created.After(found.pod.Created) ||
			(p.pod.Created.Equal(found.pod.Created) && p.pod.UID > found.pod.UID) {
			found = p
		}
	}
	if found == nil || !r.waitsSomewhere(found) {
		return PodWait{}, false
	}
	return r.podWait(found), true
}

// PodWait is PodWaitByName for a pod's UID.
func (r *Reads) PodWait(uid types.UID) (PodWait, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pods.get(uid)
	if p == nil || p.phase != phaseWaiting || !r.waitsSomewhere(p) {
		return PodWait{}, false
	}
	return r.podWait(p), true
}

// waitsSomewhere reports whether a gated pod is in a budget's queues or held, as a
// snapshot would show it; a gated pod in neither is about to be let go without quota.
func (r *Reads) waitsSomewhere(p *podState) bool {
	return r.agenda.isHeld(p.pod.UID) || p.queued.any()
}

func (r *Reads) podWait(p *podState) PodWait {
	w := PodWait{
		Pod:      p.pod.PodRef,
		Group:    p.pod.Group,
		Priority: p.pod.Priority,
		Requests: p.pod.Usage.DeepCopy(),
		Created:  p.pod.Created,
		Reason:   r.waitReason(p),
	}
	if p.inBackoff {
		t := p.attempt.retryTime()
		w.RetryAt = &t
	}
	if r.agenda.isHeld(p.pod.UID) {
		w.Held = true
	}
	for i, e := range p.queued.all() {
		if i >= len(p.cover) {
			break
		}
		b := p.cover[i]
		k, n := rank(p, b)
		w.Places = append(w.Places, PodPlace{Budget: b.key, Position: k, Total: n, Queue: e.kind.name()})
	}
	return w
}

// rank returns p's position among budget b's gated pods in admission order (1 first)
// and how many there are (queues.rank: read from p's entry while b is positioned, else
// counted).
func rank(p *podState, b *budget) (k, n int) {
	var mine *entry
	for i, e := range p.queued.all() {
		if i < len(p.cover) && p.cover[i] == b {
			mine = e
			break
		}
	}
	return b.queues.rank(p, mine)
}
