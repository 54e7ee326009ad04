package controller

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/quota"
)

// estimateT0 is the estimator fixture's now.
var estimateT0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// estimateFixture is a controller with its estimator on, its caches a fake client
// (namespaces team-a and team-b, opted in; Budget team-a/a of 4 CPUs and Budget
// team-b/b of 1 CPU) and a pod store, on a fake clock at estimateT0.
type estimateFixture struct {
	c     *Controller
	clk   *clocktesting.FakeClock
	store toolscache.Store
}

func newEstimateFixture(t *testing.T) *estimateFixture {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var objs []client.Object
	for _, ns := range []string{"team-a", "team-b"} {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{v1alpha1.EnabledLabel: "true"}}})
	}
	objs = append(objs,
		&v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "a"}, Spec: v1alpha1.BudgetSpec{Hard: podtest.ParseList("cpu=4")}},
		&v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "b"}, Spec: v1alpha1.BudgetSpec{Hard: podtest.ParseList("cpu=1")}},
	)
	clk := clocktesting.NewFakeClock(estimateT0)
	opts := DefaultOptions()
	opts.Clock = clk
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	c.reader = fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	c.recorder = events.NewFakeRecorder(100)
	store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	c.pods = store
	c.connectSimulations()
	return &estimateFixture{c: c, clk: clk, store: store}
}

// add puts a pod in the pod cache and delivers it to the estimator's handler, as the
// informer does.
func (f *estimateFixture) add(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	obj, err := CompactPod(pod)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.Add(obj); err != nil {
		t.Fatal(err)
	}
	f.feed().OnAdd(obj, false)
}

// feed is the estimator's pod handler, as the manager's informer calls it.
func (f *estimateFixture) feed() toolscache.ResourceEventHandler {
	return estimatorFeed{f.c.estimates, f.c.opts.Clock, f.c.opts.Gate}.podHandler()
}

// update replaces a cached pod by its new version and delivers the update.
func (f *estimateFixture) update(t *testing.T, old, pod *corev1.Pod) {
	t.Helper()
	obj, err := CompactPod(pod)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.Update(obj); err != nil {
		t.Fatal(err)
	}
	was, _ := CompactPod(old)
	f.feed().OnUpdate(was, obj)
}

// estimatePod is a pod of namespace ns asking for cpu, created created seconds before
// estimateT0, its name its UID.
func estimatePod(ns, name string, created int, cpu string) *podtest.Builder {
	return podtest.New(name).NS(ns).UID(name).At(estimateT0).Created(-created).Container("c", "registry.invalid/app").Req("cpu=" + cpu)
}

// runningFor makes b a pod that has run since started, admitted by budget, declaring
// its duration when declared is not empty.
func runningFor(b *podtest.Builder, budget string, started time.Time, declared string) *corev1.Pod {
	b = b.AdmittedBy(budget).Annotation(v1alpha1.AdmittedAtAnnotation, started.Format(time.RFC3339)).Phase(corev1.PodRunning)
	if declared != "" {
		b = b.Annotation(v1alpha1.ExpectedDurationAnnotation, declared)
	}
	pod := b.Obj()
	pod.Status.StartTime = &metav1.Time{Time: started}
	return pod
}

// ended is pod as it ends at end: Succeeded, its container finished then.
func ended(pod *corev1.Pod, end time.Time) *corev1.Pod {
	pod = pod.DeepCopy()
	pod.Status.Phase = corev1.PodSucceeded
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(end)},
	}}}
	return pod
}

// minutes is when s starts, in minutes after estimateT0: median, low and high.
func minutes(s estimate.Start) [3]float64 {
	m := func(t time.Time) float64 { return t.Sub(estimateT0).Minutes() }
	return [3]float64{m(s.Median), m(s.Low), m(s.High)}
}

