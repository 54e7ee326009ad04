package quota

import (
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota/hours"
)

// benchHours is usageLimits that never stop a pod of the benchmarks: what is measured
// is what counting hours costs, not pods that wait for them.
func benchHours() *hours.Spec {
	s, _ := hours.FromAPI(&v1alpha1.UsageLimits{Hours: corev1.ResourceList{"cpu": resource.MustParse("1000000")}, Period: v1alpha1.PeriodMonth,
		DefaultMaxRuntime: &metav1.Duration{Duration: time.Hour}}, normalizedName)
	return &s
}

// BenchmarkHoursAdmitDecisions is BenchmarkAdmitDecisions (one Admit over 100,000
// gated pods in 1,000 budgets, half of which fit) with plain Budgets and with the same
// Budgets given hours: the cost of hour budgets per admission decision, side by side
// in one run (docs/budgets.md, "Hour budgets").
func BenchmarkHoursAdmitDecisions(b *testing.B) {
	for _, withHours := range []bool{false, true} {
		name := "plain"
		if withHours {
			name = "hours"
		}
		b.Run(name, func(b *testing.B) {
			const budgets, perBudget = 1000, 100
			var decided int
			var elapsed time.Duration
			for b.Loop() {
				b.StopTimer()
				q, _ := newTestQueue()
				var with func(*Budget)
				if withHours {
					with = func(bd *Budget) { bd.Hours = benchHours() }
				}
				fillWith(q, budgets, perBudget, with)
				runtime.GC()
				b.StartTimer()
				start := time.Now()
				adm := q.Admit()
				elapsed += time.Since(start)
				decided += budgets * perBudget
				if len(adm) != budgets*perBudget/2 {
					b.Fatalf("admitted %d, want %d", len(adm), budgets*perBudget/2)
				}
			}
			b.ReportMetric(float64(decided)/elapsed.Seconds(), "decisions/s")
		})
	}
}

// BenchmarkHoursFreeingEvent: one pod ending in a full budget and the next admitted
// and confirmed, 1,000 pods waiting, with a plain Budget and with hours: what a pod's
// start and end cost in its budget's hours.
func BenchmarkHoursFreeingEvent(b *testing.B) {
	for _, withHours := range []bool{false, true} {
		name := "plain"
		if withHours {
			name = "hours"
		}
		b.Run(name, func(b *testing.B) {
			q, clk := newTestQueue()
			optIn(q, "hot")
			bd := makeBudget("hot", "b").Hard("cpu=10").Obj()
			if withHours {
				bd.Hours = benchHours()
			}
			q.UpsertBudget(bd)
			var running []Pod
			for i := range 10 {
				p := benchPod("hot", i, 1000)
				p.Gated = false
				q.UpsertPod(p)
				running = append(running, p)
			}
			for i := range 1000 {
				q.UpsertPod(benchPod("hot", 100+i, 1000))
			}
			q.Admit()
			runtime.GC()
			b.ReportAllocs()
			seq := 100000
			for b.Loop() {
				clk.Step(time.Second)
				q.DeletePod(running[0].UID)
				running = running[1:]
				adm := q.Admit()
				if len(adm) != 1 {
					b.Fatalf("admitted %d", len(adm))
				}
				q.Done(adm[0].Pod.UID, Ungated, "")
				p := benchPod("hot", seq, 1000)
				seq++
				p.PodRef, p.Created, p.Gated = adm[0].Pod, adm[0].Created, false
				q.UpsertPod(p)
				running = append(running, p)
				q.UpsertPod(benchPod("hot", seq, 1000))
				seq++
			}
		})
	}
}
