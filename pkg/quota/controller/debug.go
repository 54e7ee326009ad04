package controller

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/visibility"
)

// DebugHandlers returns the read-only endpoints served beside /metrics, behind the same
// authentication and authorization: /debug/queues is a snapshot of every budget's
// queues in admission order (?budget=ns/name or ?budget=name for one budget), with the
// estimator's estimated starts of their pods when it is on. It costs nothing when nobody
// asks. Only the leader answers: a standby replica's core is fed by its informers but
// never evaluates its queues, so its order and reasons would be stale.
func (c *Controller) DebugHandlers() map[string]http.Handler {
	var estimates visibility.Estimates
	if c.estimates != nil {
		estimates = c
	}
	queues := QueuesHandler(c.core.Reader(), estimates)
	return map[string]http.Handler{"/debug/queues": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !c.leading.Load() {
			http.Error(w, "this manager replica is not the leader (or has not synced yet): ask the leader, named by the manager's leader election Lease", http.StatusServiceUnavailable)
			return
		}
		queues.ServeHTTP(w, r)
	})}
}

// QueuesHandler serves q's snapshot as JSON (visibility.QueuesSnapshot), with the
// estimated starts e has of its pods (none with e nil).
func QueuesHandler(q quota.Reader, e visibility.Estimates) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "only GET is served", http.StatusMethodNotAllowed)
			return
		}
		snap := q.Snapshot()
		if want := r.URL.Query().Get("budget"); want != "" {
			key := quota.BudgetKey{Name: want}
			if ns, name, ok := strings.Cut(want, "/"); ok {
				key = quota.BudgetKey{Namespace: ns, Name: name}
			}
			var found []quota.BudgetQueue
			for _, b := range snap.Budgets {
				if b.Budget == key {
					found = append(found, b)
				}
			}
			if len(found) == 0 {
				http.Error(w, "no budget "+want, http.StatusNotFound)
				return
			}
			snap = quota.Snapshot{Budgets: found}
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(visibility.SnapshotWithEstimates(snap, e))
	})
}
