// Package quota is quotagate's admission core: pure accounting and admission queues.
//
// It knows nothing about the API server. The reconcilers in pkg/quota/controller feed
// it what the informers see (pods, budgets, namespaces) and act on what it decides:
//
//	q := quota.NewAdmissionQueue(quota.WithClock(clk))
//	q.SetNamespace("team-a", nsLabels)
//	q.UpsertBudget(quota.BudgetFromAPI(budget))
//	q.UpsertPod(quota.NewPod(pod, clk.Now()))
//	for _, a := range q.Admit() {        // already reserved ("assumed")
//		err := patch(a.Pod)               // remove the gate
//		q.Done(a.Pod.UID, resultOf(err))  // Done must be called for every admission
//	}
//	if t, ok := q.NextWakeup(); ok { requeueAt(t) }
//	for _, k := range q.DirtyStatuses() { st, _ := q.Status(k); writeStatus(k, st) }
//
// Accounting follows ResourceQuota (usage.go): pod usage is computed with
// k8s.io/component-helpers/resource and keyed by ResourceQuota's names. The queues
// follow kube-scheduler's scheduling queue (queue.go explains them). Every exported
// method of AdmissionQueue is safe for concurrent use.
package quota
