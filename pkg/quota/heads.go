package quota

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"
)

// AtHead reports which of the given pods wait among the first n gated pods, in
// admission order, of a budget that covers them (or wait with no budget at all): the
// pods whose wait is worth a pod event. A queue of 50,000 pods then costs n events,
// not 50,000; the rest of the queue is in the budget's status and the visibility API.
//
// It reads each budget one of the pods waits in once: O(gated pods of those budgets ×
// log n).
func (r *Reads) AtHead(uids []types.UID, n int) map[types.UID]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[types.UID]bool{}
	if n <= 0 {
		return out
	}
	heads := map[*budget]map[*podState]bool{}
	for _, uid := range uids {
		p := r.pods.get(uid)
		if p == nil || p.phase != phaseWaiting {
			continue
		}
		if !p.queued.any() {
			out[uid] = true // waits in no budget's queue (uncovered and held)
			continue
		}
		for _, e := range p.queued.all() {
			h, ok := heads[e.budget]
			if !ok {
				h = firstGated(&e.budget.queues, n)
				heads[e.budget] = h
			}
			if h[p] {
				out[uid] = true
				break
			}
		}
	}
	return out
}

// firstGated returns the first n gated pods of one budget's queues in admission order,
// keeping only n candidates while it reads them all.
func firstGated(qs *queues, n int) map[*podState]bool {
	first := make([]*podState, 0, n+1) // sorted, best first
	consider := func(p *podState) {
		if len(first) == n && !podLess(p, first[n-1]) {
			return
		}
		i, _ := slices.BinarySearchFunc(first, p, func(x, y *podState) int {
			if podLess(x, y) {
				return -1
			}
			return 1
		})
		first = slices.Insert(first, i, p)
		if len(first) > n {
			first = first[:n]
		}
	}
	for e := range qs.all() {
		consider(e.pod)
	}
	out := make(map[*podState]bool, len(first))
	for _, p := range first {
		out[p] = true
	}
	return out
}
