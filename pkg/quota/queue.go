package quota

// The admission queues, after kube-scheduler's scheduling queue.
//
// Every budget keeps each gated pod it covers in exactly one of four places:
//
//   - active: a heap in admission order (priority high first, then creation time, then
//     UID; the members of a group share the key of their best member, so a group moves
//     as one unit). Admit (the admitter) pops heads from the active heaps of the budgets
//     marked dirty.
//   - backoff: pods whose ungate patch failed transiently. The retry time belongs to the
//     pod, so one heap by retry time (the admitter's backoff) serves every budget; each
//     budget keeps its backoff pods in a heap in admission order, because a StrictFIFO
//     head in backoff still blocks the pods behind it.
//   - inadmissible: pods that were evaluated and did not fit. They stay there until an
//     event could change the answer in that budget: a charged pod of the budget ends or
//     is deleted, its hard changes, it opens, a budget is deleted, or (StrictFIFO) its
//     head leaves. Then, like kube-scheduler's queueing hints, only the pods that event
//     may let in move back to active: those this budget blocked, and of those blocked
//     for capacity, the ones that fit in what is free, in admission order (see wake).
//     A periodic flush (5 minutes) moves every inadmissible pod back, as a safety net.
//     Kept in admission order too, for the StrictFIFO head.
//   - parked: pods no capacity event can admit: requests above hard ("never fit"),
//     groups with fewer members than their size or with an unusable size. They are
//     re-examined when the pod, its group or the budget's hard changes (kube-scheduler
//     keeps PreEnqueue-gated pods aside the same way). Parked pods never block a queue.
//
// How a pod moves: UpsertPod puts a new gated pod in active in every budget that covers
// it (or parked). Admit evaluates the head of a dirty budget against every budget that
// covers the pod: if it is admitted, its usage is charged to all of them at once and it
// leaves all their queues; if not, it moves from active to inadmissible in all of them
// and remembers why. Done with a transient failure gives the charge back and puts the
// pod in backoff (100 ms, doubling, at most 10 s) in all its budgets; when the time
// passes it moves to active. A pod that ends releases its charge and wakes only the
// budgets it was charged to.

import (
	"cmp"
	"iter"
	"slices"

	"github.com/quotagate/quotagate/pkg/quota/internal/heap"
	"github.com/quotagate/quotagate/pkg/quota/internal/order"
)

// Queue names a place where a gated pod waits, as snapshots and metrics show it.
type Queue string

// The queues. The comment at the top of this file says how a pod moves between them.
const (
	QueueActive       Queue = "active"
	QueueBackoff      Queue = "backoff"
	QueueInadmissible Queue = "inadmissible"
	QueueParked       Queue = "parked"
)

type queueKind uint8

const (
	queueNone queueKind = iota
	queueActive
	queueBackoff
	queueInadmissible
	queueParked
)

func (k queueKind) name() Queue {
	switch k {
	case queueActive:
		return QueueActive
	case queueBackoff:
		return QueueBackoff
	case queueInadmissible:
		return QueueInadmissible
	case queueParked:
		return QueueParked
	}
	return ""
}

// comparePods is the admission order of pods: by key (order.Key.Compare; a group's
// members share their group's), then by the pod's own UID.
func comparePods(a, b *podState) int {
	if c := a.key().Compare(b.key()); c != 0 {
		return c
	}
	return compareUIDs(a, b)
}

// compareUIDs orders pods by UID: the order of every walk over pods that must not
// depend on map order.
func compareUIDs(a, b *podState) int { return cmp.Compare(a.pod.UID, b.pod.UID) }

// podLess is comparePods as a heap's Less.
func podLess(a, b *podState) bool {
	return comparePods(a, b) < 0
}

// key is the pod's place in admission order: its own, or its group's, which every
// gated member shares (group).
func (p *podState) key() *order.Key {
	if g := p.group; g != nil {
		return &g.order
	}
	return &p.order
}

// ownKey is the pod's own place in admission order.
func ownKey(p *Pod) order.Key { return order.Of(p.Priority, p.Created, p.UID) }

// entry is one pod in one budget's queues.
type entry struct {
	pod    *podState
	budget *budget
	kind   queueKind
	index  int // in its heap, or -1

	// position is the pod's place among the budget's gated pods in admission order
	// (1 first), set by Snapshot for its own duration (queues.positioned).
	position int
}

// entryLess is the admission order of entries (comparePods), for the queue heaps.
func entryLess(a, b *entry) bool { return podLess(a.pod, b.pod) }

// entryIndex is where an entry keeps its position in the queue heap it is in.
func entryIndex(e *entry) *int { return &e.index }

// first returns the first entry of a queue heap in admission order, nil when empty.
func first(h *heap.Heap[*entry]) *entry {
	e, _ := h.Peek()
	return e
}

