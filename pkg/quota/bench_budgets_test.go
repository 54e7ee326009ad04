package quota

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// benchParents is how many ClusterBudgets the benchmarks' Budgets hang under.
const benchParents = 4

// benchTopology returns the specs of a realistic topology of n Budgets: ClusterBudgets
// org-0..org-3 first (org-3 also selecting namespaces by label), then Budget b-i in
// namespace ns-(i/10), under org-(i%4), every other one with a borrowingLimit and every
// third one with a podSelector. They are built from API objects, as the manager
// builds them.
func benchTopology(n int) (parents, budgets []Budget) {
	for i := range benchParents {
		cb := &v1alpha1.ClusterBudget{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("org-%d", i)}}
		cb.Spec.Hard = corev1.ResourceList{"requests.cpu": *resource.NewQuantity(int64(n), resource.DecimalSI)}
		if i == benchParents-1 {
			cb.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"org": "shared"}}
		}
		parents = append(parents, ClusterBudgetFromAPI(cb))
	}
	for i := range n {
		budgets = append(budgets, BudgetFromAPI(benchBudgetObject(i, 10)))
	}
	return parents, budgets
}

// benchBudgetObject is Budget b-i of benchTopology with room for cpu CPUs.
func benchBudgetObject(i int, cpu int64) *v1alpha1.Budget {
	b := &v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%d", i/10), Name: fmt.Sprintf("b-%d", i), Generation: 1}}
	b.Spec.Hard = corev1.ResourceList{"requests.cpu": *resource.NewQuantity(cpu, resource.DecimalSI)}
	b.Spec.Parent = fmt.Sprintf("org-%d", i%benchParents)
	if i%2 == 0 {
		b.Spec.BorrowingLimit = corev1.ResourceList{"requests.cpu": *resource.NewQuantity(2, resource.DecimalSI)}
	}
	if i%3 == 0 {
		b.Spec.PodSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("app-%d", i)}}
	}
	return b
}

// syncBudgets feeds a new core the namespaces, then the ClusterBudgets and Budgets of
// benchTopology(n), as the informers' initial lists do.
func syncBudgets(q *AdmissionQueue, parents, budgets []Budget) {
	for _, p := range parents {
		q.UpsertBudget(p)
	}
	for _, b := range budgets {
		q.UpsertBudget(b)
	}
}

func benchNamespaces(q *AdmissionQueue, n int) {
	for i := range (n + 9) / 10 {
		l := map[string]string{v1alpha1.EnabledLabel: "true"}
		if i%2 == 0 {
			l["org"] = "shared"
		}
		q.SetNamespace(fmt.Sprintf("ns-%d", i), l)
	}
}

// BenchmarkInitialSync: a manager that starts with n Budgets (10 a namespace, under 4
// ClusterBudgets) learns them one by one from its informers' first lists. Each event
// holds the core's lock; the whole sync must not grow faster than n.
func BenchmarkInitialSync(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("budgets=%d", n), func(b *testing.B) {
			parents, budgets := benchTopology(n)
			var cpu time.Duration
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				q, _ := newTestQueue()
				benchNamespaces(q, n)
				runtime.GC()
				b.StartTimer()
				startCPU := cpuTime()
				syncBudgets(q, parents, budgets)
				cpu += cpuTime() - startCPU
				b.StopTimer()
				if st := mustStatus(b, q, budgets[n-1].Key); st.State != v1alpha1.StateOpen {
					b.Fatalf("last budget %s: %s (%s)", budgets[n-1].Key, st.State, st.StateReason)
				}
				b.StartTimer()
			}
			if cpu > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			}
		})
	}
}

// BenchmarkBudgetEvent: one update of one Budget among n, as the manager's informer
// delivers it (a new object, converted by BudgetFromAPI).
//
//   - status-only: the manager's own status write comes back (generation unchanged):
//     nothing the core reads changed. It must not grow with n.
//   - hard-raised: spec.hard is raised by one CPU.
func BenchmarkBudgetEvent(b *testing.B) {
	for _, tc := range []struct {
		kind  string
		sizes []int
	}{{"status-only", []int{1000, 5000}}, {"hard-raised", []int{5000}}} {
		for _, n := range tc.sizes {
			b.Run(fmt.Sprintf("%s/budgets=%d", tc.kind, n), func(b *testing.B) {
				benchBudgetEvent(b, n, tc.kind == "hard-raised")
			})
		}
	}
}

func benchBudgetEvent(b *testing.B, n int, raise bool) {
	q, _ := newTestQueue()
	benchNamespaces(q, n)
	parents, budgets := benchTopology(n)
	syncBudgets(q, parents, budgets)
	const target = 3 // in ns-0, under org-3, with a podSelector
	key := budgets[target].Key
	// Two updates of the same object, with a different status each, alternate: each
	// event brings maps and selectors of its own, as a decoded object does.
	var updates [2]Budget
	for i := range updates {
		obj := benchBudgetObject(target, 10)
		obj.Status.GatedPods = int32(i)
		obj.Status.ObservedGeneration = obj.Generation
		updates[i] = BudgetFromAPI(obj)
	}
	hard := int64(10)
	runtime.GC()
	b.ReportAllocs()
	startCPU := cpuTime()
	i := 0
	for b.Loop() {
		if raise {
			hard++
			q.UpsertBudget(BudgetFromAPI(benchBudgetObject(target, hard)))
		} else {
			q.UpsertBudget(updates[i%2])
		}
		i++
	}
	if cpu := cpuTime() - startCPU; cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
	if st := mustStatus(b, q, key); st.State != v1alpha1.StateOpen {
		b.Fatalf("%s: %s (%s)", key, st.State, st.StateReason)
	}
}
