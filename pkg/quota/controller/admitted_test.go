package controller

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// admittedFixture is a controller on a fake API server holding Budget ns/b (10 CPUs)
// and the given pods, in an opted-in namespace, at 00:00:10 on a fake clock.
type admittedFixture struct {
	c    *Controller
	api  client.Client
	clk  *clocktesting.FakeClock
	rec  *events.FakeRecorder
	seen map[string]bool // the events already read from the API server
}

func newAdmittedFixture(t *testing.T, podEvents bool, pods ...*corev1.Pod) *admittedFixture {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{&v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}}}
	for _, p := range pods {
		objs = append(objs, p)
	}
	api := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC))
	c, err := New(Options{Gate: v1alpha1.SchedulingGate, Workers: 1, Clock: clk, PodAdmittedEvents: podEvents})
	if err != nil {
		t.Fatal(err)
	}
	rec := events.NewFakeRecorder(100)
	useAPI(c, api, false, rec)
	c.core.SetNamespace("ns", map[string]string{v1alpha1.EnabledLabel: "true"})
	c.core.UpsertBudget(quota.Budget{Key: quota.BudgetKey{Namespace: "ns", Name: "b"}, Hard: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")}})
	return &admittedFixture{c: c, api: api, clk: clk, rec: rec, seen: map[string]bool{}}
}

// deliver hands a pod to the controller as the informer would; initialList marks the
// informer's first list.
func (f *admittedFixture) deliver(t *testing.T, p *corev1.Pod, initialList bool) {
	t.Helper()
	fresh := &corev1.Pod{}
	if err := f.api.Get(t.Context(), client.ObjectKeyFromObject(p), fresh); err != nil {
		t.Fatal(err)
	}
	f.c.onPod(fresh, initialList)
}

// admitAll runs one admission round and every ungate it decides, then the status
// writer's announcements; it returns the events emitted.
func (f *admittedFixture) admitAll(t *testing.T, want int) []string {
	t.Helper()
	adm := f.c.core.Admit()
	if len(adm) != want {
		t.Fatalf("admitted %d pods, want %d", len(adm), want)
	}
	for _, a := range adm {
		f.c.ungate(t.Context(), a)
	}
	f.c.status.announceAdmitted(t.Context())
	return f.events(t)
}

// events returns the events emitted since the last call: the recorder's, and those
// written to the API server, as "type reason note".
func (f *admittedFixture) events(t *testing.T) []string {
	t.Helper()
	var got []string
	list := &eventsv1.EventList{}
	if err := f.api.List(t.Context(), list); err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		if f.seen[e.Name] {
			continue
		}
		f.seen[e.Name] = true
		if e.Regarding.Kind != "Budget" || e.Regarding.Name != "b" || e.ReportingController != eventSource || e.ReportingInstance == "" {
			t.Errorf("event %s is about %s %s, reported by %q (%q)", e.Name, e.Regarding.Kind, e.Regarding.Name, e.ReportingController, e.ReportingInstance)
		}
		got = append(got, e.Type+" "+e.Reason+" "+e.Note)
	}
	for {
		select {
		case e := <-f.rec.Events:
			got = append(got, e)
		default:
			slices.Sort(got)
			return got
		}
	}
}

// TestWaitIsMeasuredFromFirstSight: an admission's wait starts when the manager first
// saw the pod gated, not at its creationTimestamp (one-second resolution, and usually
// before the pod reached the manager); a pod found gated at startup has nothing but its
// creationTimestamp.
func TestWaitIsMeasuredFromFirstSight(t *testing.T) {
	old, fresh := gatedPod("old", 1), gatedPod("fresh", 9) // created 00:00:01 and 00:00:09
	f := newAdmittedFixture(t, true, old, fresh)
	f.deliver(t, old, true) // in the informer's first list
	f.clk.Step(300 * time.Millisecond)
	f.deliver(t, fresh, false) // seen at 00:00:10.3
	f.clk.Step(200 * time.Millisecond)

	got := f.admitAll(t, 2)
	want := []string{
		"Normal Admitted Admitted 2 pods in the last 0s; longest wait 9.5s",
		"Normal Admitted Admitted after 200ms: fits in Budget ns/b",
		"Normal Admitted Admitted after 9.5s: fits in Budget ns/b",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestAdmittedEventsSumUpPerBudget: by default no admitted pod gets an event (the
// ungate patch is the admission's only write); its budget gets one Admitted event at
// once, then at most one per interval summing up what it admitted since.
func TestAdmittedEventsSumUpPerBudget(t *testing.T) {
	pods := []*corev1.Pod{gatedPod("p1", 9), gatedPod("p2", 9), gatedPod("p3", 9)}
	f := newAdmittedFixture(t, false, pods...)

	f.deliver(t, pods[0], false)
	f.clk.Step(200 * time.Millisecond)
	if diff := cmp.Diff([]string{"Normal Admitted Admitted 1 pod in the last 0s; longest wait 200ms"}, f.admitAll(t, 1)); diff != "" {
		t.Errorf("first admission's events (-want +got):\n%s", diff)
	}

	f.deliver(t, pods[1], false)
	f.clk.Step(time.Second)
	if got := f.admitAll(t, 1); len(got) != 0 {
		t.Errorf("events within the interval: %q, want none", got)
	}
	if got, want := f.c.tallies.next(f.c.opts.Clock.Now(), time.Hour), DefaultAdmittedEventInterval-time.Second; got != want {
		t.Errorf("the status writer would wake for the next Admitted event in %s, want %s", got, want)
	}
	f.deliver(t, pods[2], false)
	f.clk.Step(2 * time.Second)
	if got := f.admitAll(t, 1); len(got) != 0 {
		t.Errorf("events within the interval: %q, want none", got)
	}

	f.clk.Step(DefaultAdmittedEventInterval - 3*time.Second)
	f.c.status.announceAdmitted(t.Context())
	if diff := cmp.Diff([]string{"Normal Admitted Admitted 2 pods in the last 9s; longest wait 2s"}, f.events(t)); diff != "" {
		t.Errorf("events one interval after the first (-want +got):\n%s", diff)
	}

	f.clk.Step(DefaultAdmittedEventInterval)
	f.c.status.announceAdmitted(t.Context())
	if got := f.events(t); len(got) != 0 {
		t.Errorf("events after an interval without admissions: %q, want none", got)
	}
	if n := f.c.tallies.tracked(); n != 0 {
		t.Errorf("%d budgets still tallied after an idle interval, want 0", n)
	}
}
