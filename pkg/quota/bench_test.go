package quota

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// benchPod is a gated pod requesting cpu millicores, created at t0 plus seq ms. Its
// usage is shared by every pod of the same size, as NewPod shares it in the manager
// (SharedPodUsage), so a benchmark counts the core's allocations, not the pod views'.
func benchPod(ns string, seq int, milli int64) Pod {
	name := fmt.Sprintf("%s-p%d", ns, seq)
	return Pod{
		PodRef:  PodRef{UID: types.UID(name), Namespace: ns, Name: name},
		Created: t0.Add(time.Duration(seq) * time.Millisecond),
		Usage:   benchUsage(milli),
		Gated:   true,
	}
}

var benchUsages sync.Map // milli → corev1.ResourceList

func benchUsage(milli int64) corev1.ResourceList {
	if u, ok := benchUsages.Load(milli); ok {
		return u.(corev1.ResourceList)
	}
	u, _ := benchUsages.LoadOrStore(milli, ShareResourceList(corev1.ResourceList{
		"requests.cpu": *resourceMilli(milli),
		"pods":         *resourceCount(1),
		"count/pods":   *resourceCount(1),
	}))
	return u.(corev1.ResourceList)
}

// optIn tells the core about opted-in namespaces: it holds the pods of a namespace
// whose labels it has not seen (CodeNamespaceUnknown), and a benchmark would measure
// nothing but that.
func optIn(q *AdmissionQueue, namespaces ...string) {
	for _, ns := range namespaces {
		q.SetNamespace(ns, map[string]string{v1alpha1.EnabledLabel: "true"})
	}
}

// fill creates budgets ns-0..ns-(budgets-1) in opted-in namespaces, each with room for
// half of its perBudget gated pods, and upserts the pods.
func fill(q *AdmissionQueue, budgets, perBudget int) { fillWith(q, budgets, perBudget, nil) }

// fillWith is fill with each budget changed by with (nil: as it is) before it is upserted.
func fillWith(q *AdmissionQueue, budgets, perBudget int, with func(*Budget)) {
	for i := range budgets {
		ns := fmt.Sprintf("ns-%d", i)
		optIn(q, ns)
		bd := makeBudget(ns, "b").Hard(fmt.Sprintf("cpu=%d", perBudget/2)).Obj()
		if with != nil {
			with(&bd)
		}
		q.UpsertBudget(bd)
	}
	for j := range perBudget {
		for i := range budgets {
			q.UpsertPod(benchPod(fmt.Sprintf("ns-%d", i), j, 1000))
		}
	}
}

// BenchmarkAdmitDecisions: one Admit over 100,000 gated pods in 1,000 budgets, half of
// which fit. Every pod is decided once (admitted, or found not to fit).
func BenchmarkAdmitDecisions(b *testing.B) {
	const budgets, perBudget = 1000, 100
	var decided int
	var elapsed, cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		q, _ := newTestQueue()
		fill(q, budgets, perBudget)
		runtime.GC() // the garbage of fill is not the decisions' cost
		b.StartTimer()
		start, startCPU := time.Now(), cpuTime()
		adm := q.Admit()
		elapsed += time.Since(start)
		cpu += cpuTime() - startCPU
		decided += budgets * perBudget
		if len(adm) != budgets*perBudget/2 {
			b.Fatalf("admitted %d, want %d", len(adm), budgets*perBudget/2)
		}
	}
	b.ReportMetric(float64(decided)/elapsed.Seconds(), "decisions/s")
	if cpu > 0 {
		b.ReportMetric(float64(decided)/cpu.Seconds(), "decisions/cpu-s")
	}
}

