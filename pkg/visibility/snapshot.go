package visibility

import (
	"k8s.io/apimachinery/pkg/types"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// QueuesSnapshot is what the manager's /debug/queues serves: the core's snapshot of
// every queue and, when the manager's estimator has them, the estimated starts of its
// pods by UID, in the API's type (what a pendingpods page gives each pod). Its JSON is
// the core snapshot's with one more field, estimatedStarts, so a reader of the core's
// snapshot still reads it.
type QueuesSnapshot struct {
	quota.Snapshot
	EstimatedStarts map[types.UID]*visv1.EstimatedStart `json:"estimatedStarts,omitempty"`
}

// SnapshotWithEstimates adds to s the estimates e has of its pods; with e nil, or no
// estimate, it has none.
func SnapshotWithEstimates(s quota.Snapshot, e Estimates) QueuesSnapshot {
	out := QueuesSnapshot{Snapshot: s}
	if e == nil {
		return out
	}
	add := func(pods []quota.QueuedPod) {
		for _, p := range pods {
			if _, done := out.EstimatedStarts[p.Pod.UID]; done {
				continue
			}
			if st := estimatedStart(e, p.Pod.UID); st != nil {
				if out.EstimatedStarts == nil {
					out.EstimatedStarts = map[types.UID]*visv1.EstimatedStart{}
				}
				out.EstimatedStarts[p.Pod.UID] = st
			}
		}
	}
	for _, b := range s.Budgets {
		add(b.Pods)
	}
	add(s.Held)
	return out
}
