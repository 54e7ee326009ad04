package quota

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
)

// Exhaustion Evict (docs/budgets.md, "Hour budgets"): a pod admitted under a budget's
// hours reserved its charge times its maximum runtime; one that runs past that maximum
// uses hours nobody reserved, and under Exhaustion Evict it is evicted, through the
// Eviction API as any victim (PodDisruptionBudgets and the budget's blockedTimeout
// apply). Nobody waits for this room: there is no preemptor and no cooldown.

// PreemptMaxRuntime: the victim ran past the maximum runtime it was admitted with, in
// a budget with hours and Exhaustion Evict.
const PreemptMaxRuntime PreemptionReason = "MaxRuntime"

// overrunPods are the pods charged to budget that ran past their maximum runtime.
type overrunPods struct {
	budget *budget
	uids   []types.UID
}

// evictOverrun decides to evict each pod that ran past its maximum runtime and is not
// a victim already (the admission pass calls it after its evaluations).
func (pr *preemptions) evictOverrun(over []overrunPods, pod func(types.UID) *podState) {
	for _, o := range over {
		for _, uid := range o.uids {
			v := pod(uid)
			if v == nil || !v.running() || !v.pod.ReleaseAt.IsZero() {
				continue
			}
			if _, chosen := pr.victims[v]; chosen {
				continue
			}
			if _, gone := pr.evicting[v]; gone {
				continue
			}
			pr.victims[v], v.preemption.kept = &victim{reason: PreemptMaxRuntime, overrun: o.budget}, true
			msg := fmt.Sprintf("it ran past the maximum runtime it was admitted with, and %s evicts such pods (usageLimits.exhaustion Evict): the hours it reserved are used up",
				BudgetFor(v.pod.Namespace, o.budget.key))
			pr.decided = append(pr.decided, Preemption{Victim: v.pod.PodRef, Reason: PreemptMaxRuntime, Budget: o.budget.key, From: o.budget.key,
				BlockedTimeout: o.budget.spec.BlockedTimeout, VictimMessage: msg})
		}
	}
}
