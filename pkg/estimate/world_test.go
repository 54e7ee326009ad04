package estimate

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/quota"
)

// cached is a pod as the manager's cache holds it: the core's view at t0 and its Facts.
func cached(b *podtest.Builder) (quota.Pod, Facts) {
	return quota.NewPod(b.Obj(), v1alpha1.SchedulingGate, t0), FactsOf(b.Obj())
}

// runningSince makes b a pod admitted by admittedBy that started at started.
func runningSince(b *podtest.Builder, admittedBy string, started time.Time) *podtest.Builder {
	b = b.AdmittedBy(admittedBy).Annotation(v1alpha1.AdmittedAtAnnotation, started.Format(time.RFC3339)).Phase(corev1.PodRunning)
	st := metaTime(started)
	b.Obj().Status.StartTime = &st
	return b
}

// The builder sorts pods into running and waiting, leaves out the ended ones, and
// gives each the durations it is expected to run: a gated pod of a namespace with no
// history of its own falls back to the durations of the ClusterBudget that will be
// charged for it.
func TestWorldBuilder(t *testing.T) {
	l := NewLearner(0)
	// Finished pods of team-a, charged to ClusterBudget org: org's durations.
	for _, m := range []int{10, 20, 30} {
		l.Record(KeysOf(podtest.New("old").NS("team-a").Obj(), []quota.BudgetKey{{Name: "org"}}), time.Duration(m)*time.Minute)
	}
	namespaces := map[string]map[string]string{
		"team-a": {v1alpha1.EnabledLabel: "true", "org": "ml"},
		"team-b": {v1alpha1.EnabledLabel: "true", "org": "ml"},
		"team-c": {v1alpha1.EnabledLabel: "true"},
	}
	org := quota.Budget{Key: quota.BudgetKey{Name: "org"}, NamespaceSelector: labels.SelectorFromSet(labels.Set{"org": "ml"})}
	gpu := quota.Budget{Key: quota.BudgetKey{Namespace: "team-b", Name: "gpu"}, PodSelector: labels.SelectorFromSet(labels.Set{"gpu": "yes"}), Parent: "all"}
	all := quota.Budget{Key: quota.BudgetKey{Name: "all"}}
	b := NewWorldBuilder(t0, l, namespaces, []quota.Budget{org, gpu, all}, nil)
	for _, pod := range []*podtest.Builder{
		runningSince(podIn("team-a", "run", -600, "cpu=1"), "org", t0.Add(-5*time.Minute)).Annotation(v1alpha1.ExpectedDurationAnnotation, "1h"),
		runningSince(podIn("team-a", "done", -900, "cpu=1"), "org", t0.Add(-10*time.Minute)).Phase(corev1.PodSucceeded),
		podIn("team-b", "new", -60, "cpu=1").Gated(),
		podIn("team-b", "gpu", -60, "cpu=1").Label("gpu", "yes").Gated(),
		podIn("team-c", "alone", -60, "cpu=1").Gated(),
	} {
		p, f := cached(pod)
		b.Add(p, &f)
	}
	w := b.World()
	type summary struct {
		Source Source
		Median time.Duration
		Basis  string
	}
	got := map[string]summary{}
	for _, set := range [][]Pod{w.Running, w.Waiting} {
		for _, p := range set {
			got[p.Pod.Name] = summary{p.Expect.Source, p.Expect.Median, p.Expect.Basis}
		}
	}
	want := map[string]summary{
		"run":   {SourceDeclared, time.Hour, "annotation " + v1alpha1.ExpectedDurationAnnotation},
		"new":   {SourceLearned, 20 * time.Minute, "no run of Pod team-b/new yet; durations of 3 runs of pods in ClusterBudget org"},
		"gpu":   {SourceLearned, 20 * time.Minute, "no run of Pod team-b/gpu yet; durations of 3 runs of pods in ClusterBudget org"},
		"alone": {},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("expectations by pod (-want +got):\n%s", diff)
	}
	if len(w.Running) != 1 || len(w.Waiting) != 3 {
		t.Errorf("%d running and %d waiting, want 1 and 3", len(w.Running), len(w.Waiting))
	}
	var cover []quota.BudgetKey
	for _, p := range w.Waiting {
		if p.Pod.Name == "gpu" {
			cover = b.cover.of(&p.Pod)
		}
	}
	if diff := cmp.Diff([]quota.BudgetKey{gpu.Key, all.Key, org.Key}, cover); diff != "" {
		t.Errorf("the budgets the gpu pod will be charged to (-want +got):\n%s", diff)
	}
}