// BenchmarkFreeingEvent: the cost of one pod ending in a full budget (release, wake,
// admit the next, confirm it), with 1,000 or 100,000 gated pods waiting in other
// budgets. It must not grow with the pods elsewhere.
func BenchmarkFreeingEvent(b *testing.B) {
	for _, others := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("gated-elsewhere=%d", others), func(b *testing.B) {
			q, _ := newTestQueue()
			fill(q, 1000, others/1000*2) // half of them admitted, half gated
			for _, a := range q.Admit() {
				q.Done(a.Pod.UID, Ungated, "")
			}
			const room = 10
			optIn(q, "hot")
			q.UpsertBudget(makeBudget("hot", "b").Hard(fmt.Sprintf("cpu=%d", room)).Obj())
			seq := 0
			var running []Pod
			for range room {
				p := benchPod("hot", seq, 1000)
				p.Gated = false
				q.UpsertPod(p)
				running = append(running, p)
				seq++
			}
			for range room {
				q.UpsertPod(benchPod("hot", seq, 1000))
				seq++
			}
			q.Admit()
			runtime.GC()
			b.ReportAllocs()
			startCPU := cpuTime()
			for b.Loop() {
				q.DeletePod(running[0].UID)
				running = running[1:]
				adm := q.Admit()
				if len(adm) != 1 {
					b.Fatalf("admitted %d, want 1", len(adm))
				}
				q.Done(adm[0].Pod.UID, Ungated, "")
				p := benchPod("hot", 0, 1000)
				p.PodRef = adm[0].Pod
				p.Created = adm[0].Created
				p.Gated = false
				q.UpsertPod(p)
				running = append(running, p)
				q.UpsertPod(benchPod("hot", seq, 1000))
				seq++
			}
			if cpu := cpuTime() - startCPU; cpu > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			}
		})
	}
}

// BenchmarkAdmitIdle: Admit when nothing changed, with 100,000 gated pods waiting.
func BenchmarkAdmitIdle(b *testing.B) {
	q, _ := newTestQueue()
	fill(q, 1000, 200)
	q.Admit()
	b.ReportAllocs()
	for b.Loop() {
		if n := len(q.Admit()); n != 0 {
			b.Fatalf("admitted %d", n)
		}
	}
}

// BenchmarkWaitCode: the cheap per-pod poll for reason transitions.
func BenchmarkWaitCode(b *testing.B) {
	q, _ := newTestQueue()
	fill(q, 1000, 200)
	q.Admit()
	uid := benchPod("ns-7", 150, 1000).UID
	b.ReportAllocs()
	for b.Loop() {
		if code, _ := q.Reader().WaitCode(uid); code != CodeInsufficient {
			b.Fatalf("code %q", code)
		}
	}
}

// BenchmarkFreeingEventSameBudget: one pod ends in a budget that itself has 10,000
// gated pods. Pods blocked by capacity are woken only if their request fits in what
// is free (kube-scheduler's queueing hints); with the uniform 1-CPU pods here every one
// of them may fit, so this is the worst case: one pass over the budget's queue.
func BenchmarkFreeingEventSameBudget(b *testing.B) {
	for _, big := range []bool{false, true} {
		name := "waiting=1cpu"
		if big {
			name = "waiting=4cpu"
		}
		b.Run(name, func(b *testing.B) {
			q, _ := newTestQueue()
			optIn(q, "hot")
			q.UpsertBudget(makeBudget("hot", "b").Hard("cpu=10").Obj())
			var running []Pod
			for i := range 10 {
				p := benchPod("hot", i, 1000)
				p.Gated = false
				q.UpsertPod(p)
				running = append(running, p)
			}
			milli := int64(1000)
			if big {
				milli = 4000 // never fits in the 1 CPU one ending pod frees
			}
			for i := range 10000 {
				q.UpsertPod(benchPod("hot", 100+i, milli))
			}
			q.Admit()
			runtime.GC()
			b.ReportAllocs()
			startCPU := cpuTime()
			seq := 100000
			for b.Loop() {
				q.DeletePod(running[0].UID)
				running = running[1:]
				adm := q.Admit()
				if !big && len(adm) != 1 || big && len(adm) != 0 {
					b.Fatalf("admitted %d", len(adm))
				}
				p := benchPod("hot", seq, 1000)
				seq++
				if len(adm) == 1 {
					q.Done(adm[0].Pod.UID, Ungated, "")
					p.PodRef, p.Created = adm[0].Pod, adm[0].Created
				}
				p.Gated = false
				q.UpsertPod(p) // one running pod replaces the one that ended
				running = append(running, p)
				q.UpsertPod(benchPod("hot", seq, milli))
				seq++
			}
			if cpu := cpuTime() - startCPU; cpu > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			}
		})
	}
}
