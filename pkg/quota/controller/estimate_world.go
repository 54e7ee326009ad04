package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/quota"
)

// The estimator's world (estimator): what it simulates, read from the manager's
// caches as the core sees it.

// world is what the informers' caches hold at now, as Simulate takes it: every
// budget, namespace and flavor; the pods that hold quota (not gated, not terminal) and
// the gated pods, each with what the Learner expects of it (estimate.WorldBuilder).
// pace, when set, is called every worldStep pods.
func (c *Controller) world(ctx context.Context, now time.Time, pace func()) (estimate.World, error) {
	b, err := c.worldBuilder(ctx, now, c.estimates.learner, c.estimates.pods, pace)
	if err != nil {
		return estimate.World{}, err
	}
	return b.World(), nil
}

// worldBuilder is world before it is returned: a WorldBuilder that holds the caches'
// budgets, namespaces, flavors and pods (listed from pods, each expected by l), to
// which a what-if adds pods of its own (SimulatePods). pace, when set, is called every
// worldStep pods, as between the steps of a simulation.
func (c *Controller) worldBuilder(ctx context.Context, now time.Time, l *estimate.Learner, pods podLister, pace func()) (*estimate.WorldBuilder, error) {
	if pods == nil {
		return nil, errors.New("the pod cache is not set up")
	}
	var namespaces corev1.NamespaceList
	if err := c.reader.List(ctx, &namespaces, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	nsLabels := make(map[string]map[string]string, len(namespaces.Items))
	for i := range namespaces.Items {
		ns := &namespaces.Items[i]
		nsLabels[ns.Name] = ns.Labels
	}
	var budgets v1alpha1.BudgetList
	if err := c.reader.List(ctx, &budgets, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing budgets: %w", err)
	}
	var clusterBudgets v1alpha1.ClusterBudgetList
	if err := c.reader.List(ctx, &clusterBudgets, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing clusterbudgets: %w", err)
	}
	// Each budget as the core has it now, with what its windows set, and what they will
	// set when they open or end within the estimator's horizon.
	all := make([]quota.Budget, 0, len(budgets.Items)+len(clusterBudgets.Items))
	var changes []estimate.BudgetChange
	horizon := now.Add(estimate.DefaultHorizon)
	add := func(obj client.Object, written quota.Budget) {
		spec, ahead, ok := c.windows.ahead(obj, now, horizon)
		if !ok {
			spec = written
		}
		all = append(all, spec)
		changes = append(changes, ahead...)
	}
	for i := range budgets.Items {
		add(&budgets.Items[i], quota.BudgetFromAPI(&budgets.Items[i]))
	}
	for i := range clusterBudgets.Items {
		add(&clusterBudgets.Items[i], quota.ClusterBudgetFromAPI(&clusterBudgets.Items[i]))
	}
	slices.SortStableFunc(changes, func(a, b estimate.BudgetChange) int { return a.At.Compare(b.At) })
	var flavorList v1alpha1.FlavorList
	if err := c.reader.List(ctx, &flavorList, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing flavors: %w", err)
	}
	flavors := make([]quota.Flavor, 0, len(flavorList.Items))
	for i := range flavorList.Items {
		flavors = append(flavors, quota.FlavorFromAPI(&flavorList.Items[i]))
	}

	b := estimate.NewWorldBuilder(now, l, nsLabels, all, flavors)
	b.SetChanges(changes)
	step := everyN(worldStep, pace)
	for _, item := range pods.List() {
		if step != nil {
			step()
		}
		if cp, ok := item.(*cachedPod); ok {
			f := cp.factsOf()
			b.Add(c.viewOf(cp, now), &f)
		}
	}
	if c.estimates != nil {
		b.AddArrivals(c.estimates.arrivals.Streams(now))
	}
	return b, nil
}

// viewOf is the core's view of a cached pod at now, charged for its devices and
// resolved against what it waits for and its PodGroup as upsertPod gives it to the
// core, read only: unlike resolve, it records nothing in the claims' or the
// dependencies' users (a pod deleted since the store was listed must not come back
// there).
func (c *Controller) viewOf(cp *cachedPod, now time.Time) quota.Pod {
	p := cp.at(now, c.opts.Gate)
	if c.claims != nil && usesDevices(cp) {
		c.claims.mu.Lock()
		p = c.claims.view(p, cp)
		c.claims.mu.Unlock()
	}
	if x := c.dependencies; x != nil && (p.Dependencies != nil || p.PodGroup != nil) {
		x.mu.Lock()
		p = x.view(p, waitsOf(p, cp))
		x.mu.Unlock()
	}
	return p
}
