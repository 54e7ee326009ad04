package quota

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// t0 is the fake clock's start; pods are created at t0 plus their creation offset.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// podBuilder builds test pods, after kube-scheduler's st.MakePod().
type podBuilder struct{ pod *corev1.Pod }

func makePod(name string) *podBuilder {
	return &podBuilder{pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "team-a", UID: types.UID(name),
			CreationTimestamp: metav1.NewTime(t0),
		},
		Spec: corev1.PodSpec{
			SchedulingGates: []corev1.PodSchedulingGate{{Name: v1alpha1.SchedulingGate}},
			Containers:      []corev1.Container{{Name: "main"}},
		},
	}}
}

func (b *podBuilder) NS(ns string) *podBuilder { b.pod.Namespace = ns; return b }
func (b *podBuilder) Priority(p int32) *podBuilder {
	b.pod.Spec.Priority = &p
	return b
}

// Created sets the creation time to t0 plus s seconds.
func (b *podBuilder) Created(s int) *podBuilder {
	b.pod.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(s) * time.Second))
	return b
}

// Req adds container requests, "cpu=2,memory=1Gi".
func (b *podBuilder) Req(spec string) *podBuilder {
	setList(&b.pod.Spec.Containers[0].Resources.Requests, spec)
	return b
}

// Lim adds container limits, "cpu=2,memory=1Gi".
func (b *podBuilder) Lim(spec string) *podBuilder {
	setList(&b.pod.Spec.Containers[0].Resources.Limits, spec)
	return b
}

// setList sets the quantities of spec ("cpu=2,memory=1Gi") in *list, making it first
// when it is nil.
func setList(list *corev1.ResourceList, spec string) {
	if *list == nil {
		*list = corev1.ResourceList{}
	}
	for name, q := range parseList(spec) {
		(*list)[name] = q
	}
}

func (b *podBuilder) Label(k, v string) *podBuilder {
	if b.pod.Labels == nil {
		b.pod.Labels = map[string]string{}
	}
	b.pod.Labels[k] = v
	return b
}

// Group puts the pod in a group of size n.
func (b *podBuilder) Group(name string, n int) *podBuilder {
	b.Label(v1alpha1.GroupLabel, name)
	if b.pod.Annotations == nil {
		b.pod.Annotations = map[string]string{}
	}
	b.pod.Annotations[v1alpha1.GroupSizeAnnotation] = fmt.Sprint(n)
	return b
}

func (b *podBuilder) Ungated() *podBuilder { b.pod.Spec.SchedulingGates = nil; return b }

// AdmittedBy sets the admitted-by annotation the manager's ungate patch writes.
func (b *podBuilder) AdmittedBy(value string) *podBuilder {
	if b.pod.Annotations == nil {
		b.pod.Annotations = map[string]string{}
	}
	b.pod.Annotations[v1alpha1.AdmittedByAnnotation] = value
	return b
}

// RV sets the resourceVersion the view is read at.
func (b *podBuilder) RV(rv int) *podBuilder { b.pod.ResourceVersion = strconv.Itoa(rv); return b }
func (b *podBuilder) Phase(p corev1.PodPhase) *podBuilder {
	b.pod.Status.Phase = p
	return b
}
func (b *podBuilder) Obj() *corev1.Pod { return b.pod }
func (b *podBuilder) Pod() Pod         { return NewPod(b.pod, v1alpha1.SchedulingGate, t0) }

func parseList(spec string) corev1.ResourceList {
	out := corev1.ResourceList{}
	if spec == "" {
		return out
	}
	for _, kv := range strings.Split(spec, ",") {
		k, v, _ := strings.Cut(kv, "=")
		out[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return out
}

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
func (b *budgetBuilder) Closed() *budgetBuilder { b.b.State = v1alpha1.StateClosed; return b }
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
	st, ok := q.Status(key)
	if !ok {
		t.Fatalf("no status for %v", key)
	}
	return st
}

func resourceMilli(m int64) *resource.Quantity {
	return resource.NewMilliQuantity(m, resource.DecimalSI)
}
func resourceCount(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }
