package quota

import (
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/quotagate/quotagate/pkg/quota/internal/topology"
)

// Defaults of the queue timings (the queues: Queue; docs/guarantees.md, "An ungate is
// charged until its outcome is known"; docs/tuning.md, --flush-interval).
const (
	DefaultInitialBackoff = 100 * time.Millisecond
	DefaultMaxBackoff     = 10 * time.Second
	DefaultFlushInterval  = 5 * time.Minute
	DefaultLendHold       = 5 * time.Second
	// DefaultUsageWriteInterval is how often a budget with hours and running pods has
	// its status (status.usage) written: what it used survives a restart up to then.
	DefaultUsageWriteInterval = 30 * time.Second
)

// Defaults of preemption's cooldown and its backoff (WithPreemptionCooldown; docs/budgets.md,
// "Preemption cooldown"): a pod evicts nobody before it has waited 30 s, and a namespace
// whose preemptors keep vanishing waits up to 10 minutes per preemptor.
const (
	DefaultPreemptionCooldown   = 30 * time.Second
	DefaultPreemptionMaxBackoff = 10 * time.Minute
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

	// The parts (the package doc): each owns its state and reaches the others only through
	// their methods.
	topology    *topology.Topology[*budget] // budgets, namespaces and what covers what
	pods        *podIndex                   // every pod the core knows
	agenda      *agenda                     // dirty budgets and statuses, held pods, moves, wakes
	charges     *charges                    // what admitted and running pods are charged to
	families    families                    // borrowing, fair sharing, lend holds
	preemptions preemptions                 // victims, evictions in flight, decisions
	place       *placer                     // where each pod waits, pod and namespace events
	admit       *admitter                   // Admit's decisions, backoffs, the flush
	hours       *hourBooks                  // the budgets' hours (spec.usageLimits)
	flavors     *flavorIndex                // the Flavors, and which a pod may be put on
	reads       Reads                       // the read side, under mu
}

// NewAdmissionQueue returns an empty AdmissionQueue.
func NewAdmissionQueue(opts ...Option) *AdmissionQueue {
	o := options{
		clock:                clock.RealClock{},
		initialBackoff:       DefaultInitialBackoff,
		maxBackoff:           DefaultMaxBackoff,
		flushInterval:        DefaultFlushInterval,
		lendHold:             DefaultLendHold,
		priorityCeiling:      DefaultPriorityCeiling,
		holdUncovered:        true,
		preemptionCooldown:   DefaultPreemptionCooldown,
		preemptionMaxBackoff: DefaultPreemptionMaxBackoff,
		usageWriteInterval:   DefaultUsageWriteInterval,
	}
	for _, opt := range opts {
		opt(&o)
	}
	q := &AdmissionQueue{opts: o, topology: topology.New[*budget](), pods: newPodIndex(), flavors: newFlavorIndex()}
	q.topology.KnowFlavors(q.flavors.exists)
	q.agenda = newAgenda(q.topology, o.observer)
	q.preemptions = newPreemptions(q, o.clock, o.preemptionCooldown, o.preemptionMaxBackoff)
	q.families = newFamilies(q, o.clock, o.lendHold)
	q.hours = newHourBooks(o.clock, q.agenda, o.usageWriteInterval)
	q.charges = newCharges(q.agenda, q.topology, &q.families, q.flavors, q.hours)
	q.admit = newAdmitter(&q.opts, q.topology, q.agenda, q.charges, &q.families, &q.preemptions, q.pods, q.flavors, q.hours)
	q.place = newPlacer(&q.opts, q.topology, q.agenda, q.charges, &q.families, &q.preemptions, q.pods, q.admit)
	q.reads = newReads(&q.mu, q.topology, q.pods, q.agenda, q.admit)
	return q
}

// activate moves a waiting pod's inadmissible entries back to active (familyCore).
func (q *AdmissionQueue) activate(p *podState) {
	q.agenda.moveAll(p, queueInadmissible, queueActive)
}

// wakeIfAlive wakes b unless it was deleted or replaced (familyCore).
func (q *AdmissionQueue) wakeIfAlive(b *budget) { q.agenda.wakeIfAlive(b) }

// capacityWait says why a unit does not fit as the ledgers are now (familyCore,
// preemptionCore; admitter).
func (q *AdmissionQueue) capacityWait(budgets []*budget, add demand) (waitInfo, bool) {
	return q.admit.capacityWait(budgets, add)
}

// stuck reports whether a waiting pod may not be admitted now whatever is freed
// (familyCore, preemptionCore; admitter).
func (q *AdmissionQueue) stuck(p *podState) bool { return q.admit.stuck(p) }

// usageShare is what c used, decayed, as a share under its parent f (familyCore;
// hourBooks.usageShare).
func (q *AdmissionQueue) usageShare(c, f *budget) float64 { return q.hours.usageShare(c, f) }

// headFlavor is the flavor a waiting pod would be admitted on now, the flavors it would
// be charged on there, and whether it fits there (familyCore; admitter.flavorFor).
func (q *AdmissionQueue) headFlavor(p *podState) (string, []string, bool) {
	return q.admit.headFlavor(p)
}
