package quota

import (
	"container/heap"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Defaults of the queue timings (DESIGN: Admission queues).
const (
	DefaultInitialBackoff = 100 * time.Millisecond
	DefaultMaxBackoff     = 10 * time.Second
	DefaultFlushInterval  = 5 * time.Minute
)

// AdmissionQueue is the admission core: it accounts pods against budgets and decides,
// in order, which gated pods to admit. Feed it with UpsertPod, DeletePod, UpsertBudget,
// DeleteBudget and SetNamespace; take decisions with Admit and report each patch with
// Done. All methods are safe for concurrent use.
type AdmissionQueue struct {
	// mu guards everything below. It is the only lock; Observer is called under it.
	mu   sync.Mutex
	opts options

	topology // budgets, namespaces and what covers what

	pods   map[types.UID]*podState
	podsNS map[string]map[types.UID]*podState
	groups map[groupKey]*group
	held   map[types.UID]*podState // gated pods held because no budget covers them

	dirty     budgetHeap // budgets whose active heads need evaluating
	backoff   timerHeap  // pods waiting for their retry time
	releases  timerHeap  // charged pods that stop counting at their grace period's end
	lastFlush time.Time
	nInadm    int // inadmissible entries, over all budgets

	recheck      []*budget               // budgets that woke pods for capacity, see wake
	out          []Admission             // decided, not yet returned by Admit
	deciding     bool                    // inside Admit: decisions may be taken
	immediate    map[types.UID]*podState // pods to admit without quota at the next Admit
	statusDirty  map[BudgetKey]struct{}
	seenStatuses map[BudgetKey]struct{}
}

// NewAdmissionQueue returns an empty AdmissionQueue.
func NewAdmissionQueue(opts ...Option) *AdmissionQueue {
	o := options{
		clock:          clock.RealClock{},
		initialBackoff: DefaultInitialBackoff,
		maxBackoff:     DefaultMaxBackoff,
		flushInterval:  DefaultFlushInterval,
	}
	for _, opt := range opts {
		opt(&o)
	}
	q := &AdmissionQueue{
		opts:         o,
		topology:     newTopology(),
		pods:         map[types.UID]*podState{},
		podsNS:       map[string]map[types.UID]*podState{},
		groups:       map[groupKey]*group{},
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
	q.lastFlush = o.clock.Now()
	return q
}

type podPhase uint8

const (
	// phaseWaiting: gated, in queues (or held).
	phaseWaiting podPhase = iota
	// phaseAssumed: admitted by the core, charged, the ungate patch not yet seen.
	phaseAssumed
	// phaseCharged: the informer shows it ungated; charged until it ends.
	phaseCharged
)

// podState is the core's record of one non-terminal pod.
type podState struct {
	pod   Pod
	phase podPhase
	order orderKey
	group *group

	cover   []*budget // covering budgets: direct ones (Budgets, then ClusterBudgets), then ancestors
	entries []*entry  // parallel to cover while waiting

	chargedTo    []*budget // where its usage is charged (phases assumed and charged)
	chargedUsage corev1.ResourceList
	// pinned are the budgets that admitted it, or that covered it when the core first
	// saw it running: it stays charged to those that exist while it runs, whatever its
	// labels become. They are the core's own record, never read from the pod, so a
	// tenant cannot charge a budget by writing its name on a pod.
	pinned []BudgetKey
	// admitted is the reason it was admitted, handed out again with a retry.
	admitted Reason

	// An ungate attempt is fenced on the pod's resourceVersion (the patch tests it),
	// so it can apply only to that version. attemptRV is the newest version an attempt
	// was fenced on; unresolved is set while it is not known whether one applied: the
	// charge stands until the pod is seen ungated, seen gated at a version newer than
	// attemptRV, or is gone.
	attemptRV  string
	unresolved bool

	wait      waitInfo // why it waits, from its latest evaluation or park
	parked    bool
	inBackoff bool
	retryAt   time.Time // end of its backoff (waiting), or when to retry an unresolved ungate
	attempts  int
	inFlight  bool // returned by Admit, Done not called yet

	backoffIndex int
	releaseIndex int
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
	headChanged := b.move(e, to)
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
	if b.dirtyIndex < 0 && len(b.active) > 0 {
		heap.Push(&q.dirty, b)
	}
}

// wake moves back to active the budget's inadmissible pods whose answer an event in
// this budget may have changed (kube-scheduler's queueing hints): pods it blocked for
// another reason, and, of those it blocked for capacity, the ones that fit in what is
// free when the ones before them (in admission order) are admitted first. Pods blocked
// by another budget stay: that budget's own events wake them. So an event costs a pass
// over this budget's inadmissible pods and the evaluation of those that may go; the
// pods it moves on that assumption are checked at the end of Admit (recheckWakes).
func (q *AdmissionQueue) wake(b *budget) {
	var capacity []*entry
	minReq := map[corev1.ResourceName]resource.Quantity{}
	free := map[corev1.ResourceName]resource.Quantity{}
	freeOf := func(r corev1.ResourceName) resource.Quantity {
		f, ok := free[r]
		if !ok {
			f = b.free(r)
			free[r] = f
		}
		return f
	}
	var now []*entry
	for _, e := range b.inadmissible {
		w := &e.pod.wait
		switch {
		case !q.alive(w.budget):
			now = append(now, e) // no budget to blame (or it is gone): look again
		case w.budget != b:
		case w.code != CodeInsufficient:
			now = append(now, e)
		case w.requested.Cmp(freeOf(w.resource)) <= 0:
			capacity = append(capacity, e)
			if m, ok := minReq[w.resource]; !ok || w.requested.Cmp(m) < 0 {
				minReq[w.resource] = w.requested
			}
		}
	}
	for _, e := range now {
		q.moveEntry(e, queueActive)
	}
	if len(capacity) > 0 {
		// Take them in admission order while they fit in what the ones before leave,
		// and stop once nothing left could fit.
		h := orderHeap(capacity)
		heap.Init(&h)
		var groups map[*group]bool
		for h.Len() > 0 && anyFits(minReq, free) {
			e := heap.Pop(&h).(*entry)
			if g := e.pod.group; g != nil {
				// One member brings its whole group (and w.requested is the group's
				// sum): count the group once.
				if groups[g] {
					continue
				}
				if groups == nil {
					groups = map[*group]bool{}
				}
				groups[g] = true
			}
			w := &e.pod.wait
			left := free[w.resource]
			if w.requested.Cmp(left) > 0 {
				continue
			}
			left.Sub(w.requested)
			free[w.resource] = left
			q.moveEntry(e, queueActive)
			b.woken = append(b.woken, e.pod)
		}
		if len(b.woken) > 0 && !b.inRecheck {
			b.inRecheck = true
			q.recheck = append(q.recheck, b)
		}
	}
	q.markDirty(b)
}

func anyFits(minReq, free map[corev1.ResourceName]resource.Quantity) bool {
	for r, m := range minReq {
		if m.Cmp(free[r]) <= 0 {
			return true
		}
	}
	return false
}

// recheckWakes runs at the end of Admit: a budget that woke pods for capacity counted
// on them being admitted; if one was not (blocked elsewhere, deleted), the pods behind
// it that it held back get their chance now.
func (q *AdmissionQueue) recheckWakes() bool {
	woke := false
	for len(q.recheck) > 0 {
		b := q.recheck[0]
		q.recheck = q.recheck[1:]
		b.inRecheck = false
		missed := false
		for _, p := range b.woken {
			if q.pods[p.pod.UID] != p || p.phase == phaseWaiting {
				missed = true
			}
		}
		b.woken = b.woken[:0]
		if missed && q.alive(b) {
			q.wake(b)
			woke = woke || b.dirtyIndex >= 0
		}
	}
	return woke
}

// wakeAll moves every inadmissible pod of the budget back to active (periodic flush).
func (q *AdmissionQueue) wakeAll(b *budget) {
	for len(b.inadmissible) > 0 {
		q.moveEntry(b.inadmissible[0], queueActive)
	}
	q.markDirty(b)
}

// attach creates the pod's entries in its covering budgets, in the given queue.
func (q *AdmissionQueue) attach(p *podState, to queueKind) {
	p.entries = make([]*entry, len(p.cover))
	for i, b := range p.cover {
		e := &entry{pod: p, budget: b, index: -1}
		p.entries[i] = e
		q.moveEntry(e, to)
		b.wait(p.pod.Usage)
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
		wasHead := b.strict() && e.kind != queueParked && b.strictHead() == e
		q.moveEntry(e, queueNone)
		b.unwait(p.pod.Usage)
		q.markStatus(b)
		if wasHead {
			q.wake(b)
		}
	}
	p.entries = nil
	delete(q.held, p.pod.UID)
}

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

// backoffDuration is the wait before retry number attempts (1 for the first failure).
func (q *AdmissionQueue) backoffDuration(attempts int) time.Duration {
	d := q.opts.initialBackoff
	for i := 1; i < attempts && d < q.opts.maxBackoff; i++ {
		d *= 2
	}
	return min(d, q.opts.maxBackoff)
}
