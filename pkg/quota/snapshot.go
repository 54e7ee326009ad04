package quota

import (
	"math/bits"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// Snapshot is a read-only copy of every queue, for /debug/queues and the kubectl
// plugin.
type Snapshot struct {
	Budgets []BudgetQueue `json:"budgets"`
	// Held lists gated pods that no budget covers and that are held (WithHoldUncovered,
	// or a group member waiting for its group).
	Held []QueuedPod `json:"held,omitempty"`
}

// BudgetQueue is one budget's gated pods in admission order.
type BudgetQueue struct {
	Budget   BudgetKey                 `json:"budget"`
	State    v1alpha1.BudgetState      `json:"state"`
	Strategy v1alpha1.QueueingStrategy `json:"strategy"`
	Pods     []QueuedPod               `json:"pods"`
}

// QueuedPod is one gated pod in a budget's queues.
type QueuedPod struct {
	// Position is 1 for the next pod to admit.
	Position int                 `json:"position"`
	Pod      PodRef              `json:"pod"`
	Group    string              `json:"group,omitempty"`
	Priority int32               `json:"priority"`
	Requests corev1.ResourceList `json:"requests"`
	Created  time.Time           `json:"created"`
	Queue    Queue               `json:"queue"`
	RetryAt  *time.Time          `json:"retryAt,omitempty"`
	Reason   Reason              `json:"reason"`
}

// Snapshot copies every budget's queues, budgets by key, pods in admission order. It
// sorts each budget's pods once, O(n log n), and the wait reasons it writes take their
// "position k of n" from that order.
func (r *Reads) Snapshot() Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	budgets := r.topology.Sorted()
	ordered := make([][]*entry, len(budgets))
	for i, b := range budgets {
		ordered[i] = positionAll(b)
	}
	defer unposition(budgets)
	var s Snapshot
	for i, b := range budgets {
		state, _ := b.state()
		strategy := b.spec.Strategy
		if strategy == "" {
			strategy = v1alpha1.BestEffortFIFO
		}
		bq := BudgetQueue{Budget: b.key, State: state, Strategy: strategy, Pods: make([]QueuedPod, len(ordered[i]))}
		for k, e := range ordered[i] {
			bq.Pods[k] = r.queuedPod(e.pod, e.position, e.kind.name())
		}
		s.Budgets = append(s.Budgets, bq)
	}
	held := slices.Collect(r.agenda.heldPods())
	slices.SortFunc(held, comparePods)
	for i, p := range held {
		s.Held = append(s.Held, r.queuedPod(p, i+1, QueueParked))
	}
	return s
}

// WaitReasons is WaitReason for many pods at once, for callers that announce reasons
// in rounds: a budget that many of the pods wait in is sorted once, O(n log n), rather
// than counted for each of them. Pods the core does not hold as gated are left out.
func (r *Reads) WaitReasons(uids []types.UID) map[types.UID]Reason {
	r.mu.Lock()
	defer r.mu.Unlock()
	var pods []*podState
	asked := map[*budget]int{}
	for _, uid := range uids {
		p := r.pods.get(uid)
		if p == nil || p.phase != phaseWaiting {
			continue
		}
		pods = append(pods, p)
		for _, b := range p.cover {
			asked[b]++
		}
	}
	var sorted []*budget
	for b, k := range asked {
		// Counting costs n per pod asked, sorting n log n once.
		if k > bits.Len(uint(b.queues.gated())) {
			positionAll(b)
			sorted = append(sorted, b)
		}
	}
	defer unposition(sorted)
	out := make(map[types.UID]Reason, len(pods))
	for _, p := range pods {
		out[p.pod.UID] = r.waitReason(p)
	}
	return out
}

// positionAll returns the budget's entries in admission order and gives each its
// position, for rank to read until unposition (queues.position).
func positionAll(b *budget) []*entry { return b.queues.position() }

func unposition(budgets []*budget) {
	for _, b := range budgets {
		b.queues.unposition()
	}
}

func (r *Reads) queuedPod(p *podState, pos int, queue Queue) QueuedPod {
	qp := QueuedPod{
		Position: pos,
		Pod:      p.pod.PodRef,
		Group:    p.pod.Group,
		Priority: p.pod.Priority,
		Requests: p.pod.Usage.DeepCopy(),
		Created:  p.pod.Created,
		Queue:    queue,
		Reason:   r.waitReason(p),
	}
	if p.inBackoff {
		t := p.attempt.retryTime()
		qp.RetryAt = &t
	}
	return qp
}
