package app

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// How long each budget's oldest gated pod has waited: from the manager's snapshot when
// the user names the manager, else from the gated pods, with the manager's coverage
// rules.

// loadOldestWaits finds the oldest wait of each budget: from the manager's snapshot when
// the user named the manager (--manager-*), else from the gated pods it covers, with the
// manager's own coverage rules, which give the same figures. Only a named manager that
// cannot be read gets a note; with -n, a ClusterBudget's figure is that namespace's
// pods' (the command's help says so).
func loadOldestWaits(ctx context.Context, e *env, c client.Client, ns string, budgets []v1alpha1.Budget, clusterBudgets []v1alpha1.ClusterBudget) (map[quota.BudgetKey]time.Time, []string, error) {
	snap, note, err := e.snapshot(ctx)
	if err != nil {
		return nil, nil, err
	}
	if snap != nil {
		return oldestFromSnapshot(snap.raw), nil, nil
	}
	var notes []string
	if note != "" {
		notes = append(notes, note+"\n  the oldest waits are computed from the gated pods' creation times instead")
	}
	oldest, err := oldestFromPods(ctx, c, ns, budgets, clusterBudgets)
	if err != nil {
		return nil, append(notes, fmt.Sprintf("oldest waits are not shown: %v", err)), nil
	}
	return oldest, notes, nil
}

func oldestFromSnapshot(s quota.Snapshot) map[quota.BudgetKey]time.Time {
	out := map[quota.BudgetKey]time.Time{}
	for _, b := range s.Budgets {
		for _, p := range b.Pods {
			if t, ok := out[b.Budget]; !ok || p.Created.Before(t) {
				out[b.Budget] = p.Created
			}
		}
	}
	return out
}

// oldestFromPods finds each budget's oldest gated pod without the manager: it feeds the
// budgets, namespaces and gated pods it can read to a local admission core, which
// decides coverage by the manager's own rules. With ns set it sees only that
// namespace's pods, so a ClusterBudget's figure covers that namespace only.
func oldestFromPods(ctx context.Context, c client.Client, ns string, budgets []v1alpha1.Budget, clusterBudgets []v1alpha1.ClusterBudget) (map[quota.BudgetKey]time.Time, error) {
	core := quota.NewAdmissionQueue()
	var namespaces []corev1.Namespace
	if ns != "" {
		var n corev1.Namespace
		if err := c.Get(ctx, client.ObjectKey{Name: ns}, &n); err != nil {
			return nil, fmt.Errorf("reading namespace %s: %w", ns, err)
		}
		namespaces = []corev1.Namespace{n}
	} else {
		var list corev1.NamespaceList
		if err := c.List(ctx, &list); err != nil {
			return nil, fmt.Errorf("listing namespaces: %w", err)
		}
		namespaces = list.Items
	}
	for _, n := range namespaces {
		core.SetNamespace(n.Name, n.Labels)
	}
	for i := range budgets {
		core.UpsertBudget(quota.BudgetFromAPI(&budgets[i]))
	}
	for i := range clusterBudgets {
		core.UpsertBudget(quota.ClusterBudgetFromAPI(&clusterBudgets[i]))
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	for i := range pods.Items {
		p := quota.NewPod(&pods.Items[i], v1alpha1.SchedulingGate, time.Time{})
		if p.Gated && !p.Terminal {
			core.UpsertPod(p)
		}
	}
	return oldestFromSnapshot(core.Reader().Snapshot()), nil
}