// BenchmarkEstimatePass is one pass of the manager's estimator at 10,000 gated pods:
// the world built from what the caches hold (WorldBuilder, each pod's Expectation from
// the Learner) and simulated. 100 namespaces, each a Budget of 50 CPUs full of 50
// running pods of five Jobs whose finished pods taught the Learner durations of 5 to 60
// minutes, and 100 gated pods of those Jobs (1 or 2 CPUs, two priorities). The caches'
// listing is left out: the informers' objects are read in place (microseconds next to
// the simulation). Run it with
// `go test ./pkg/estimate -run '^$' -bench BenchmarkEstimatePass -benchtime=3x`.
func BenchmarkEstimatePass(b *testing.B) {
	const namespaces, jobs, runningPerNS, gatedPerNS = 100, 5, 50, 100
	r := rand.New(rand.NewPCG(3, 4))
	l := NewLearner(0)
	nsLabels := map[string]map[string]string{}
	var budgets []quota.Budget
	type cachedPod struct {
		pod   quota.Pod
		facts Facts
	}
	var pods []cachedPod
	add := func(pb *podtest.Builder) {
		p, f := cached(pb)
		pods = append(pods, cachedPod{p, f})
	}
	job := func(pb *podtest.Builder, j int) *podtest.Builder {
		return pb.Owner("batch/v1", "Job", fmt.Sprintf("job-%d", j), true)
	}
	for i := range namespaces {
		ns := fmt.Sprintf("ns-%d", i)
		nsLabels[ns] = map[string]string{v1alpha1.EnabledLabel: "true"}
		budget := quota.BudgetKey{Namespace: ns, Name: "b"}
		budgets = append(budgets, quota.Budget{Key: budget, Hard: podtest.ParseList("cpu=50")})
		for j := range jobs {
			for range 10 {
				d := time.Duration(5+r.IntN(56)) * time.Minute
				l.Record(KeysOf(job(podtest.New("done").NS(ns), j).Obj(), []quota.BudgetKey{budget}), d)
			}
		}
		for k := range runningPerNS {
			started := t0.Add(-time.Duration(r.IntN(30)) * time.Minute)
			add(runningSince(job(podIn(ns, fmt.Sprintf("run-%d-%d", i, k), -3600, "cpu=1"), k%jobs), budget.String(), started))
		}
		for k := range gatedPerNS {
			pb := podIn(ns, fmt.Sprintf("w-%d-%d", i, k), k, fmt.Sprintf("cpu=%d", 1+r.IntN(2))).Priority(int32(10 * r.IntN(2)))
			add(job(pb, k%jobs).Gated())
		}
	}
	build := func() World {
		wb := NewWorldBuilder(t0, l, nsLabels, budgets, nil)
		for i := range pods {
			wb.Add(pods[i].pod, &pods[i].facts)
		}
		return wb.World()
	}
	b.Run("build", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if w := build(); len(w.Waiting) != namespaces*gatedPerNS {
				b.Fatalf("%d waiting, want %d", len(w.Waiting), namespaces*gatedPerNS)
			}
		}
	})
	b.Run("build+simulate", func(b *testing.B) {
		b.ReportAllocs()
		startCPU := cpuTime()
		for b.Loop() {
			starts := Simulate(build(), Options{})
			if len(starts) != namespaces*gatedPerNS || !starts[len(starts)-1].Known {
				b.Fatalf("%d starts, the last %+v; want %d, all known", len(starts), starts[len(starts)-1], namespaces*gatedPerNS)
			}
		}
		if cpu := cpuTime() - startCPU; cpu > 0 {
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
		}
	})
}
