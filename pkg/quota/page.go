package quota

import (
	"github.com/quotagate/quotagate/api/v1alpha1"
)

// BudgetPage is one page of a budget's gated pods in admission order.
type BudgetPage struct {
	Budget   BudgetKey
	State    v1alpha1.BudgetState
	Strategy v1alpha1.QueueingStrategy
	// Total is how many pods the budget keeps gated.
	Total int
	// Pods are at most limit pods from position offset+1.
	Pods []QueuedPod
}

// Page returns the pods of budget key at positions offset+1 to offset+limit, and false
// if the core holds no such budget. It orders the budget's pods once, O(n log n) on
// pointers, but copies (and writes the wait reason of) only the pods of the page, so a
// small page of a long queue stays cheap; the visibility API pages with it.
func (r *Reads) Page(key BudgetKey, offset, limit int) (BudgetPage, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.topology.Lookup(key)
	if b == nil {
		return BudgetPage{}, false
	}
	state, _ := b.state()
	page := BudgetPage{Budget: key, State: state, Strategy: b.spec.Strategy}
	if page.Strategy == "" {
		page.Strategy = v1alpha1.BestEffortFIFO
	}
	ordered := positionAll(b)
	defer unposition([]*budget{b})
	page.Total = len(ordered)
	offset = max(0, min(offset, len(ordered)))
	end := len(ordered)
	if limit >= 0 && offset+limit < end {
		end = offset + limit
	}
	page.Pods = make([]QueuedPod, 0, end-offset)
	for _, e := range ordered[offset:end] {
		page.Pods = append(page.Pods, r.queuedPod(e.pod, e.position, e.kind.name()))
	}
	return page, true
}
