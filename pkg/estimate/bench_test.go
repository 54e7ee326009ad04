package estimate

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/quota"
)

// BenchmarkSimulate estimates every gated pod of a busy cluster in one Simulate (three
// simulations): 20 namespaces, each a Budget of 50 CPUs full of running pods ending
// within the hour, and n gated pods of 1 or 2 CPUs, of two priorities, each with a
// learned duration of 5 to 60 minutes. In the "family" worlds the Budgets are under one
// ClusterBudget of 1000 CPUs and may each borrow 10: the core's own cost of evaluating
// pods in a borrowing family grows with the pods waiting on it (doc.go: cost). In the
// "arrivals" world, every namespace also has a stream of pods still to come of the
// higher priority, one every 2 minutes (World.Arrivals).
func BenchmarkSimulate(b *testing.B) {
	for _, tc := range []struct {
		n        int
		family   bool
		arrivals bool
	}{{1000, false, false}, {1000, false, true}, {10000, false, false}, {400, true, false}} {
		name := fmt.Sprintf("gated=%d", tc.n)
		if tc.family {
			name = fmt.Sprintf("family/gated=%d", tc.n)
		}
		if tc.arrivals {
			name = fmt.Sprintf("arrivals/gated=%d", tc.n)
		}
		b.Run(name, func(b *testing.B) {
			w := busyWorld(tc.n, tc.family)
			if tc.arrivals {
				w.Arrivals = busyArrivals(w)
			}
			b.ReportAllocs()
			startCPU := cpuTime()
			for b.Loop() {
				starts := Simulate(w, Options{})
				if !starts[len(starts)-1].Known {
					b.Fatalf("the last pod's start is unknown: %+v", starts[len(starts)-1])
				}
			}
			if cpu := cpuTime() - startCPU; cpu > 0 {
				b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
			}
		})
	}
}

// BenchmarkSuppose is a what-if (the visibility API's podsimulations) of one pod in a
// world of BenchmarkSimulate's: created last, of the lower priority, in ns-0, so that it
// waits behind its namespace's queue (Suppose: Place, then the draws until it starts).
// 900 gated pods, not 1,000: with the running ones and the what-if's, the world stays
// under DefaultDraws' 2,000 pods.
func BenchmarkSuppose(b *testing.B) {
	for _, tc := range []struct {
		n      int
		family bool
	}{{900, false}, {400, true}} {
		name := fmt.Sprintf("gated=%d", tc.n)
		if tc.family {
			name = fmt.Sprintf("family/gated=%d", tc.n)
		}
		b.Run(name, func(b *testing.B) {
			w := busyWorld(tc.n, tc.family)
			w.Waiting = append(w.Waiting, waiting(podIn("ns-0", "what-if", tc.n, "cpu=1"), learnedRuns(5*time.Minute, 10*time.Minute, 20*time.Minute)))
			b.ReportAllocs()
			startCPU := cpuTime()
			for b.Loop() {
				if got := Suppose(w, Options{}, 1, ""); len(got.Starts) != 1 || !got.Starts[0].Known {
					b.Fatalf("the what-if's start is unknown: %+v", got)
				}
			}
			if cpu := cpuTime() - startCPU; cpu > 0 {
				b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
			}
		})
	}
}

func busyWorld(n int, family bool) World {
	r := rand.New(rand.NewPCG(1, 2))
	w := World{Now: t0, Namespaces: map[string]map[string]string{}}
	if family {
		w.Budgets = append(w.Budgets, quota.Budget{Key: quota.BudgetKey{Name: "org"}, Hard: podtest.ParseList("cpu=1000")})
	}
	learned := func() Expectation {
		m := time.Duration(5+r.IntN(56)) * time.Minute
		return learnedRuns(m/2, m, m*2)
	}
	const namespaces = 20
	for i := range namespaces {
		ns := fmt.Sprintf("ns-%d", i)
		w.Namespaces[ns] = map[string]string{v1alpha1.EnabledLabel: "true"}
		b := quota.Budget{Key: quota.BudgetKey{Namespace: ns, Name: "b"}, Hard: podtest.ParseList("cpu=50")}
		if family {
			b.BorrowingLimit, b.Parent = podtest.ParseList("cpu=10"), "org"
		}
		w.Budgets = append(w.Budgets, b)
		for j := range 50 {
			e := learned()
			e.Start = t0.Add(-time.Duration(r.IntN(int(e.Median/time.Minute))) * time.Minute)
			w.Running = append(w.Running, Pod{Pod: view(podIn(ns, fmt.Sprintf("run-%d-%d", i, j), -3600, "cpu=1")), Expect: e})
		}
	}
	for j := range n {
		ns := fmt.Sprintf("ns-%d", r.IntN(namespaces))
		b := podIn(ns, fmt.Sprintf("w-%d", j), j, fmt.Sprintf("cpu=%d", 1+r.IntN(2))).Priority(int32(10 * r.IntN(2)))
		w.Waiting = append(w.Waiting, waiting(b, learned()))
	}
	return w
}

// busyArrivals is a stream of pods of 1 CPU and priority 10 for each namespace of w,
// one every 2 minutes over the last hour, each running 5 to 20 minutes.
func busyArrivals(w World) []Stream {
	var out []Stream
	for _, ns := range slices.Sorted(maps.Keys(w.Namespaces)) {
		tmpl := view(podIn(ns, "etl", 0, "cpu=1").Priority(10).Gated())
		tmpl.Name, tmpl.UID = "", ""
		out = append(out, Stream{
			Key:      ArrivalKey{Namespace: ns, OwnerKind: "Job", Owner: "etl", Priority: 10},
			Template: tmpl, Expect: learnedRuns(5*time.Minute, 10*time.Minute, 20*time.Minute),
			Gap: 2 * time.Minute, Span: time.Hour, Gaps: 30, Pods: 1,
			Until: t0.Add(time.Hour),
		})
	}
	return out
}
