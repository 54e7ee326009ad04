package estimate

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/quotagate/quotagate/pkg/quota"
)

// WorldBuilder builds a World from what a cache holds: the budgets, namespaces and
// flavors, then each pod with its Facts, which it sorts into Running and Waiting and
// gives the Learner's Expectation.
//
//	b := estimate.NewWorldBuilder(now, learner, namespaces, budgets, flavors)
//	for each cached pod: b.Add(view, &facts)
//	starts := estimate.Simulate(b.World(), opts)
type WorldBuilder struct {
	w       World
	learner *Learner
	cover   coverIndex
}

// NewWorldBuilder starts a World at now; the Learner gives each pod's Expectation.
func NewWorldBuilder(now time.Time, l *Learner, namespaces map[string]map[string]string, budgets []quota.Budget, flavors []quota.Flavor) *WorldBuilder {
	b := &WorldBuilder{
		w:       World{Now: now, Namespaces: namespaces, Budgets: budgets, Flavors: flavors},
		learner: l,
	}
	b.cover.index(budgets, namespaces)
	return b
}

// Add adds a pod: the core's view of it at the builder's now, and its Facts. A
// terminal pod holds nothing and is left out; a gated pod waits; any other holds
// quota. The budgets whose durations the Learner falls back to are, for a pod that
// holds quota, those its admitted-by annotation names, and for a gated pod those that
// will be charged for it (coverIndex).
func (b *WorldBuilder) Add(p quota.Pod, f *Facts) {
	switch {
	case p.Terminal:
	case p.Gated:
		b.w.Waiting = append(b.w.Waiting, Pod{Pod: p, Expect: b.learner.ExpectFacts(f, b.cover.of(&p), b.w.Now)})
	default:
		b.w.Running = append(b.w.Running, Pod{Pod: p, Expect: b.learner.ExpectFacts(f, p.AdmittedByKeys(), b.w.Now)})
	}
}

// AddArrivals adds the streams of pods still to be created that a simulation draws
// from: those whose pods' durations the Learner knows (a pod that would hold its quota
// for ever is not one to draw), their budgets as for a gated pod.
func (b *WorldBuilder) AddArrivals(streams []Stream) {
	for _, st := range streams {
		st.Expect = b.learner.ExpectFacts(&st.Facts, b.cover.of(&st.Template), b.w.Now)
		if st.Expect.Known() {
			b.w.Arrivals = append(b.w.Arrivals, st)
		}
	}
}

// World returns the world built so far.
func (b *WorldBuilder) World() World { return b.w }

// SetChanges sets what the budgets' windows will make of them (World.Changes), in time
// order.
func (b *WorldBuilder) SetChanges(changes []BudgetChange) { b.w.Changes = changes }

// coverIndex finds the budgets a gated pod will be charged to, for the Learner's budget
// keys (the least specific durations it falls back to): the Budgets of its namespace
// whose podSelector matches it, the ClusterBudgets whose namespaceSelector matches its
// namespace, and their parents, as an admitted pod's admitted-by annotation names them.
// It is the estimate's guess of the core's cover, good enough to choose durations by;
// what the pod waits for is the simulated core's own decision.
type coverIndex struct {
	byNamespace map[string][]*quota.Budget
	cluster     []*quota.Budget
	byName      map[string]*quota.Budget // ClusterBudgets
	namespaces  map[string]map[string]string
	// clusterOf caches each namespace's ClusterBudgets with their parents.
	clusterOf map[string][]quota.BudgetKey
}

func (x *coverIndex) index(budgets []quota.Budget, namespaces map[string]map[string]string) {
	x.byNamespace, x.byName = map[string][]*quota.Budget{}, map[string]*quota.Budget{}
	x.namespaces, x.clusterOf = namespaces, map[string][]quota.BudgetKey{}
	for i := range budgets {
		b := &budgets[i]
		if b.Key.IsCluster() {
			x.cluster = append(x.cluster, b)
			x.byName[b.Key.Name] = b
		} else {
			x.byNamespace[b.Key.Namespace] = append(x.byNamespace[b.Key.Namespace], b)
		}
	}
}

func (x *coverIndex) of(p *quota.Pod) []quota.BudgetKey {
	var out []quota.BudgetKey
	for _, b := range x.byNamespace[p.Namespace] {
		if b.PodSelector == nil || b.PodSelector.Matches(labels.Set(p.Labels)) {
			out = x.withParents(out, b)
		}
	}
	cluster, ok := x.clusterOf[p.Namespace]
	if !ok {
		nsLabels := labels.Set(x.namespaces[p.Namespace])
		for _, b := range x.cluster {
			if b.NamespaceSelector != nil && b.NamespaceSelector.Matches(nsLabels) {
				cluster = x.withParents(cluster, b)
			}
		}
		x.clusterOf[p.Namespace] = cluster
	}
	for _, k := range cluster {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// withParents appends b and its parents (a cycle stops where it repeats).
func (x *coverIndex) withParents(out []quota.BudgetKey, b *quota.Budget) []quota.BudgetKey {
	for b != nil && !slices.Contains(out, b.Key) {
		out = append(out, b.Key)
		b = x.byName[b.Parent]
	}
	return out
}
