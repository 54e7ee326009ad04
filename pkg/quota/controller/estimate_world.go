package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/quota/controller/internal/estimator"
	"github.com/quotagate/quotagate/pkg/quota/controller/internal/pacing"
)

// The estimator's world and the what-if's (package estimator): what they simulate,
// read from the manager's caches as the core sees it (worldSource, their
// estimator.Caches).

// worldSource is what a world is built from: the informers' caches, the budgets'
// windows, and the claims and dependencies the core's views of pods are resolved
// against. Building one takes none of the core's locks.
type worldSource struct {
	reader       client.Reader
	pods         podLister // the pod cache; nil when its store cannot list
	windows      *budgetWindows
	claims       *claimIndex      // nil when resource.k8s.io/v1 is not served
	dependencies *dependencyIndex // nil in unit tests that build a Controller by hand
	gate         string
}

// worldSource is the Controller's source of worlds; call it once the claims and the
// dependencies are set up.
func (c *Controller) worldSource() *worldSource {
	pods, _ := c.pods.(podLister)
	return &worldSource{reader: c.reader, pods: pods, windows: c.windows, claims: c.claims, dependencies: c.dependencies, gate: c.opts.Gate}
}

// podLister lists the pod informer's store.
type podLister interface{ List() []any }

// worldStep is how many pods a world's builder adds between two steps of its pace.
const worldStep = 256

// World is a world before it is returned: a WorldBuilder that holds the caches'
// budgets, namespaces, flavors and pods (listed from the pod cache, each expected by
// l), and the arrivals a draws (none for nil), to which a what-if adds pods of its own
// (AddPods). pace, when set, is called every worldStep pods, as between the steps of a
// simulation.
func (s *worldSource) World(ctx context.Context, now time.Time, l *estimate.Learner, a *estimate.Arrivals, pace func()) (*estimate.WorldBuilder, error) {
	pods := s.pods
	if pods == nil {
		return nil, errors.New("the pod cache is not set up")
	}
	var namespaces corev1.NamespaceList
	if err := s.reader.List(ctx, &namespaces, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	nsLabels := make(map[string]map[string]string, len(namespaces.Items))
	for i := range namespaces.Items {
		ns := &namespaces.Items[i]
		nsLabels[ns.Name] = ns.Labels
	}
	var budgets v1alpha1.BudgetList
	if err := s.reader.List(ctx, &budgets, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing budgets: %w", err)
	}
	var clusterBudgets v1alpha1.ClusterBudgetList
	if err := s.reader.List(ctx, &clusterBudgets, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing clusterbudgets: %w", err)
	}
	// Each budget as the core has it now, with what its windows set, and what they will
	// set when they open or end within the estimator's horizon.
	all := make([]quota.Budget, 0, len(budgets.Items)+len(clusterBudgets.Items))
	var changes []estimate.BudgetChange
	horizon := now.Add(estimate.DefaultHorizon)
	add := func(obj client.Object, written quota.Budget) {
		spec, ahead, ok := s.windows.ahead(obj, now, horizon)
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
	if err := s.reader.List(ctx, &flavorList, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing flavors: %w", err)
	}
	flavors := make([]quota.Flavor, 0, len(flavorList.Items))
	for i := range flavorList.Items {
		flavors = append(flavors, quota.FlavorFromAPI(&flavorList.Items[i]))
	}

	b := estimate.NewWorldBuilder(now, l, nsLabels, all, flavors)
	b.SetChanges(changes)
	step := pacing.EveryN(worldStep, pace)
	for _, item := range pods.List() {
		if step != nil {
			step()
		}
		if cp, ok := item.(*cachedPod); ok {
			f := cp.factsOf()
			b.Add(s.viewOf(cp, now), &f)
		}
	}
	if a != nil {
		b.AddArrivals(a.Streams(now))
	}
	return b, nil
}

// Pods is how many pods the pod cache holds; 0 before it is set up.
func (s *worldSource) Pods() int {
	if s.pods == nil {
		return 0
	}
	return len(s.pods.List())
}

// AddPods adds to b count pods made from pod, as the pod cache would hold them at now
// (one compact view, shared: the template is read once), the i-th named and
// identified by name(i).
func (s *worldSource) AddPods(b *estimate.WorldBuilder, pod *corev1.Pod, count int, now time.Time, name func(i int) (string, types.UID)) {
	cp := compactSimulated(pod)
	for i := range count {
		p := *cp
		p.view.Name, p.view.UID = name(i)
		f := p.factsOf()
		b.Add(s.viewOf(&p, now), &f)
	}
}

// viewOf is the core's view of a cached pod at now, charged for its devices and
// resolved against what it waits for and its PodGroup as upsertPod gives it to the
// core, read only: unlike resolve, it records nothing in the claims' or the
// dependencies' users (a pod deleted since the store was listed must not come back
// there).
func (s *worldSource) viewOf(cp *cachedPod, now time.Time) quota.Pod {
	p := cp.at(now, s.gate)
	if s.claims != nil && usesDevices(cp) {
		s.claims.mu.Lock()
		p = s.claims.view(p, cp)
		s.claims.mu.Unlock()
	}
	if x := s.dependencies; x != nil && (p.Dependencies != nil || p.PodGroup != nil) {
		x.mu.Lock()
		p = x.view(p, waitsOf(p, cp))
		x.mu.Unlock()
	}
	return p
}

// The estimator and the what-if read the caches through worldSource.
var _ estimator.Caches = (*worldSource)(nil)
