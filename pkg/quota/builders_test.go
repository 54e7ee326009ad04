package quota

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/quota/internal/amount/amounttest"
	"github.com/quotagate/quotagate/pkg/quota/internal/topology"
	"github.com/quotagate/quotagate/pkg/quota/window"
)

// t0 is the fake clock's start; pods are created at t0 plus their creation offset.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// podBuilder is podtest's builder with the core's defaults (makePod) and Pod, which
// turns the pod into the core's view of it; its methods forward to podtest.
type podBuilder struct{ b *podtest.Builder }

// makePod builds a gated pod team-a/name created at t0, its UID its name.
func makePod(name string) *podBuilder {
	return &podBuilder{b: podtest.New(name).NS("team-a").UID(name).At(t0).Gated().Container("main", "")}
}

func (b *podBuilder) NS(ns string) *podBuilder            { b.b.NS(ns); return b }
func (b *podBuilder) Priority(p int32) *podBuilder        { b.b.Priority(p); return b }
func (b *podBuilder) Created(s int) *podBuilder           { b.b.Created(s); return b }
func (b *podBuilder) Req(spec string) *podBuilder         { b.b.Req(spec); return b }
func (b *podBuilder) Lim(spec string) *podBuilder         { b.b.Lim(spec); return b }
func (b *podBuilder) Label(k, v string) *podBuilder       { b.b.Label(k, v); return b }
func (b *podBuilder) Annotation(k, v string) *podBuilder  { b.b.Annotation(k, v); return b }
func (b *podBuilder) Group(g string, n int) *podBuilder   { b.b.Group(g, n); return b }
func (b *podBuilder) Ungated() *podBuilder                { b.b.Ungated(); return b }
func (b *podBuilder) PodGroup(name string) *podBuilder    { b.b.PodGroup(name); return b }
func (b *podBuilder) AdmittedBy(v string) *podBuilder     { b.b.AdmittedBy(v); return b }
func (b *podBuilder) RV(rv int) *podBuilder               { b.b.RV(rv); return b }
func (b *podBuilder) Phase(p corev1.PodPhase) *podBuilder { b.b.Phase(p); return b }
func (b *podBuilder) Obj() *corev1.Pod                    { return b.b.Obj() }
func (b *podBuilder) Pod() Pod                            { return NewPod(b.b.Obj(), v1alpha1.SchedulingGate, t0) }

// parseList parses "cpu=2,memory=1Gi".
var parseList = podtest.ParseList

// parseAmounts, listOf and listDiff: amounts from the short form, amounts as a list,
// and lists compared by value (package amounttest, podtest.ListDiff).
var (
	parseAmounts = amounttest.Parse
	listOf       = amounttest.List
	listDiff     = podtest.ListDiff
)

// budgetBuilder builds budget specs.
type budgetBuilder struct{ b Budget }

// makeBudget builds Budget ns/name, or ClusterBudget name when ns is "".
func makeBudget(ns, name string) *budgetBuilder {
	return &budgetBuilder{b: Budget{Key: BudgetKey{Namespace: ns, Name: name}}}
}
func (b *budgetBuilder) Hard(spec string) *budgetBuilder { b.b.Hard = parseList(spec); return b }
func (b *budgetBuilder) Parent(p string) *budgetBuilder  { b.b.Parent = p; return b }
func (b *budgetBuilder) Borrow(spec string) *budgetBuilder {
	b.b.BorrowingLimit = parseList(spec)
	return b
}
func (b *budgetBuilder) Lend(spec string) *budgetBuilder {
	b.b.LendingLimit = parseList(spec)
	return b
}
func (b *budgetBuilder) Strict() *budgetBuilder {
	b.b.Strategy = v1alpha1.StrictFIFO
	return b
}
func (b *budgetBuilder) Reclaim(p v1alpha1.ReclaimPolicy) *budgetBuilder {
	b.b.Reclaim = p
	return b
}
func (b *budgetBuilder) Weight(w string) *budgetBuilder {
	q := resource.MustParse(w)
	b.b.Weight = &q
	return b
}
func (b *budgetBuilder) PreemptLowerPriority() *budgetBuilder {
	b.b.WithinBudget = v1alpha1.WithinBudgetLowerPriority
	return b
}
func (b *budgetBuilder) Start(s *window.Start) *budgetBuilder { b.b.Start = s; return b }
func (b *budgetBuilder) ReclaimAfter(w string) *budgetBuilder { b.b.ReclaimAfter = w; return b }
func (b *budgetBuilder) Closed() *budgetBuilder               { b.b.State = v1alpha1.StateClosed; return b }
func (b *budgetBuilder) Selector(k, v string) *budgetBuilder {
	b.b.PodSelector = labels.SelectorFromSet(labels.Set{k: v})
	return b
}
func (b *budgetBuilder) Namespaces(sel labels.Selector) *budgetBuilder {
	b.b.NamespaceSelector = sel
	return b
}
func (b *budgetBuilder) Obj() Budget { return b.b }

// newTestQueue returns a core on a fake clock that knows the test namespaces team-a to
// team-d, opted in and with no other labels (a test may label them again).
func newTestQueue(opts ...Option) (*AdmissionQueue, *clocktesting.FakeClock) {
	clk := clocktesting.NewFakeClock(t0)
	q := NewAdmissionQueue(append([]Option{WithClock(clk)}, opts...)...)
	for _, ns := range testNamespaces {
		q.SetNamespace(ns, map[string]string{v1alpha1.EnabledLabel: "true"})
	}
	return q, clk
}

var testNamespaces = []string{"team-a", "team-b", "team-c", "team-d"}

// victimsAtOnce turns the preemption cooldown off, for the tests of which victims are
// chosen: they are chosen at the first decision (preemptcooldown_test.go tests the
// cooldown and its backoff).
var victimsAtOnce = WithPreemptionCooldown(0, 0)

// admitNames runs Admit, reports every admission as ungated, and returns the names.
func admitNames(q *AdmissionQueue) []string {
	var names []string
	for _, a := range q.Admit() {
		names = append(names, a.Pod.Name)
		q.Done(a.Pod.UID, Ungated, "")
	}
	return names
}

func mustStatus(t testing.TB, q *AdmissionQueue, key BudgetKey) BudgetStatus {
	t.Helper()
	st, ok := q.Reader().Status(key)
	if !ok {
		t.Fatalf("no status for %v", key)
	}
	return st
}

func resourceMilli(m int64) *resource.Quantity {
	return resource.NewMilliQuantity(m, resource.DecimalSI)
}
func resourceCount(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }

// newTestTopology returns an empty topology of the core's budgets, for tests that
// drive it alone.
func newTestTopology() *topology.Topology[*budget] { return topology.New[*budget]() }

// addBudget adds the budget of spec to tp, as UpsertBudget does; resolve after.
func addBudget(tp *topology.Topology[*budget], spec Budget) *budget {
	b := newBudget(spec)
	tp.Add(b)
	return b
}

// respec applies spec to b through tp, as UpsertBudget does, and reports whether the
// topology must resolve b again.
func respec(tp *topology.Topology[*budget], b *budget, spec Budget) (resolve bool) {
	return tp.Respec(b, func() { b.setSpec(spec) })
}
