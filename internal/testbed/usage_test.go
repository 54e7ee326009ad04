package testbed

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/quotagate/quotagate/internal/testbed/podtest"
)

func gatedPod(name, cpu string) *corev1.Pod {
	return podtest.New(name).NS("ns").UID(name).Gated().Container("c", "").Req("cpu=" + cpu).Phase(corev1.PodPending).Obj()
}

func TestUsageWatcherChecksEveryRevision(t *testing.T) {
	ctx := t.Context()
	cs := fake.NewClientset()
	w, err := WatchUsage(ctx, cs, "ns", corev1.ResourceList{
		corev1.ResourceRequestsCPU: resource.MustParse("2"),
		corev1.ResourcePods:        resource.MustParse("2"),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	pods := cs.CoreV1().Pods("ns")
	step := stepper(t, w)
	create, update := podWrites(ctx, pods)
	p1, p2 := gatedPod("p1", "1"), gatedPod("p2", "2")
	step("create p1", create(p1))
	step("create p2", create(p2))
	p1.Spec.SchedulingGates = nil
	step("admit p1", update(p1))
	p2.Spec.SchedulingGates = nil
	step("admit p2: 3 CPU of 2", update(p2))
	p1.Status.Phase = corev1.PodSucceeded
	step("p1 succeeds", update(p1))
	step("delete p2", func() error { return pods.Delete(ctx, "p2", metav1.DeleteOptions{}) })

	r := w.Report()
	if len(r.Violations) != 1 || !strings.Contains(r.Violations[0], "requests.cpu 3 > 2") || !strings.Contains(r.Violations[0], "p1, p2") {
		t.Errorf("violations %q, want one naming 3 CPU over 2 in p1 and p2", r.Violations)
	}
	var admitted []string
	for _, a := range r.Admitted {
		admitted = append(admitted, a.Pod)
	}
	if diff := cmp.Diff([]string{"p1", "p2"}, admitted); diff != "" {
		t.Errorf("admission order (-want +got):\n%s", diff)
	}
	peak, used := r.Peak[corev1.ResourceRequestsCPU], r.Used[corev1.ResourceRequestsCPU]
	if peak.String() != "3" || !used.IsZero() || r.Gated != 0 {
		t.Errorf("peak %s, used %s, gated %d; want peak 3, nothing used or gated at the end", peak.String(), used.String(), r.Gated)
	}
	if diff := cmp.Diff([]string{"SchedulingGated", "Pending", "Succeeded"}, r.States["p1"]); diff != "" {
		t.Errorf("p1's states (-want +got):\n%s", diff)
	}
}

// A pod being deleted counts until its grace period ends, as in ResourceQuota
// (docs/budgets.md, "What a budget counts, checked against ResourceQuota"): the manager
// may admit into its room from then on, before the pod is gone.
func TestUsageWatcherStopsCountingPastTheGracePeriod(t *testing.T) {
	ctx := t.Context()
	cs := fake.NewClientset()
	w, err := WatchUsage(ctx, cs, "ns", corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("2")})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	step := stepper(t, w)
	create, update := podWrites(ctx, cs.CoreV1().Pods("ns"))
	deleting := func(p *corev1.Pod, at time.Time, grace int64) {
		p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &metav1.Time{Time: at}, &grace
	}
	p1, p2, p3, p4 := gatedPod("p1", "1"), gatedPod("p2", "1"), gatedPod("p3", "1"), gatedPod("p4", "1")
	for _, p := range []*corev1.Pod{p1, p3} {
		p.Spec.SchedulingGates = nil
		step("create "+p.Name+" admitted", create(p))
	}
	deleting(p3, time.Now().Add(time.Hour), 30)
	step("p3 deleted, its grace period running", update(p3))
	deleting(p1, time.Now().Add(-time.Second), 0)
	step("p1 deleted, its grace period over", update(p1))
	p2.Spec.SchedulingGates = nil
	step("p2 admitted into p1's room", create(p2))
	if r := w.Report(); len(r.Violations) != 0 {
		t.Fatalf("violations %q, want none: p1 is past its grace period", r.Violations)
	}
	p4.Spec.SchedulingGates = nil
	step("p4 admitted: 3 CPU of 2", create(p4))
	r := w.Report()
	if len(r.Violations) != 1 || !strings.Contains(r.Violations[0], "requests.cpu 3 > 2") || !strings.Contains(r.Violations[0], "p2, p3, p4") {
		t.Errorf("violations %q, want one naming 3 CPU over 2 in p2, p3 (still in its grace period) and p4", r.Violations)
	}
}

// A flavor's hard holds for the admitted pods whose nodeSelector selects the flavor,
// whatever room the budget's own hard has left.
func TestUsageWatcherChecksEachFlavor(t *testing.T) {
	ctx := t.Context()
	cs := fake.NewClientset()
	w, err := WatchUsageFlavored(ctx, cs, "ns", corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("8")}, []FlavorLimit{
		{Name: "spot", NodeLabels: map[string]string{"pool": "spot", "zone": "a"}, Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("2")}},
		{Name: "on-demand", NodeLabels: map[string]string{"pool": "on-demand"}, Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("1")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	step := stepper(t, w)
	create, update := podWrites(ctx, cs.CoreV1().Pods("ns"))
	on := func(p *corev1.Pod, labels map[string]string) *corev1.Pod {
		p.Spec.SchedulingGates, p.Spec.NodeSelector = nil, labels
		return p
	}
	spot := map[string]string{"pool": "spot", "zone": "a", "disk": "ssd"}
	step("p1 on spot", create(on(gatedPod("p1", "1"), spot)))
	step("p2 on spot", create(on(gatedPod("p2", "1"), spot)))
	step("p3 selects half of spot's labels: on no flavor", create(on(gatedPod("p3", "1"), map[string]string{"pool": "spot"})))
	step("p4 on on-demand", create(on(gatedPod("p4", "1"), map[string]string{"pool": "on-demand"})))
	step("p5 gated, selecting spot", create(func() *corev1.Pod { p := gatedPod("p5", "1"); p.Spec.NodeSelector = spot; return p }()))
	if r := w.Report(); len(r.Violations) != 0 {
		t.Fatalf("violations %q, want none: 2 of spot's 2, 1 of on-demand's 1, 4 of 8 in all", r.Violations)
	}
	step("p5 admitted on spot: 3 of 2", update(on(gatedPod("p5", "1"), spot)))
	r := w.Report()
	if len(r.Violations) != 1 || !strings.Contains(r.Violations[0], "requests.cpu@spot 3 > 2, admitted pods p1, p2, p5") {
		t.Errorf("violations %q, want one naming 3 CPU over spot's 2 in p1, p2 and p5, the pods on spot", r.Violations)
	}
	peak := map[string]string{}
	for name, q := range r.Peak {
		peak[string(name)] = q.String()
	}
	if diff := cmp.Diff(map[string]string{"requests.cpu": "5", "requests.cpu@spot": "3", "requests.cpu@on-demand": "1"}, peak); diff != "" {
		t.Errorf("peaks (-want +got):\n%s", diff)
	}
}

func TestUsageWatcherStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	w, err := WatchUsage(ctx, fake.NewClientset(), "ns", corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	w.Stop() // returns: the watcher ended with ctx
	if v := w.Report().Violations; len(v) != 0 {
		t.Errorf("a watcher stopped on purpose reported %v", v)
	}
}

// stepper returns step: it makes one change and waits until the watcher has seen the
// event it causes.
func stepper(t *testing.T, w *UsageWatcher) func(what string, do func() error) {
	events := 0
	return func(what string, do func() error) {
		t.Helper()
		if err := do(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		events++
		PollEvery(t, time.Millisecond, 10*time.Second, what+": the watcher to see it", func(context.Context) (bool, error) {
			n := w.Report().Events
			return n >= events, NotYet(fmt.Errorf("the watcher saw %d events, want %d", n, events))
		})
	}
}

// podWrites returns changes for stepper: create a pod, update a pod.
func podWrites(ctx context.Context, pods typedcorev1.PodInterface) (create, update func(*corev1.Pod) func() error) {
	create = func(p *corev1.Pod) func() error {
		return func() error { _, err := pods.Create(ctx, p, metav1.CreateOptions{}); return err }
	}
	update = func(p *corev1.Pod) func() error {
		return func() error { _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); return err }
	}
	return create, update
}
