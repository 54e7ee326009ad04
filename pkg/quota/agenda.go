package quota

import (
	"iter"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/pkg/quota/internal/heap"
	"github.com/quotagate/quotagate/pkg/quota/internal/topology"
)

// agenda is the part that keeps what the next Admit looks at: the budgets whose active
// heads need evaluating (dirty, the best head first), the budgets whose status may have
// changed, and the gated pods held outside every budget. It moves a pod's entries
// between its budgets' queues (attach, detach, move), and wakes the inadmissible pods
// an event in a budget may let in (wakeable). It reads the topology only to tell
// whether a budget is still alive.
type agenda struct {
	topology *topology.Topology[*budget]
	observer Observer // WithObserver; may be nil

	dirty    heap.Heap[*budget]      // budgets whose active heads need evaluating (dirtyLess)
	nInadm   int                     // inadmissible entries, over all budgets
	held     map[types.UID]*podState // gated pods held because no budget covers them
	statuses map[BudgetKey]struct{}  // budgets whose status may have changed

	recheck []*budget   // budgets that woke pods for capacity, see wake
	wakeBuf []*entry    // wake's reused list of the pods it wakes for capacity
	settled []*podState // the pods wakeAdmitted left alone, while verifySettled is set
}

func newAgenda(t *topology.Topology[*budget], obs Observer) *agenda {
	return &agenda{
		topology: t,
		observer: obs,
		dirty:    heap.New(dirtyLess, func(b *budget) *int { return &b.dirtyIndex }),
		held:     map[types.UID]*podState{},
		statuses: map[BudgetKey]struct{}{},
	}
}

// markStatus notes that b's status may have changed.
func (a *agenda) markStatus(b *budget) { a.statuses[b.key] = struct{}{} }

// takeStatuses returns, sorted, and forgets the budgets whose status may have changed
// that still exist.
func (a *agenda) takeStatuses() []BudgetKey {
	out := make([]BudgetKey, 0, len(a.statuses))
	for k := range a.statuses {
		if a.topology.Lookup(k) != nil {
			out = append(out, k)
		}
	}
	clear(a.statuses)
	slices.SortFunc(out, BudgetKey.Compare)
	return out
}

// forgetBudget drops a deleted budget from the agenda.
func (a *agenda) forgetBudget(b *budget) {
	delete(a.statuses, b.key)
	a.dirty.Remove(b)
}

// next returns the dirty budget with the best active head, or nil; pop takes it off.
func (a *agenda) next() *budget {
	b, _ := a.dirty.Peek()
	return b
}

func (a *agenda) pop() { a.dirty.Pop() }

// move moves one entry between queues of its budget, keeping counts and the dirty heap
// right. to may be queueNone (leave the queues).
func (a *agenda) move(e *entry, to queueKind) {
	from := e.kind
	if from == to {
		return
	}
	b := e.budget
	headChanged := b.queues.move(e, to)
	if from == queueInadmissible {
		a.nInadm--
	}
	if to == queueInadmissible {
		a.nInadm++
	}
	if b.dirtyIndex >= 0 && headChanged {
		a.dirty.Fix(b)
	}
	if a.observer != nil {
		a.observer.Moved(b.key, from.name(), to.name())
	}
}

// markDirty schedules the budget's active head for evaluation by the next Admit.
func (a *agenda) markDirty(b *budget) {
	if b.dirtyIndex < 0 && b.queues.activeHead() != nil {
		a.dirty.Push(b)
	}
}

// attach creates the pod's entries in its covering budgets, in the given queue.
func (a *agenda) attach(p *podState, to queueKind) {
	p.queued.list = make([]*entry, len(p.cover))
	for i, b := range p.cover {
		e := &entry{pod: p, budget: b, index: -1}
		p.queued.list[i] = e
		a.move(e, to)
		b.ledger.Wait(p.usage(), p.pod.Usage)
		a.markStatus(b)
		if to == queueActive {
			a.markDirty(b)
		}
	}
}

// hold keeps a gated pod that no budget covers until something does.
func (a *agenda) hold(p *podState) { a.held[p.pod.UID] = p }

// isHeld reports whether the pod under uid is held; heldPods yields those held, in no
// order.
func (a *agenda) isHeld(uid types.UID) bool { _, ok := a.held[uid]; return ok }

func (a *agenda) heldPods() iter.Seq[*podState] { return maps.Values(a.held) }

// inadmissible reports whether any budget has an inadmissible pod (the flush is due
// only then).
func (a *agenda) inadmissible() bool { return a.nInadm > 0 }

// detach removes the pod from every queue it is in, and from the held pods. A
// StrictFIFO budget whose head leaves is woken: the pod behind may go now.
func (a *agenda) detach(p *podState) { a.leave(p, false) }

// detachAdmitted is detach for a pod being admitted: the borrowing families it leaves
// are woken with wakeAdmitted, since it takes room rather than giving it.
func (a *agenda) detachAdmitted(p *podState) { a.leave(p, true) }

func (a *agenda) leave(p *podState, admitted bool) {
	for _, e := range p.queued.list {
		b := e.budget
		wasHead := b.strict() && e.kind != queueParked && b.queues.strictHead() == e
		a.move(e, queueNone)
		b.ledger.Unwait(p.usage())
		a.markStatus(b)
		if wasHead {
			a.wake(b)
		}
		if f := b.borrowingParent(); f != nil && a.topology.Alive(f) {
			// A pod that waited on the family may have left it (familyExcess).
			if admitted {
				a.wakeAdmitted(f)
			} else {
				a.wake(f)
			}
		}
	}
	p.queued.list = nil
	delete(a.held, p.pod.UID)
}

// moveAll moves every entry of the pod that is in queue from to queue to.
func (a *agenda) moveAll(p *podState, from, to queueKind) {
	for _, e := range p.queued.list {
		if e.kind == from {
			a.move(e, to)
			if to == queueActive {
				a.markDirty(e.budget)
			}
		}
	}
}

// flush moves every inadmissible pod back to active (the periodic flush).
func (a *agenda) flush() {
	if a.nInadm == 0 {
		return
	}
	for _, b := range a.topology.Sorted() {
		a.wakeAll(b)
	}
}

// dirtyLess orders the dirty budgets, the one with the best active head first, so that
// pods competing for a shared parent are evaluated in admission order.
func dirtyLess(x, y *budget) bool {
	a, b := x.queues.activeHead(), y.queues.activeHead()
	switch {
	case a == nil || b == nil:
		if (a == nil) != (b == nil) {
			return b == nil
		}
	case a.pod != b.pod:
		return podLess(a.pod, b.pod)
	}
	return x.key.Compare(y.key) < 0
}
