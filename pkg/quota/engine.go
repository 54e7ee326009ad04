package quota

import (
	"container/heap"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Defaults of the queue timings (DESIGN: Admission queues).
const (
	DefaultInitialBackoff = 100 * time.Millisecond
	DefaultMaxBackoff     = 10 * time.Second
	DefaultFlushInterval  = 5 * time.Minute
	DefaultLendHold       = 5 * time.Second
)

// DefaultPriorityCeiling is the highest priority the core ranks pods by: Kubernetes'
// HighestUserDefinablePriority. The system classes (system-cluster-critical,
// system-node-critical: 2000000000 and up) rank no higher than the highest class a
// user may define, so a tenant that gives its pods one does not jump every shared
// queue (WithPriorityCeiling).
const DefaultPriorityCeiling int32 = 1000000000

// AdmissionQueue is the admission core: it accounts pods against budgets and decides,
// in order, which gated pods to admit. Feed it with UpsertPod, DeletePod, UpsertBudget,
// DeleteBudget and SetNamespace; take decisions with Admit and report each patch with
// Done. All methods are safe for concurrent use.
type AdmissionQueue struct {
	// mu guards everything below. It is the only lock; Observer is called under it.
	mu   sync.Mutex
	opts options

	topology topology // budgets, namespaces and what covers what

	pods   map[types.UID]*podState
	podsNS map[string]map[types.UID]*podState
	groups groupIndex
	held   map[types.UID]*podState // gated pods held because no budget covers them

	dirty     budgetHeap // budgets whose active heads need evaluating
	backoff   timerHeap  // pods waiting for their retry time
	releases  timerHeap  // charged pods that stop counting at their grace period's end
	lastFlush time.Time
	nInadm    int // inadmissible entries, over all budgets

	recheck      []*budget               // budgets that woke pods for capacity, see wake
	wakeBuf      []*entry                // wake's reused list of the pods it wakes for capacity
	out          []Admission             // decided, not yet returned by Admit
	preemptions  preemptions             // victims, evictions in flight, decisions (preemptions.go)
	families     families                // borrowing, fair sharing, lend holds (families.go)
	holds        bool                    // the family part said it holds freed quota: Admit expires holds only then
	deciding     bool                    // inside Admit: decisions may be taken
	immediate    map[types.UID]*podState // pods to admit without quota at the next Admit
	statusDirty  map[BudgetKey]struct{}
	seenStatuses map[BudgetKey]struct{}
}

// NewAdmissionQueue returns an empty AdmissionQueue.
func NewAdmissionQueue(opts ...Option) *AdmissionQueue {
	o := options{
		clock:           clock.RealClock{},
		initialBackoff:  DefaultInitialBackoff,
		maxBackoff:      DefaultMaxBackoff,
		flushInterval:   DefaultFlushInterval,
		lendHold:        DefaultLendHold,
		priorityCeiling: DefaultPriorityCeiling,
		holdUncovered:   true,
	}
	for _, opt := range opts {
		opt(&o)
	}
	q := &AdmissionQueue{
		opts:         o,
		topology:     newTopology(),
		pods:         map[types.UID]*podState{},
		podsNS:       map[string]map[types.UID]*podState{},
		groups:       groupIndex{},
		held:         map[types.UID]*podState{},
		immediate:    map[types.UID]*podState{},
		statusDirty:  map[BudgetKey]struct{}{},
		seenStatuses: map[BudgetKey]struct{}{},
	}
	q.backoff = timerHeap{
		at:    func(p *podState) time.Time { return p.retryAt },
		index: func(p *podState) *int { return &p.backoffIndex },
	}
	q.releases = timerHeap{
		at:    func(p *podState) time.Time { return p.pod.ReleaseAt },
		index: func(p *podState) *int { return &p.releaseIndex },
	}
	q.preemptions = newPreemptions(q)
	q.families = newFamilies(q, o.clock, o.lendHold)
	q.lastFlush = o.clock.Now()
	return q
}

func (q *AdmissionQueue) markStatus(b *budget) { q.statusDirty[b.key] = struct{}{} }

// moveEntry moves one entry between queues of its budget, keeping counts and the dirty
// heap right. to may be queueNone (leave the queues).
func (q *AdmissionQueue) moveEntry(e *entry, to queueKind) {
	from := e.kind
	if from == to {
		return
	}
	b := e.budget
	headChanged := b.queues.move(e, to)
	if from == queueInadmissible {
		q.nInadm--
	}
	if to == queueInadmissible {
		q.nInadm++
	}
	if b.dirtyIndex >= 0 && headChanged {
		heap.Fix(&q.dirty, b.dirtyIndex)
	}
	if q.opts.observer != nil {
		q.opts.observer.Moved(b.key, from.name(), to.name())
	}
}

// markDirty schedules the budget's active head for evaluation by the next Admit.
func (q *AdmissionQueue) markDirty(b *budget) {
	if b.dirtyIndex < 0 && b.queues.activeHead() != nil {
		heap.Push(&q.dirty, b)
	}
}

// attach creates the pod's entries in its covering budgets, in the given queue.
func (q *AdmissionQueue) attach(p *podState, to queueKind) {
	p.entries = make([]*entry, len(p.cover))
	for i, b := range p.cover {
		e := &entry{pod: p, budget: b, index: -1}
		p.entries[i] = e
		q.moveEntry(e, to)
		b.ledger.wait(p.usage(), p.pod.Usage)
		q.markStatus(b)
		if to == queueActive {
			q.markDirty(b)
		}
	}
}

// detach removes the pod from every queue it is in. A StrictFIFO budget whose head
// leaves is woken: the pod behind may go now.
func (q *AdmissionQueue) detach(p *podState) {
	for _, e := range p.entries {
		b := e.budget
		wasHead := b.strict() && e.kind != queueParked && b.queues.strictHead() == e
		q.moveEntry(e, queueNone)
		b.ledger.unwait(p.usage())
		q.markStatus(b)
		if wasHead {
			q.wake(b)
		}
		if f := b.borrowingParent(); f != nil && q.topology.alive(f) {
			q.wake(f) // a pod that waited on the family may have left it (borrowing.go)
		}
	}
	p.entries = nil
	delete(q.held, p.pod.UID)
}

// activate moves a waiting pod's inadmissible entries back to active (familyCore).
func (q *AdmissionQueue) activate(p *podState) { q.moveAll(p, queueInadmissible, queueActive) }

// moveAll moves every entry of the pod that is in queue from to queue to.
func (q *AdmissionQueue) moveAll(p *podState, from, to queueKind) {
	for _, e := range p.entries {
		if e.kind == from {
			q.moveEntry(e, to)
			if to == queueActive {
				q.markDirty(e.budget)
			}
		}
	}
}

// budgetHeap holds the dirty budgets, the one with the best active head first, so that
// pods competing for a shared parent are evaluated in admission order.
type budgetHeap []*budget

var _ heap.Interface = (*budgetHeap)(nil)

func (h budgetHeap) Len() int { return len(h) }
func (h budgetHeap) Less(i, j int) bool {
	a, b := h[i].queues.activeHead(), h[j].queues.activeHead()
	switch {
	case a == nil || b == nil:
		if (a == nil) != (b == nil) {
			return b == nil
		}
	case a.pod != b.pod:
		return podLess(a.pod, b.pod)
	}
	return h[i].key.Compare(h[j].key) < 0
}
func (h budgetHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].dirtyIndex = i
	h[j].dirtyIndex = j
}
func (h *budgetHeap) Push(x any) {
	b := x.(*budget)
	b.dirtyIndex = len(*h)
	*h = append(*h, b)
}
func (h *budgetHeap) Pop() any {
	old := *h
	b := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	b.dirtyIndex = -1
	return b
}