// A gated pod behind running pods that declare their durations starts when enough of
// them end; the next one when the first has run its own declared duration.
func TestEstimateBehindRunningPods(t *testing.T) {
	f := newEstimateFixture(t)
	ctx := t.Context()
	if _, ok := f.c.EstimatedStart("g1"); ok {
		t.Fatalf("an estimate before the estimator's first pass")
	}
	f.add(t, runningFor(estimatePod("team-a", "r1", 600, "2"), "team-a/a", estimateT0.Add(-2*time.Minute), "10m"))
	f.add(t, runningFor(estimatePod("team-a", "r2", 600, "2"), "team-a/a", estimateT0, "30m"))
	f.add(t, estimatePod("team-a", "g1", 60, "2").Gated().Annotation(v1alpha1.ExpectedDurationAnnotation, "5m").Obj())
	f.add(t, estimatePod("team-a", "g2", 30, "2").Gated().Annotation(v1alpha1.ExpectedDurationAnnotation, "5m").Obj())
	// team-b's Budget is full with a pod that says nothing of how long it runs.
	f.add(t, runningFor(estimatePod("team-b", "forever", 600, "1"), "team-b/b", estimateT0.Add(-time.Hour), ""))
	f.add(t, estimatePod("team-b", "stuck", 60, "1").Gated().Obj())
	// A finished pod holds nothing: it is not in the world.
	f.add(t, ended(runningFor(estimatePod("team-a", "done", 900, "4"), "team-a/a", estimateT0.Add(-10*time.Minute), ""), estimateT0.Add(-time.Minute)))

	if err := f.c.estimates.Once(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[string][3]float64{}
	for _, uid := range []types.UID{"g1", "g2"} {
		s, ok := f.c.EstimatedStart(uid)
		if !ok || !s.Known {
			t.Fatalf("pod %s: estimate %+v, %v; want a known start", uid, s, ok)
		}
		got[string(uid)] = minutes(s)
	}
	// r1 ends at +8m, freeing 2 CPUs for g1; g1 ends 5m later, freeing them for g2
	// (r2 runs until +30m).
	want := map[string][3]float64{"g1": {8, 8, 8}, "g2": {13, 13, 13}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("starts in minutes after now, median low high (-want +got):\n%s", diff)
	}
	if s, _ := f.c.EstimatedStart("g2"); s.Ends != 2 {
		t.Errorf("g2 starts after %d ends, want 2 (r1, g1)", s.Ends)
	}
	stuck, ok := f.c.EstimatedStart("stuck")
	if !ok || stuck.Known || stuck.Unknown != estimate.UnknownNoHistory {
		t.Errorf("pod stuck: estimate %+v, %v; want unknown for NoHistory", stuck, ok)
	}
	for _, uid := range []types.UID{"r1", "forever", "done"} {
		if s, ok := f.c.EstimatedStart(uid); ok {
			t.Errorf("pod %s is not gated, yet has an estimate %+v", uid, s)
		}
	}
}

// The Learner learns each pod that ends once, from the update that shows it ended or
// from the informer's first list, and a gated pod of the same Job is then expected to
// run as long as they did.
func TestEstimatorLearnsFromEndedPods(t *testing.T) {
	f := newEstimateFixture(t)
	job := func(b *podtest.Builder) *podtest.Builder { return b.Owner("batch/v1", "Job", "train", true) }
	for i, name := range []string{"j1", "j2", "j3"} {
		started := estimateT0.Add(-time.Duration(30+i) * time.Minute)
		run := runningFor(job(estimatePod("team-a", name, 3600, "4")), "team-a/a", started, "")
		if i == 0 {
			// Ended before the manager started: its first Add teaches.
			f.add(t, ended(run, started.Add(20*time.Minute)))
			continue
		}
		f.add(t, run)
		f.update(t, run, ended(run, started.Add(20*time.Minute)))
		// An update of a pod that had ended already (a resync) teaches nothing more.
		f.update(t, ended(run, started.Add(20*time.Minute)), ended(run, started.Add(20*time.Minute)))
	}
	keys := estimate.FactsOf(job(estimatePod("team-a", "x", 0, "1")).Obj())
	d, ok := f.c.estimates.Learner().Estimate(keys.Keys(nil))
	if !ok || d.Samples != 3 || d.Median != 20*time.Minute {
		t.Fatalf("learned %+v, %v; want 3 samples of 20m", d, ok)
	}

	// A pod of the Job runs (declared nothing: learned), and another waits behind it.
	f.add(t, runningFor(job(estimatePod("team-a", "j4", 600, "4")), "team-a/a", estimateT0.Add(-5*time.Minute), ""))
	f.add(t, job(estimatePod("team-a", "j5", 60, "4")).Gated().Obj())
	if err := f.c.estimates.Once(t.Context()); err != nil {
		t.Fatal(err)
	}
	s, ok := f.c.EstimatedStart("j5")
	if !ok || !s.Known {
		t.Fatalf("j5: estimate %+v, %v; want a known start", s, ok)
	}
	if diff := cmp.Diff([3]float64{15, 15, 15}, minutes(s)); diff != "" {
		t.Errorf("j5 starts in minutes after now, median low high (-want +got):\n%s", diff)
	}
	if s.Ends != 1 || s.Samples != 3 {
		t.Errorf("j5 starts after %d ends learned from %d samples, want 1 and 3", s.Ends, s.Samples)
	}
}

// The estimator off: no handlers, no estimates.
func TestEstimatorOff(t *testing.T) {
	opts := DefaultOptions()
	opts.EstimateInterval = 0
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if c.estimates != nil {
		t.Fatalf("an estimator with EstimateInterval 0")
	}
	if s, ok := c.EstimatedStart("any"); ok {
		t.Errorf("an estimate %+v with the estimator off", s)
	}
	opts.EstimateInterval = -time.Second
	if _, err := New(opts); err == nil {
		t.Errorf("a negative EstimateInterval is accepted")
	}
}

// The loop makes a pass once the caches have synced, and another after an event once
// the interval has passed.
func TestEstimatorLoop(t *testing.T) {
	f := newEstimateFixture(t)
	f.c.synced.Store(true)
	f.add(t, runningFor(estimatePod("team-a", "r1", 600, "4"), "team-a/a", estimateT0, "10m"))
	f.add(t, estimatePod("team-a", "g1", 60, "4").Gated().Annotation(v1alpha1.ExpectedDurationAnnotation, "5m").Obj())
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- f.c.estimates.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	testbed.Poll(t, 10*time.Second, "g1's first estimate", func(context.Context) (bool, error) {
		_, ok := f.c.EstimatedStart("g1")
		return ok, nil
	})
	f.add(t, estimatePod("team-a", "g2", 30, "4").Gated().Obj())
	testbed.Poll(t, 10*time.Second, "g2's estimate, a pass after the interval", func(context.Context) (bool, error) {
		f.clk.Step(DefaultEstimateInterval)
		s, ok := f.c.EstimatedStart("g2")
		return ok && s.Known, nil
	})
}

// The error histogram counts, for each pod admitted with a known estimate, how far its
// first and its last estimate were from its admission, once; a pod that never had a
// known estimate is not counted.
func TestEstimateErrorIsObservedAtAdmission(t *testing.T) {
	f := newEstimateFixture(t)
	f.add(t, runningFor(estimatePod("team-a", "r1", 600, "4"), "team-a/a", estimateT0.Add(-2*time.Minute), "10m"))
	f.add(t, estimatePod("team-a", "g1", 60, "2").Gated().Obj())
	f.add(t, runningFor(estimatePod("team-b", "forever", 600, "1"), "team-b/b", estimateT0.Add(-time.Hour), ""))
	f.add(t, estimatePod("team-b", "stuck", 60, "1").Gated().Obj())
	if err := f.c.estimates.Once(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s, ok := f.c.EstimatedStart("g1"); !ok || !s.Known || !s.Median.Equal(estimateT0.Add(8*time.Minute)) {
		t.Fatalf("g1: estimate %+v, want a known start at +8m", s)
	}
	// g1 is admitted 2m after its estimate; the first, head and last estimates are the
	// one pass's (a later pass that moves them: estimator.TestErrorJudgesFirstHeadAndLast).
	if s, _ := f.c.EstimatedStart("g1"); !s.Head {
		t.Errorf("g1's estimate does not say it is at the head of its queue: %+v", s)
	}
	a := quota.BudgetKey{Namespace: "team-a", Name: "a"}
	at := estimateT0.Add(10 * time.Minute)
	f.c.estimates.ObserveError("g1", []quota.BudgetKey{a}, at)
	f.c.estimates.ObserveError("g1", []quota.BudgetKey{a}, at) // once per pod
	f.c.estimates.ObserveError("stuck", []quota.BudgetKey{{Namespace: "team-b", Name: "b"}}, at)
	for _, tc := range []struct {
		estimate string
		sum      float64
		within   float64
	}{{"first", 120, 0}, {"head", 120, 0}, {"last", 120, 0}} {
		labels := []string{"Budget", "team-a", "a", tc.estimate}
		var m dto.Metric
		if err := f.c.metrics.estimateError.WithLabelValues(labels...).(prometheus.Metric).Write(&m); err != nil {
			t.Fatal(err)
		}
		h := m.GetHistogram()
		if h.GetSampleCount() != 1 || h.GetSampleSum() != tc.sum {
			t.Errorf("estimate=%s: %d samples summing to %gs, want 1 of %gs", tc.estimate, h.GetSampleCount(), h.GetSampleSum(), tc.sum)
		}
		if got := testutil.ToFloat64(f.c.metrics.estimateWithin.WithLabelValues(labels...)); got != tc.within {
			t.Errorf("estimate=%s: %g admitted within range, want %g", tc.estimate, got, tc.within)
		}
	}
	r, ok := f.c.EstimateRecord(a)
	if want := (estimate.Record{Budget: a, Pods: 1, MedianError: 2 * time.Minute, Within: 0, Since: r.Since}); !ok || r != want || r.Since.IsZero() {
		t.Errorf("Budget team-a/a's track record: %+v (%v), want %+v since the manager started", r, ok, want)
	}
	if _, ok := f.c.EstimateRecord(quota.BudgetKey{Namespace: "team-b", Name: "b"}); ok {
		t.Errorf("Budget team-b/b has a track record, but its pod had no known estimate")
	}
}
