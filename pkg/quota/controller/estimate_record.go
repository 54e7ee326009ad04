package controller

import (
	"slices"
	"sync"
	"time"

	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/visibility"
)

// The estimates' track record (docs/visibility.md, "A track record"): for each budget,
// how far from their admission the first estimates of its last pods were, and how many
// admissions fell within their ranges, as kubectl quotagate why shows it. It is kept in
// memory, bounded, since the manager started: a new leader, or a restarted one, starts
// a new record (the metrics keep the long view).

// Bounds of the track record.
const (
	// recordWindow is how many admissions a budget's record keeps: its last.
	recordWindow = 200
	// recordBudgets is how many budgets have a record; past it, a budget not seen yet
	// has none (some 2 KB each: 1.6 MB at most).
	recordBudgets = 1024
)

type trackRecord struct {
	mu      sync.Mutex
	since   time.Time
	budgets map[quota.BudgetKey]*budgetRecord
}

// budgetRecord is a ring of a budget's last recordWindow admissions.
type budgetRecord struct {
	errs   [recordWindow]time.Duration
	within [recordWindow]bool
	n      int // filled, at most recordWindow
	next   int
}

func newTrackRecord(since time.Time) *trackRecord {
	return &trackRecord{since: since, budgets: map[quota.BudgetKey]*budgetRecord{}}
}

// add records one admission in key's record: its first estimate's error, and whether
// it was admitted within that estimate's range.
func (r *trackRecord) add(key quota.BudgetKey, err time.Duration, within bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.budgets[key]
	if b == nil {
		if len(r.budgets) >= recordBudgets {
			return
		}
		b = &budgetRecord{}
		r.budgets[key] = b
	}
	b.errs[b.next], b.within[b.next] = err, within
	b.next = (b.next + 1) % recordWindow
	b.n = min(b.n+1, recordWindow)
}

// forget drops key's record: the budget was deleted.
func (r *trackRecord) forget(key quota.BudgetKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.budgets, key)
}

// of is key's record; false when it has none.
func (r *trackRecord) of(key quota.BudgetKey) (estimate.Record, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.budgets[key]
	if b == nil || b.n == 0 {
		return estimate.Record{}, false
	}
	errs := slices.Clone(b.errs[:b.n])
	slices.Sort(errs)
	within := 0
	for _, w := range b.within[:b.n] {
		if w {
			within++
		}
	}
	return estimate.Record{Budget: key, Pods: b.n, MedianError: errs[(b.n-1)/2], Within: within, Since: r.since}, true
}

// EstimateRecord is budget's track record since this manager started; false when the
// estimator is off or has judged no admission in it yet.
func (c *Controller) EstimateRecord(budget quota.BudgetKey) (estimate.Record, bool) {
	if c.estimates == nil {
		return estimate.Record{}, false
	}
	return c.estimates.record.of(budget)
}

// The visibility API shows a pod's status with its budget's track record.
var _ visibility.EstimateRecords = (*Controller)(nil)
