package controller_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/quotagate/quotagate/internal/testbed"
)

// An in-place resize down frees the difference only once the kubelet has applied it, as
// ResourceQuota charges it: the running pod is charged the larger of its spec and what
// its status says was allocated and applied. kwok plays no kubelet here, so the test
// writes the status a kubelet would write, before and after applying the resize.
func TestResizeDownFreesTheBudgetOnlyOnceApplied(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t, true)
	mustCreate(t, budget(ns, "b", cpu("4"), ""))
	startManager(t, nil, false)
	mustCreate(t, gatedPod(ns, "big", "3"))
	testbed.Poll(t, time.Minute, "big running", func(context.Context) (bool, error) {
		p, err := clientset.CoreV1().Pods(ns).Get(ctx, "big", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, err
	})
	// What runs, as the kubelet reports it.
	setApplied := func(cpu string) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p, err := clientset.CoreV1().Pods(ns).Get(ctx, "big", metav1.GetOptions{})
			if err != nil {
				return err
			}
			q := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
			for i := range p.Status.ContainerStatuses {
				p.Status.ContainerStatuses[i].AllocatedResources = q
				p.Status.ContainerStatuses[i].Resources = &corev1.ResourceRequirements{Requests: q}
			}
			if len(p.Status.ContainerStatuses) == 0 {
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", Image: "registry.invalid/app", AllocatedResources: q,
					Resources: &corev1.ResourceRequirements{Requests: q}}}
			}
			_, err = clientset.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("writing the kubelet's status: %v", err)
		}
	}
	setApplied("3")

	// Resize down to 1 CPU: the spec says 1, the kubelet still runs 3.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := clientset.CoreV1().Pods(ns).Get(ctx, "big", metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1")
		_, err = clientset.CoreV1().Pods(ns).UpdateResize(ctx, "big", p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("resizing: %v", err)
	}
	mustCreate(t, gatedPod(ns, "waiting", "2"))
	waitForWaitingEvent(t, ns, "waiting", "InsufficientQuota")
	// The status is written a moment after the decision: wait for it, then check that
	// the waiting pod is still held.
	testbed.Poll(t, time.Minute, "the status to say 3 CPUs used before the kubelet applied the resize", func(context.Context) (bool, error) {
		u := getBudget(t, ns, "b").Status.Used["requests.cpu"]
		return u.Cmp(resource.MustParse("3")) == 0, nil
	})
	if !isGated(t, ns, "waiting") {
		t.Fatal("the waiting pod was admitted before the kubelet applied the resize down")
	}

	setApplied("1")
	testbed.Poll(t, time.Minute, "the waiting pod admitted once the resize is applied", func(context.Context) (bool, error) { return !isGated(t, ns, "waiting"), nil })
	testbed.Poll(t, time.Minute, "used 3 CPUs: 1 resized, 2 admitted", func(context.Context) (bool, error) {
		u := getBudget(t, ns, "b").Status.Used["requests.cpu"]
		return u.Cmp(resource.MustParse("3")) == 0, nil
	})
}
