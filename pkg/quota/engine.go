package quota

import (
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
	agenda *agenda // dirty budgets, dirty statuses, held pods, moves and wakes (agenda.go)

	charges   *charges  // what admitted and running pods are charged to (charges.go)
	backoff   timerHeap // pods waiting for their retry time
	lastFlush time.Time

	out         []Admission             // decided, not yet returned by Admit
	preemptions preemptions             // victims, evictions in flight, decisions (preemptions.go)
	families    families                // borrowing, fair sharing, lend holds (families.go)
	deciding    bool                    // inside Admit: decisions may be taken
	immediate   map[types.UID]*podState // pods to admit without quota at the next Admit
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
		opts:      o,
		topology:  newTopology(),
		pods:      map[types.UID]*podState{},
		podsNS:    map[string]map[types.UID]*podState{},
		groups:    groupIndex{},
		immediate: map[types.UID]*podState{},
	}
	q.backoff = timerHeap{
		at:    func(p *podState) time.Time { return p.retryAt },
		index: func(p *podState) *int { return &p.backoffIndex },
	}
	q.agenda = newAgenda(&q.topology, o.observer)
	q.preemptions = newPreemptions(q)
	q.families = newFamilies(q, o.clock, o.lendHold)
	q.charges = newCharges(q.agenda, &q.topology, &q.families)
	q.lastFlush = o.clock.Now()
	return q
}

// activate moves a waiting pod's inadmissible entries back to active (familyCore).
func (q *AdmissionQueue) activate(p *podState) {
	q.agenda.moveAll(p, queueInadmissible, queueActive)
}

// wakeIfAlive wakes b unless it was deleted or replaced (familyCore).
func (q *AdmissionQueue) wakeIfAlive(b *budget) { q.agenda.wakeIfAlive(b) }
