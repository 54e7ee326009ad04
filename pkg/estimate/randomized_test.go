package estimate

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// For random small worlds (budgets alone or in a borrowing family, StrictFIFO or not,
// some closed; pods of two priorities, some in groups, some too big, some with no
// expected end; streams of pods still to come, of three priorities), every admission the simulation makes keeps every budget within its
// hard (its ceiling, hard plus borrowingLimit, when it borrows): the budgets' statuses
// are read from the simulation's core after each simulated moment. And a simulation is
// deterministic: the same world gives the same starts.
func TestSimulateRandomWithinHard(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 7))
		w, limits := randomWorld(r)
		steps := 0
		check := func(q *quota.AdmissionQueue) {
			steps++
			for _, b := range w.Budgets {
				st, ok := q.Reader().Status(b.Key)
				if !ok {
					t.Fatalf("seed %d: no status for %v", seed, b.Key)
				}
				for name, used := range st.Used {
					limit, ok := limits[b.Key][name]
					if ok && used.Cmp(limit) > 0 {
						t.Fatalf("seed %d, step %d: %v uses %s of %s, more than its limit %s", seed, steps, b.Key, used.String(), name, limit.String())
					}
				}
			}
		}
		starts := Simulate(w, Options{afterAdmit: check})
		if steps == 0 {
			t.Fatalf("seed %d: the check never ran", seed)
		}
		if again := Simulate(w, Options{}); !reflect.DeepEqual(again, starts) {
			t.Fatalf("seed %d: a second simulation of the same world differs:\n%+v\n%+v", seed, starts, again)
		}
		for _, s := range starts {
			if s.Known && (s.Low.After(s.Median) || s.Median.After(s.High) || s.Low.Before(w.Now)) {
				t.Errorf("seed %d: %s: range %v ≤ %v ≤ %v broken", seed, s.Pod, s.Low, s.Median, s.High)
			}
			if !s.Known && (s.Unknown == "" || s.Reason == "") {
				t.Errorf("seed %d: %s: unknown without a reason: %+v", seed, s.Pod, s)
			}
		}
	}
}

// randomWorld returns a world and, per budget, the most it may use of each resource.
func randomWorld(r *rand.Rand) (World, map[quota.BudgetKey]corev1.ResourceList) {
	namespaces := []string{"team-a", "team-b", "team-c"}
	w := World{Now: t0, Namespaces: map[string]map[string]string{}}
	limits := map[quota.BudgetKey]corev1.ResourceList{}
	cpu := func(n int) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(int64(n), resource.DecimalSI)}
	}
	family := r.IntN(2) == 0
	orgHard := 4 + r.IntN(8)
	if family {
		org := quota.Budget{Key: quota.BudgetKey{Name: "org"}, Hard: cpu(orgHard)}
		w.Budgets = append(w.Budgets, org)
		limits[org.Key] = corev1.ResourceList{"requests.cpu": org.Hard[corev1.ResourceCPU]}
	}
	own := map[string]int{} // each namespace's budget's hard, in CPUs
	for _, ns := range namespaces {
		w.Namespaces[ns] = map[string]string{v1alpha1.EnabledLabel: "true"}
		hard := 1 + r.IntN(5)
		own[ns] = hard
		b := quota.Budget{Key: quota.BudgetKey{Namespace: ns, Name: "b"}, Hard: cpu(hard)}
		limit := hard
		if family {
			b.Parent = "org"
			if r.IntN(2) == 0 {
				borrow := 1 + r.IntN(4)
				b.BorrowingLimit = cpu(borrow)
				limit += borrow
			}
			if r.IntN(3) == 0 {
				b.LendingLimit = cpu(r.IntN(hard + 1))
			}
			b.Reclaim = []v1alpha1.ReclaimPolicy{v1alpha1.ReclaimAny, v1alpha1.ReclaimLowerPriority, v1alpha1.ReclaimNever}[r.IntN(3)]
		}
		if r.IntN(3) == 0 {
			b.Strategy = v1alpha1.StrictFIFO
		}
		if r.IntN(10) == 0 {
			b.State = v1alpha1.StateClosed
		}
		if r.IntN(4) == 0 {
			b.WithinBudget = v1alpha1.WithinBudgetLowerPriority
		}
		w.Budgets = append(w.Budgets, b)
		limits[b.Key] = corev1.ResourceList{"requests.cpu": *resource.NewQuantity(int64(limit), resource.DecimalSI)}
	}
	expect := func() Expectation {
		if r.IntN(8) == 0 {
			return Expectation{}
		}
		m := time.Duration(1+r.IntN(60)) * time.Minute
		lo := m - time.Duration(r.IntN(int(m/time.Minute)))*time.Minute
		return Expectation{Source: SourceLearned, Duration: Duration{Median: m, Low: lo, High: m + time.Duration(r.IntN(30))*time.Minute, Samples: MinSamples}}
	}
	// Running pods: within their budget's own hard and the parent's, as the core
	// would have admitted them.
	used, orgUsed := map[string]int{}, 0
	for i := range r.IntN(8) {
		ns, n := namespaces[r.IntN(len(namespaces))], 1+r.IntN(2)
		if used[ns]+n > own[ns] || (family && orgUsed+n > orgHard) {
			continue
		}
		used[ns] += n
		orgUsed += n
		e := expect()
		e.Start = t0.Add(-time.Duration(r.IntN(30)) * time.Minute)
		w.Running = append(w.Running, Pod{Pod: view(podIn(ns, fmt.Sprintf("run-%d", i), -3600, fmt.Sprintf("cpu=%d", n)).Priority(int32(10 * r.IntN(2)))), Expect: e})
	}
	for i := 0; i < 2+r.IntN(12); i++ {
		ns := namespaces[r.IntN(len(namespaces))]
		req := fmt.Sprintf("cpu=%d", 1+r.IntN(3))
		prio := int32(10 * r.IntN(2))
		if r.IntN(5) == 0 { // a group of two
			g := fmt.Sprintf("g%d", i)
			for m := range 2 {
				b := podIn(ns, fmt.Sprintf("w-%d-%d", i, m), i, req).Priority(prio).Group(g, 2)
				w.Waiting = append(w.Waiting, waiting(b, expect()))
			}
			continue
		}
		w.Waiting = append(w.Waiting, waiting(podIn(ns, fmt.Sprintf("w-%d", i), i, req).Priority(prio), expect()))
	}
	// Pods still to come: streams of each priority, some of them bursts of two, some
	// above a budget's hard.
	for i := range r.IntN(4) {
		ns := namespaces[r.IntN(len(namespaces))]
		e := expect()
		if !e.Known() {
			continue // AddArrivals keeps only streams whose durations are known
		}
		tmpl := view(podIn(ns, fmt.Sprintf("s-%d", i), 0, fmt.Sprintf("cpu=%d", 1+r.IntN(3))).Priority(int32(10 * r.IntN(3))).Gated())
		tmpl.Name, tmpl.UID = "", ""
		gap, gaps := time.Duration(1+r.IntN(30))*time.Minute, MinArrivals-1+r.IntN(arrivalWindow-MinArrivals+1)
		w.Arrivals = append(w.Arrivals, Stream{
			Key:      ArrivalKey{Namespace: ns, OwnerKind: "Job", Owner: fmt.Sprintf("s-%d", i), Priority: tmpl.Priority},
			Template: tmpl, Expect: e, Gap: gap, Span: gap * time.Duration(gaps), Gaps: gaps, Pods: 1 + r.IntN(2),
			Until: t0.Add(time.Duration(1+r.IntN(6)) * time.Hour),
		})
	}
	return w, limits
}
