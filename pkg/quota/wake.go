package quota

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
	"github.com/quotagate/quotagate/pkg/quota/internal/heap"
)

// Waking (kube-scheduler's queueing hints): an event in a budget (a charged pod ends,
// hard grows, it opens, a StrictFIFO head leaves) moves back to active only the
// inadmissible pods whose answer the event may have changed. Pods blocked by another
// budget stay: that budget's own events wake them. So an event costs a pass over this
// budget's inadmissible pods and the evaluation of those that may go.

// wakeable picks the budget's inadmissible entries that an event in it may let in:
//
//   - retry: those it blocked for another reason than capacity, and those no live budget
//     blocks (alive reports whether a budget still exists and resolves);
//   - fit: of those it blocked for capacity, the ones that fit in what is free when the
//     ones before them (in admission order) are admitted first, in that order. A group
//     is counted once: one member brings its whole group, and its wait names the
//     group's sum. Picking stops once nothing left could fit.
//
// It changes nothing; wake moves what it picks. fit is appended to buf (a buffer the
// caller reuses, so that an event allocates no list of its own). settled, when not nil,
// names pods that need no look (wakeAdmitted).
func wakeable(b *budget, alive func(*budget) bool, settled func(*podState) bool, buf []*entry) (retry, fit []*entry) {
	fit = buf
	var capacity []*entry
	minReq := map[corev1.ResourceName]amount.Amount{}
	free := map[corev1.ResourceName]amount.Amount{}
	bAlive := alive(b) // most of b's inadmissible pods wait on b: one look for them all
	for _, e := range b.queues.inadmissible.Items() {
		w := &e.pod.wait
		switch {
		case w.budget == b && !bAlive, w.budget != b && !alive(w.budget), w.anyFlavor:
			retry = append(retry, e)
		case w.budget != b:
		case settled != nil && settled(e.pod):
		case w.code != CodeInsufficient:
			retry = append(retry, e)
		default:
			f, ok := free[w.resource]
			if !ok {
				f = b.ledger.Of(w.resource).Free()
				free[w.resource] = f
			}
			if f.Less(w.requested) {
				continue
			}
			capacity = append(capacity, e)
			if m, ok := minReq[w.resource]; !ok || w.requested.Less(m) {
				minReq[w.resource] = w.requested
			}
		}
	}
	// In admission order, without touching the entries' positions in their queue heaps.
	h := heap.From(capacity, entryLess)
	var groups map[*group]bool
	for h.Len() > 0 && anyFits(minReq, free) {
		e := h.Pop()
		if g := e.pod.group; g != nil {
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
		if left.Less(w.requested) {
			continue
		}
		free[w.resource] = left.Sub(w.requested)
		fit = append(fit, e)
	}
	return retry, fit
}

func anyFits(minReq, free map[corev1.ResourceName]amount.Amount) bool {
	for r, m := range minReq {
		if !free[r].Less(m) {
			return true
		}
	}
	return false
}

// wake moves back to active what wakeable picks. The pods it moves for capacity are
// assumed to be admitted; recheckWakes checks that at the end of Admit.
func (a *agenda) wake(b *budget) { a.wakeSkipping(b, nil) }

// wakeAdmitted is wake for a borrowing parent f after a pod of its family was admitted,
// which takes room and gives none (families.unitAdmitted calls wake when it may give
// some). The pods that wait on f's family for lendable quota (NoLendableQuota) are left
// alone: each failed after f's room last grew, since wake moves them all back to
// active, and they would fail the same way again. Without this, each admission in a busy
// family had every pod waiting on it evaluated again (BenchmarkCoreOnKueueScenario).
func (a *agenda) wakeAdmitted(f *budget) {
	a.wakeSkipping(f, func(p *podState) bool {
		settled := p.wait.code == CodeNoLendable
		if settled && verifySettled {
			a.settled = append(a.settled, p)
		}
		return settled
	})
}

// checkSettled panics when a pod wakeAdmitted left alone, and nothing has woken since,
// would fit now (verifySettled; a pod of a group or on a flavor is not checked).
func (a *agenda) checkSettled(capacityWait func([]*budget, demand) (waitInfo, bool), stuck func(*podState) bool) {
	for _, p := range a.settled {
		f := p.wait.budget
		if p.forgotten || p.phase != phaseWaiting || p.wait.code != CodeNoLendable || p.group != nil || p.wait.flavor != "" || stuck(p) ||
			!slices.ContainsFunc(p.queued.list, func(e *entry) bool { return e.budget == f && e.kind == queueInadmissible }) {
			continue
		}
		if w, over := capacityWait(p.cover, p.adds); !over {
			panic(fmt.Sprintf("pod %s was left waiting on %s's family, and it fits now (%+v)", p.pod.PodRef, f.key, w))
		}
	}
	clear(a.settled)
	a.settled = a.settled[:0]
}

func (a *agenda) wakeSkipping(b *budget, settled func(*podState) bool) {
	retry, fit := wakeable(b, a.topology.Alive, settled, a.wakeBuf[:0])
	for _, e := range retry {
		a.move(e, queueActive)
	}
	for _, e := range fit {
		a.move(e, queueActive)
		b.woken = append(b.woken, e.pod)
	}
	clear(fit) // hold no entries beyond the event
	a.wakeBuf = fit[:0]
	if len(b.woken) > 0 && !b.inRecheck {
		b.inRecheck = true
		a.recheck = append(a.recheck, b)
	}
	a.markDirty(b)
}

// wakeIfAlive wakes b unless it was deleted or replaced.
func (a *agenda) wakeIfAlive(b *budget) {
	if a.topology.Alive(b) {
		a.wake(b)
	}
}

// recheckWakes runs at the end of Admit: a budget that woke pods for capacity counted
// on them being admitted; if one was not (blocked elsewhere, deleted), the pods behind
// it that it held back get their chance now.
func (a *agenda) recheckWakes() bool {
	woke := false
	for len(a.recheck) > 0 {
		b := a.recheck[0]
		a.recheck = a.recheck[1:]
		b.inRecheck = false
		missed := false
		for _, p := range b.woken {
			if p.forgotten || p.phase == phaseWaiting {
				missed = true
			}
		}
		b.woken = b.woken[:0]
		if missed && a.topology.Alive(b) {
			a.wake(b)
			woke = woke || b.dirtyIndex >= 0
		}
	}
	return woke
}

// wakeAll moves every inadmissible pod of the budget back to active (periodic flush).
func (a *agenda) wakeAll(b *budget) {
	for e := b.queues.inadmissibleHead(); e != nil; e = b.queues.inadmissibleHead() {
		a.move(e, queueActive)
	}
	a.markDirty(b)
}
