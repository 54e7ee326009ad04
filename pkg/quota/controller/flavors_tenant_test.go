package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/pkg/gates"
)

// TestNestedFlavorsContainTheirPods: the Flavors gpu = {pool: gpu} and gpu-spot =
// {pool: gpu, spot: "true"} nest (gpu-spot's nodes are among gpu's). A tenant with the
// edit role creates pods whose own node selector asks for spot: each one put on gpu
// runs on gpu-spot's nodes, so it is charged on both, and gpu-spot's hard (2 CPU)
// admits two of them, not four, before and after a manager restart. Both Flavors say
// they are nested (condition and event).
func TestNestedFlavorsContainTheirPods(t *testing.T) {
	ns := newNamespace(t, true)
	wide, narrow := ns+"-gpu", ns+"-gpu-spot" // cluster-wide names of this test's own
	pool := ns + "-pool"                      // a label value no other test's nodes have
	objs := []client.Object{
		&v1alpha1.Flavor{ObjectMeta: metav1.ObjectMeta{Name: wide}, Spec: v1alpha1.FlavorSpec{NodeLabels: map[string]string{"pool": pool}}},
		&v1alpha1.Flavor{ObjectMeta: metav1.ObjectMeta{Name: narrow}, Spec: v1alpha1.FlavorSpec{NodeLabels: map[string]string{"pool": pool, "spot": "true"}}},
	}
	mustCreate(t, objs...)
	t.Cleanup(func() {
		for _, o := range objs {
			_ = admin.Delete(context.Background(), o)
		}
	})
	b := budget(ns, "team", nil, "")
	b.Spec.Flavors = []v1alpha1.FlavorQuota{{Name: wide, Hard: cpu("8")}, {Name: narrow, Hard: cpu("2")}}
	mustCreate(t, b)
	first := startManager(t, nil, false)
	tenant := editTenant(t, ns)
	for _, name := range []string{"s1", "s2", "s3", "s4"} {
		pod := gatedPod(ns, name, "1")
		pod.Spec.NodeSelector = map[string]string{"spot": "true"}
		if _, err := tenant.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s as the tenant: %v", name, err)
		}
	}
	// admitted counts the admitted pods and names the waiting ones: which two wait
	// depends on the queue's order of pods created within the same second.
	admitted := func() (int, []string) {
		n, waiting := 0, []string(nil)
		for _, p := range podsOf(t, ns) {
			if gates.HasGate(&p, v1alpha1.SchedulingGate) {
				waiting = append(waiting, p.Name)
			} else {
				n++
			}
		}
		return n, waiting
	}
	var waiting []string
	testbed.Poll(t, time.Minute, "two spot pods admitted, two waiting", func(context.Context) (bool, error) {
		var n int
		n, waiting = admitted()
		return n == 2 && len(waiting) == 2, nil
	})
	for _, name := range waiting {
		waitForWaitingEvent(t, ns, name, "InsufficientQuota")
	}
	wantFlavorUsed(t, ns, "team", map[string]string{wide: "2", narrow: "2"})

	for _, tc := range []struct{ flavor, reason, mentions string }{
		{wide, v1alpha1.ReasonContainsFlavors, narrow},
		{narrow, v1alpha1.ReasonNestedIn, wide},
	} {
		testbed.Poll(t, time.Minute, "Flavor "+tc.flavor+" Nested="+tc.reason, func(ctx context.Context) (bool, error) {
			f := &v1alpha1.Flavor{}
			if err := admin.Get(ctx, client.ObjectKey{Name: tc.flavor}, f); err != nil {
				return false, err
			}
			c := apimeta.FindStatusCondition(f.Status.Conditions, v1alpha1.FlavorNested)
			return c != nil && c.Status == metav1.ConditionTrue && c.Reason == tc.reason && strings.Contains(c.Message, tc.mentions), nil
		})
	}
	testbed.Poll(t, time.Minute, "a NestedFlavors event on Flavor "+wide, func(ctx context.Context) (bool, error) {
		var evs corev1.EventList
		if err := admin.List(ctx, &evs, client.InNamespace(metav1.NamespaceDefault)); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "Flavor" && e.InvolvedObject.Name == wide && e.Reason == "NestedFlavors" {
				return true, nil
			}
		}
		return false, nil
	})

	// A restarted manager finds the same charges from the pods as they run.
	first.stop(t)
	startManager(t, nil, false)
	// A pod that reaches only gpu (its nodes without spot) is admitted once the new
	// manager has read the world back; by then it has decided the spot pods too.
	probe := gatedPod(ns, "on-demand", "1")
	probe.Spec.NodeSelector = map[string]string{"spot": "false"}
	if _, err := tenant.CoreV1().Pods(ns).Create(t.Context(), probe, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the on-demand pod as the tenant: %v", err)
	}
	testbed.Poll(t, time.Minute, "the on-demand pod admitted after the restart", func(context.Context) (bool, error) {
		return !isGated(t, ns, "on-demand"), nil
	})
	wantFlavorUsed(t, ns, "team", map[string]string{wide: "3", narrow: "2"})
	if n, waiting := admitted(); n != 3 || len(waiting) != 2 {
		t.Errorf("after the restart %d pods admitted and %v waiting; want the on-demand pod and two spot pods admitted, two waiting: gpu-spot's hard is 2 CPU", n, waiting)
	}
}

// TestFlavorHardsAreTracked: a Budget whose flavors alone limit requests.cpu tracks it,
// so ResourceQuota's rule holds: a BestEffort pod (no cpu request) waits with
// MustSpecifyResources instead of running charged nothing.
func TestFlavorHardsAreTracked(t *testing.T) {
	ns := newNamespace(t, true)
	name := ns + "-pool"
	f := &v1alpha1.Flavor{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.FlavorSpec{NodeLabels: map[string]string{"pool": name}}}
	mustCreate(t, f)
	t.Cleanup(func() { _ = admin.Delete(context.Background(), f) })
	b := budget(ns, "team", nil, "")
	b.Spec.Flavors = []v1alpha1.FlavorQuota{{Name: name, Hard: cpu("4")}}
	mustCreate(t, b)
	startManager(t, nil, false)
	tenant := editTenant(t, ns)
	pod := gatedPod(ns, "besteffort", "1")
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	if _, err := tenant.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := waitForWaitingEvent(t, ns, "besteffort", "MustSpecifyResources")
	if !isGated(t, ns, "besteffort") {
		t.Fatalf("the BestEffort pod was admitted under a flavor hard on requests.cpu (event: %s)", ev.Message)
	}
}

// wantFlavorUsed waits until the budget's status shows, per flavor, used requests.cpu.
func wantFlavorUsed(t *testing.T, ns, name string, want map[string]string) {
	t.Helper()
	testbed.Poll(t, time.Minute, "budget "+name+" to show flavor usage", func(context.Context) (bool, error) {
		b := getBudget(t, ns, name)
		got := map[string]string{}
		for _, f := range b.Status.Flavors {
			q := f.Used["requests.cpu"]
			got[f.Name] = q.String()
		}
		for f, v := range want {
			if got[f] != v {
				return false, nil
			}
		}
		return true, nil
	})
}
