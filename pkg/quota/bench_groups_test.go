package quota

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// BenchmarkGroupFormation: members of one group arrive one by one in a budget with
// room for all of them. Every member's arrival holds the core's lock, so this is how
// long one group stalls every other namespace. It must grow about linearly with the
// group's size.
//
//   - once: one Admit after the last member admits the whole group;
//   - interleaved: Admit runs after every arrival, as the controller does when members
//     arrive slower than a round, so an incomplete group is looked at again and again.
func BenchmarkGroupFormation(b *testing.B) {
	for _, tc := range []struct {
		mode  string
		sizes []int
	}{{"once", []int{1000, 4000, 10000}}, {"interleaved", []int{1000, 4000}}} {
		for _, size := range tc.sizes {
			b.Run(fmt.Sprintf("%s/members=%d", tc.mode, size), func(b *testing.B) {
				benchGroupFormation(b, size, tc.mode == "interleaved")
			})
		}
	}
}

func benchGroupFormation(b *testing.B, size int, interleaved bool) {
	pods := make([]Pod, size)
	for i := range pods {
		p := benchPod("team-a", i, 100)
		p.Group, p.GroupSize = "g", size
		pods[i] = p
	}
	benchFormation(b, pods, interleaved)
}

// benchFormation times giving the core pods, the members of one group that fits a
// budget of team-a, and admitting them: once at the end, or after every pod
// (interleaved). Every pod must be admitted.
func benchFormation(b *testing.B, pods []Pod, interleaved bool) {
	var cpu time.Duration
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		q, _ := newTestQueue()
		q.UpsertBudget(makeBudget("team-a", "b").Hard(fmt.Sprintf("cpu=%d", len(pods))).Obj())
		runtime.GC()
		b.StartTimer()
		startCPU := cpuTime()
		admitted := 0
		for _, p := range pods {
			q.UpsertPod(p)
			if interleaved {
				admitted += len(q.Admit())
			}
		}
		admitted += len(q.Admit())
		cpu += cpuTime() - startCPU
		if admitted != len(pods) {
			b.Fatalf("admitted %d, want %d", admitted, len(pods))
		}
	}
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkSnapshot: one Snapshot of 8,000 gated pods, in one budget or spread over
// ten; all but the first of each budget wait for room, so every reason names a position.
func BenchmarkSnapshot(b *testing.B) {
	for _, budgets := range []int{1, 10} {
		b.Run(fmt.Sprintf("budgets=%d", budgets), func(b *testing.B) {
			const gated = 8000
			q, _ := newTestQueue()
			for i := range budgets {
				optIn(q, fmt.Sprintf("ns-%d", i))
				q.UpsertBudget(makeBudget(fmt.Sprintf("ns-%d", i), "b").Hard("cpu=1").Obj())
			}
			for j := range gated {
				q.UpsertPod(benchPod(fmt.Sprintf("ns-%d", j%budgets), j, 600+int64(j%3)*100))
			}
			q.Admit()
			runtime.GC()
			b.ReportAllocs()
			startCPU := cpuTime()
			for b.Loop() {
				s := q.Reader().Snapshot()
				if n := len(s.Budgets[0].Pods); n != gated/budgets-1 {
					b.Fatalf("%d pods in the first budget, want %d", n, gated/budgets-1)
				}
			}
			if cpu := cpuTime() - startCPU; cpu > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			}
		})
	}
}

// BenchmarkWaitReasons: the reasons of 8,000 gated pods in one budget (all changed code
// in one round, say), asked one by one (each counts the budget) or in one batch (the
// budget is sorted once).
func BenchmarkWaitReasons(b *testing.B) {
	const gated = 8000
	q, _ := newTestQueue()
	optIn(q, "ns-0")
	q.UpsertBudget(makeBudget("ns-0", "b").Hard("cpu=1").Obj())
	uids := make([]types.UID, gated)
	for j := range gated {
		p := benchPod("ns-0", j, 600+int64(j%3)*100)
		uids[j] = p.UID
		q.UpsertPod(p)
	}
	q.Admit()
	b.Run("one-by-one", func(b *testing.B) {
		startCPU := cpuTime()
		for b.Loop() {
			for _, uid := range uids {
				q.Reader().WaitReason(uid)
			}
		}
		if cpu := cpuTime() - startCPU; cpu > 0 {
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	})
	b.Run("batch", func(b *testing.B) {
		startCPU := cpuTime()
		for b.Loop() {
			if n := len(q.Reader().WaitReasons(uids)); n != gated-1 {
				b.Fatalf("%d reasons, want %d", n, gated-1)
			}
		}
		if cpu := cpuTime() - startCPU; cpu > 0 {
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	})
}

// BenchmarkCompositeFormation: a CompositePodGroup's gang of n pods forms, each pod in
// a PodGroup of its own (per=1, the most parts, each completing as its pod arrives) or
// of 8, the root wanting half of its children. Interleaved, Admit runs after every pod:
// the gang starts halfway, and every later PodGroup goes as it completes.
func BenchmarkCompositeFormation(b *testing.B) {
	for _, interleaved := range []bool{false, true} {
		for _, per := range []int{1, 8} {
			for _, size := range []int{1000, 4000} {
				name := fmt.Sprintf("once/per=%d/members=%d", per, size)
				if interleaved {
					name = fmt.Sprintf("interleaved/per=%d/members=%d", per, size)
				}
				b.Run(name, func(b *testing.B) { benchCompositeFormation(b, size, per, interleaved) })
			}
		}
	}
}

func benchCompositeFormation(b *testing.B, size, per int, interleaved bool) {
	parts := size / per
	root := CompositePodGroupInfo{Name: "root", Exists: true, MinGroupCount: parts / 2}
	pods := make([]Pod, size)
	for i := range pods {
		p := benchPod("team-a", i, 100)
		p.PodGroup = &PodGroupRef{Name: fmt.Sprintf("pg-%d", i/per)}
		pods[i] = ResolvePodGroup(p, PodGroupInfo{Exists: true, MinCount: per, Parents: []CompositePodGroupInfo{root}})
	}
	benchFormation(b, pods, interleaved)
}