// queues are one budget's places for the gated pods it covers: three heaps in
// admission order (entryLess) that track each entry's position, so that an entry can
// leave from the middle, and the parked entries.
type queues struct {
	active, backoff, inadmissible heap.Heap[*entry]
	parked                        map[*entry]struct{}

	// positioned is set while Snapshot runs: every entry's position is up to date, so
	// the wait reasons it writes need not count the budget's pods for each of them.
	positioned bool
}

func (q *queues) init(*budget) {
	q.active = heap.New(entryLess, entryIndex)
	q.backoff = heap.New(entryLess, entryIndex)
	q.inadmissible = heap.New(entryLess, entryIndex)
	q.parked = map[*entry]struct{}{}
}

// move takes e out of the queue it is in and puts it in to (queueNone: out of every
// queue), and reports whether the active head changed.
func (q *queues) move(e *entry, to queueKind) (headChanged bool) {
	from := e.kind
	if from == to {
		return false
	}
	headBefore := first(&q.active)
	switch from {
	case queueParked:
		delete(q.parked, e)
	case queueActive, queueBackoff, queueInadmissible:
		q.heapOf(from).Remove(e)
	}
	e.kind = to
	switch to {
	case queueParked:
		q.parked[e] = struct{}{}
	case queueActive, queueBackoff, queueInadmissible:
		q.heapOf(to).Push(e)
	}
	return first(&q.active) != headBefore
}

func (q *queues) heapOf(k queueKind) *heap.Heap[*entry] {
	switch k {
	case queueActive:
		return &q.active
	case queueBackoff:
		return &q.backoff
	case queueInadmissible:
		return &q.inadmissible
	}
	return nil
}

// entries returns every entry of the budget's queues, in no particular order.
func (q *queues) entries() []*entry {
	entries := make([]*entry, 0, q.gated())
	for _, h := range [...]*heap.Heap[*entry]{&q.active, &q.backoff, &q.inadmissible} {
		entries = append(entries, h.Items()...)
	}
	for e := range q.parked {
		entries = append(entries, e)
	}
	return entries
}

// inOrder returns every entry of the budget's queues, in admission order.
func (q *queues) inOrder() []*entry {
	entries := q.entries()
	slices.SortFunc(entries, func(x, y *entry) int { return comparePods(x.pod, y.pod) })
	return entries
}

// activeHead and inadmissibleHead are the first entries of active and inadmissible
// in admission order (nil when empty).
func (q *queues) activeHead() *entry       { return first(&q.active) }
func (q *queues) inadmissibleHead() *entry { return first(&q.inadmissible) }

// in yields the entries of one queue (not queueNone), in no particular order; the
// caller moves none of them while it reads.
func (q *queues) in(k queueKind) iter.Seq[*entry] {
	return func(yield func(*entry) bool) {
		if k == queueParked {
			for e := range q.parked {
				if !yield(e) {
					return
				}
			}
			return
		}
		for _, e := range q.heapOf(k).Items() {
			if !yield(e) {
				return
			}
		}
	}
}

// all yields every entry of the budget's queues, in no particular order, without
// copying them into a list (entries does).
func (q *queues) all() iter.Seq[*entry] {
	return func(yield func(*entry) bool) {
		for _, k := range []queueKind{queueActive, queueBackoff, queueInadmissible, queueParked} {
			for e := range q.in(k) {
				if !yield(e) {
					return
				}
			}
		}
	}
}

// position gives every entry its place in admission order, for rank to read until
// unposition (Snapshot, WaitReasons, Page), and returns them in that order.
func (q *queues) position() []*entry {
	entries := q.inOrder()
	for k, e := range entries {
		e.position = k + 1
	}
	q.positioned = true
	return entries
}

func (q *queues) unposition() { q.positioned = false }

// rank returns p's position among the budget's gated pods in admission order (1 first)
// and how many there are: while positioned, the position written on e (p's entry here;
// nil when not known), else by counting: O(n), no sort, no copy.
func (q *queues) rank(p *podState, e *entry) (k, n int) {
	if q.positioned && e != nil {
		return e.position, q.gated()
	}
	k = 1
	for e := range q.all() {
		n++
		if e.pod != p && podLess(e.pod, p) {
			k++
		}
	}
	return k, n
}

// gated counts the pods waiting in any of the budget's queues.
func (q *queues) gated() int {
	return q.active.Len() + q.backoff.Len() + q.inadmissible.Len() + len(q.parked)
}

// strictHead is the first pod in admission order among the budget's active, backoff and
// inadmissible pods: the one a StrictFIFO budget must admit before any other.
func (q *queues) strictHead() *entry {
	head := first(&q.active)
	for _, e := range [...]*entry{first(&q.backoff), first(&q.inadmissible)} {
		if e != nil && (head == nil || podLess(e.pod, head.pod)) {
			head = e
		}
	}
	return head
}
