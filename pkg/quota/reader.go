package quota

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/pkg/quota/internal/topology"
)

// Reader is the core's read side: what a budget's status and queues look like now, and
// where and why a gated pod waits. Nothing it answers moves a decision, so the views
// that only read take a Reader instead of the AdmissionQueue: the visibility API
// (pages and a pod's places), the manager's /debug/queues (the snapshot) and the
// controller's Queues. The kubectl plugin reads the same answers through them
// (pkg/visibility's Client, or the snapshot), and its usage command feeds a core of its
// own and reads its Status. *Reads (AdmissionQueue.Reader) is one.
type Reader interface {
	// Status is a budget's status as the controller writes it, false when the core
	// does not know the budget.
	Status(key BudgetKey) (BudgetStatus, bool)
	// Snapshot is every budget's queues in admission order.
	Snapshot() Snapshot
	// Page is one page of a budget's queue, copying only that page.
	Page(key BudgetKey, offset, limit int) (BudgetPage, bool)
	// PodWait and PodWaitByName are where one gated pod waits: each budget's place
	// and reason.
	PodWait(uid types.UID) (PodWait, bool)
	PodWaitByName(namespace, name string) (PodWait, bool)
	// WaitReason is why one gated pod waits.
	WaitReason(uid types.UID) (Reason, bool)
}

var _ Reader = (*Reads)(nil)

// Reads is the read part of the core (Status, Snapshot, Page, PodWait, WaitReason,
// AtHead): a budget's status, the queues in admission order, a page of
// one, where and why a gated pod waits, and which waiting pods are near the head of
// their queues. It changes nothing, so that the views can ask it as often as they like
// without moving a decision. Every exported method takes the core's one lock
// (AdmissionQueue.mu) for its duration, so each answer is one consistent moment of the
// core, and is safe for concurrent use with the AdmissionQueue. AdmissionQueue holds
// it and hands it out (AdmissionQueue.Reader). It finds budgets through the topology
// part's own methods (lookup, sorted, alive), and reads the pods (podIndex), the held pods
// (agenda) and why a unit is blocked (admitter) through those parts' methods; the
// budgets and pods it is handed it reads directly.
type Reads struct {
	mu       *sync.Mutex                 // the core's lock (AdmissionQueue.mu), not one of its own
	topology *topology.Topology[*budget] // the core's parts, read only
	pods     *podIndex
	agenda   *agenda
	admit    *admitter
}

func newReads(mu *sync.Mutex, t *topology.Topology[*budget], pods *podIndex, ag *agenda, a *admitter) Reads {
	return Reads{mu: mu, topology: t, pods: pods, agenda: ag, admit: a}
}

// Reader returns the core's read side. It is the AdmissionQueue's own (one for its
// life, no allocation), and it reads under the AdmissionQueue's lock.
func (q *AdmissionQueue) Reader() *Reads { return &q.reads }
