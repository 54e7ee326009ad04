package quota

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// BenchmarkAdmitOnFlavors: one Admit over 100,000 gated pods in 1,000 budgets, half of
// which fit, as BenchmarkAdmitDecisions, with the room as a flavor-less hard (plain)
// and split over two flavors (two-flavors: a quarter on each; the pods of the second
// quarter fill the first flavor, then try it and take the second). The ratio of the two
// is what choosing a flavor costs a decision.
func BenchmarkAdmitOnFlavors(b *testing.B) {
	const budgets, perBudget = 1000, 100
	for _, flavors := range []int{0, 2} {
		name := "plain"
		if flavors > 0 {
			name = fmt.Sprintf("flavors=%d", flavors)
		}
		b.Run(name, func(b *testing.B) {
			var decided int
			var elapsed time.Duration
			for b.Loop() {
				b.StopTimer()
				q, _ := newTestQueue()
				q.UpsertFlavor(h100)
				q.UpsertFlavor(a100)
				for i := range budgets {
					ns := fmt.Sprintf("ns-%d", i)
					optIn(q, ns)
					bb := makeBudget(ns, "b")
					if flavors == 0 {
						bb.Hard(fmt.Sprintf("cpu=%d", perBudget/2))
					} else {
						bb.flavor("h100", fmt.Sprintf("cpu=%d", perBudget/4), "").flavor("a100", fmt.Sprintf("cpu=%d", perBudget/4), "")
					}
					q.UpsertBudget(bb.Obj())
				}
				for j := range perBudget {
					for i := range budgets {
						q.UpsertPod(benchPod(fmt.Sprintf("ns-%d", i), j, 1000))
					}
				}
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
