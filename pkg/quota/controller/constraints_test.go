package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
)

// ResourceQuota's constraints, with a queue's manners: under a Budget that tracks
// requests.cpu and requests.memory, a BestEffort pod is never admitted (charged
// nothing); it stays gated with a Warning event and the budget's PodsNeverFit condition
// in ResourceQuota's words. A pod that gets its values from a LimitRange's defaults
// (applied by the API server before any admission) is admitted and charged them. Once
// the budget stops tracking the values, the held pod is admitted.
func TestPodsThatLeaveTrackedResourcesUnsetAreHeldAndLimitRangeDefaultsCount(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t, true)
	hard := corev1.ResourceList{
		"requests.cpu":    resource.MustParse("2"),
		"requests.memory": resource.MustParse("1Gi"),
		"pods":            resource.MustParse("10"),
	}
	mustCreate(t, budget(ns, "b", hard, ""))
	startManager(t, nil, false)

	bestEffort := gatedPod(ns, "besteffort", "1")
	bestEffort.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	sets := gatedPod(ns, "sets", "100m")
	sets.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("100Mi")
	mustCreate(t, bestEffort, sets)
	testbed.Poll(t, time.Minute, "the pod that sets its values admitted", func(context.Context) (bool, error) { return !isGated(t, ns, "sets"), nil })

	ev := waitForWaitingEvent(t, ns, "besteffort", "MustSpecifyResources")
	if ev.Type != corev1.EventTypeWarning {
		t.Errorf("event type = %s, want Warning", ev.Type)
	}
	if want := "must specify requests.cpu for: c; requests.memory for: c (Budget " + ns + "/b tracks them"; !strings.Contains(ev.Message, want) {
		t.Errorf("event message %q does not say %q", ev.Message, want)
	}
	testbed.Poll(t, time.Minute, "PodsNeverFit True with reason MustSpecifyResources", func(context.Context) (bool, error) {
		b := getBudget(t, ns, "b")
		c := apimeta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionPodsNeverFit)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonMustSpecifyResources &&
			strings.Contains(c.Message, "pod "+ns+"/besteffort must specify requests.cpu for: c; requests.memory for: c") &&
			b.Status.GatedPods == 1 && b.Status.AdmittedPods == 1, nil
	})
	if !isGated(t, ns, "besteffort") {
		t.Fatalf("a BestEffort pod was admitted under a budget that tracks requests.cpu and requests.memory")
	}

	// A LimitRange's defaults: the API server writes them into the pod at create.
	mustCreate(t, &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: ns},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type:           corev1.LimitTypeContainer,
			DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
			Default:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
		}}},
	})
	defaulted := gatedPod(ns, "defaulted", "1")
	defaulted.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	// The API server's LimitRanger reads LimitRanges from an informer and caches a
	// namespace's empty live lookup for 30 s (it made one for the pods above), so a new
	// LimitRange applies a moment after it is created: ask with dry runs until it does.
	testbed.Poll(t, time.Minute, "the API server applying the LimitRange's defaults", func(ctx context.Context) (bool, error) {
		probe, err := clientset.CoreV1().Pods(ns).Create(ctx, defaulted.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		got := probe.Spec.Containers[0].Resources.Requests
		return got.Memory().Cmp(resource.MustParse("256Mi")) == 0, testbed.NotYet(fmt.Errorf("a dry run got requests %v", got))
	})
	mustCreate(t, defaulted)
	testbed.Poll(t, time.Minute, "the pod defaulted by the LimitRange admitted", func(context.Context) (bool, error) { return !isGated(t, ns, "defaulted"), nil })
	got, err := clientset.CoreV1().Pods(ns).Get(ctx, "defaulted", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m := got.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory]; m.String() != "256Mi" {
		t.Errorf("the API server gave the pod requests %v, want the LimitRange's defaults", got.Spec.Containers[0].Resources.Requests)
	}
	testbed.Poll(t, time.Minute, "the defaulted pod charged its defaults", func(context.Context) (bool, error) {
		b := getBudget(t, ns, "b")
		cpu, mem := b.Status.Used["requests.cpu"], b.Status.Used["requests.memory"]
		return cpu.Cmp(resource.MustParse("300m")) == 0 && mem.Cmp(resource.MustParse("356Mi")) == 0 && b.Status.AdmittedPods == 2, nil
	})
	if !isGated(t, ns, "besteffort") {
		t.Fatalf("the BestEffort pod created before the LimitRange was admitted: defaults apply only to new pods")
	}

	// The budget stops tracking cpu and memory: the held pod is woken and admitted.
	editBudget(t, ns, "b", func(b *v1alpha1.Budget) { b.Spec.Hard = corev1.ResourceList{"pods": resource.MustParse("10")} })
	testbed.Poll(t, time.Minute, "the BestEffort pod admitted once nothing tracks its values", func(context.Context) (bool, error) { return !isGated(t, ns, "besteffort"), nil })
	testbed.Poll(t, time.Minute, "PodsNeverFit False", func(context.Context) (bool, error) {
		c := apimeta.FindStatusCondition(getBudget(t, ns, "b").Status.Conditions, v1alpha1.ConditionPodsNeverFit)
		return c != nil && c.Status == metav1.ConditionFalse, nil
	})
}

func getBudget(t *testing.T, ns, name string) *v1alpha1.Budget {
	t.Helper()
	b := &v1alpha1.Budget{}
	if err := admin.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
		t.Fatalf("getting budget %s/%s: %v", ns, name, err)
	}
	return b
}

// editBudget changes budget ns/name with edit and updates it, reading it again when the
// manager's status write got there first: status shares the object's resourceVersion.
func editBudget(t *testing.T, ns, name string, edit func(*v1alpha1.Budget)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		b := getBudget(t, ns, name)
		edit(b)
		return admin.Update(t.Context(), b)
	})
	if err != nil {
		t.Fatalf("updating budget %s/%s: %v", ns, name, err)
	}
}
