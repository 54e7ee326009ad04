package quota

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// BenchmarkFamilyFreeingEvent is BenchmarkFreeingEvent in a borrowing family, the shape
// of Kueue's scheduler performance scenario: 6 Budgets of 10 CPU under one ClusterBudget,
// each may borrow 10, each full with 10 running pods and a backlog of gated pods that
// wait for lendable quota. One running pod of the first budget ends; the pass admits
// the next pod of that budget (its lender's claim keeps the other members' pods from
// borrowing the freed CPU), which is confirmed and runs. Every member's waiting pods
// look again, so the pass costs at least the backlog; it must not cost its square.
func BenchmarkFamilyFreeingEvent(b *testing.B) {
	for _, backlog := range []int{100, 1000} {
		b.Run(fmt.Sprintf("gated-per-budget=%d", backlog), func(b *testing.B) {
			const budgets, room = 6, 10
			q, _ := newTestQueue(WithLendHold(0))
			q.UpsertBudget(makeBudget("", "org").Hard(fmt.Sprintf("cpu=%d", budgets*room)).Obj())
			seq := 0
			running := make([][]Pod, budgets)
			for i := range budgets {
				ns := fmt.Sprintf("ns-%d", i)
				optIn(q, ns)
				q.UpsertBudget(makeBudget(ns, "b").Hard(fmt.Sprintf("cpu=%d", room)).Borrow(fmt.Sprintf("cpu=%d", room)).Parent("org").Obj())
				for range room {
					p := benchPod(ns, seq, 1000)
					p.Gated = false
					q.UpsertPod(p)
					running[i] = append(running[i], p)
					seq++
				}
			}
			for range backlog {
				for i := range budgets {
					q.UpsertPod(benchPod(fmt.Sprintf("ns-%d", i), seq, 1000))
					seq++
				}
			}
			if adm := q.Admit(); len(adm) != 0 {
				b.Fatalf("admitted %d pods into a full family", len(adm))
			}
			runtime.GC()
			b.ReportAllocs()
			startCPU := cpuTime()
			for b.Loop() {
				ended := running[0][0]
				running[0] = running[0][1:]
				q.DeletePod(ended.UID)
				adm := q.Admit()
				if len(adm) != 1 || adm[0].Pod.Namespace != "ns-0" {
					b.Fatalf("admitted %v, want one pod of ns-0", adm)
				}
				q.Done(adm[0].Pod.UID, Ungated, "")
				p := benchPod("ns-0", 0, 1000)
				p.PodRef, p.Created, p.Gated = adm[0].Pod, adm[0].Created, false
				q.UpsertPod(p)
				running[0] = append(running[0], p)
				q.UpsertPod(benchPod("ns-0", seq, 1000))
				seq++
			}
			if cpu := cpuTime() - startCPU; cpu > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			}
		})
	}
}

// BenchmarkReleaseInFamily is the core's part of make bench-peers' family release
// figure: 1,000 gated pods of 100m in a Budget of zero that may borrow all it needs, under
// a ClusterBudget, beside a lender of zero and a second borrower of twice its weight;
// the lender's hard is raised to fit them all, and one Admit admits them. "plain" is
// the same pods in a Budget of zero raised to fit them (the plain release figure).
func BenchmarkReleaseInFamily(b *testing.B) {
	const n, milli = 1000, 100
	all := fmt.Sprintf("cpu=%dm", n*milli)
	for _, family := range []bool{false, true} {
		name := "plain"
		if family {
			name = "family"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var cpu time.Duration
			for range b.N {
				b.StopTimer()
				q, _ := newTestQueue()
				optIn(q, "borrower", "lender", "other")
				raise := makeBudget("borrower", "b").Hard("cpu=0").Obj()
				if family {
					q.UpsertBudget(makeBudget("", "org").Hard(all).Obj())
					q.UpsertBudget(makeBudget("borrower", "b").Hard("cpu=0").Borrow(all).Parent("org").Weight("1").Obj())
					q.UpsertBudget(makeBudget("other", "b").Hard("cpu=0").Borrow(all).Parent("org").Weight("2").Obj())
					raise = makeBudget("lender", "b").Hard("cpu=0").Parent("org").Weight("1").Obj()
				}
				q.UpsertBudget(raise)
				for i := range n {
					q.UpsertPod(benchPod("borrower", i, milli))
				}
				if adm := q.Admit(); len(adm) != 0 {
					b.Fatalf("admitted %d pods before the raise", len(adm))
				}
				raise.Hard = parseList(all)
				b.StartTimer()
				start := cpuTime()
				q.UpsertBudget(raise)
				if adm := q.Admit(); len(adm) != n {
					b.Fatalf("the raise admitted %d pods, want %d", len(adm), n)
				}
				cpu += cpuTime() - start
			}
			if cpu > 0 {
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*n), "cpu-us/pod")
			}
		})
	}
}
