package estimate

import (
	"slices"
	"sync"
	"time"

	"github.com/quotagate/quotagate/pkg/quota"
)

// Bounds of the track record.
const (
	// recordWindow is how many admissions a budget's record keeps: its last.
	recordWindow = 200
	// recordBudgets is how many budgets have a record; past it, a budget not seen yet
	// has none (some 2 KB each: 1.6 MB at most).
	recordBudgets = 1024
)

// TrackRecord is the estimates' track record (docs/visibility.md, "A track record"):
// for each budget, how far from their admission the first estimates of its last pods
// were, and how many admissions fell within their ranges, as kubectl quotagate why
// shows it. It is kept in memory, bounded, since the manager started: a new leader, or
// a restarted one, starts a new record (the metrics keep the long view). It is safe
// for concurrent use.
type TrackRecord struct {
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

// NewTrackRecord is an empty record that starts at since.
func NewTrackRecord(since time.Time) *TrackRecord {
	return &TrackRecord{since: since, budgets: map[quota.BudgetKey]*budgetRecord{}}
}

// Add records one admission in key's record: its first estimate's error, and whether
// it was admitted within that estimate's range.
func (r *TrackRecord) Add(key quota.BudgetKey, err time.Duration, within bool) {
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

// Forget drops key's record: the budget was deleted.
func (r *TrackRecord) Forget(key quota.BudgetKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.budgets, key)
}

// Of is key's record; false when it has none.
func (r *TrackRecord) Of(key quota.BudgetKey) (Record, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.budgets[key]
	if b == nil || b.n == 0 {
		return Record{}, false
	}
	errs := slices.Clone(b.errs[:b.n])
	slices.Sort(errs)
	within := 0
	for _, w := range b.within[:b.n] {
		if w {
			within++
		}
	}
	return Record{Budget: key, Pods: b.n, MedianError: errs[(b.n-1)/2], Within: within, Since: r.since}, true
}
