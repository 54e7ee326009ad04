package controller_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
)

// webBudget is a Budget of the namespace that covers only pods labelled app=web.
func webBudget(ns, hard string) *v1alpha1.Budget {
	b := budget(ns, "web", cpu(hard), "")
	b.Spec.PodSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	return b
}

func labelled(pod *corev1.Pod, app string) *corev1.Pod {
	pod.Labels = map[string]string{"app": app}
	return pod
}

// TestPinsSurviveManagerRestart: a running pod admitted by Budget web is relabelled out
// of web's selector while the manager is down. The restarted manager reads the pin back
// from the pod's admitted-by annotation: web stays charged, and a second pod of web
// waits until the first ends. A watcher checks at every watch event that the admitted
// pods of the namespace never request more than web's hard.
func TestPinsSurviveManagerRestart(t *testing.T) {
	ns := newNamespace(t, true)
	w := watchAdmissions(t, ns, "2")
	mustCreate(t, webBudget(ns, "2"))
	first := startManager(t, nil, false)
	mustCreate(t, labelled(gatedPod(ns, "first", "2"), "web"))
	testbed.Poll(t, time.Minute, "the first pod admitted", func(context.Context) (bool, error) { return !isGated(t, ns, "first"), nil })
	pod := &corev1.Pod{}
	if err := admin.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "first"}, pod); err != nil {
		t.Fatal(err)
	}
	if got, want := pod.Annotations[v1alpha1.AdmittedByAnnotation], ns+"/web"; got != want {
		t.Fatalf("admitted-by = %q, want %q", got, want)
	}
	first.stop(t)

	// While no manager runs, the tenant relabels the running pod out of web, and asks
	// for another 2 CPU in web.
	tenant := editTenant(t, ns)
	if _, err := tenant.CoreV1().Pods(ns).Patch(t.Context(), "first", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"app":"batch"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("relabelling the running pod as the tenant: %v", err)
	}
	mustCreate(t, labelled(gatedPod(ns, "second", "2"), "web"))

	startManager(t, nil, false)
	// The Waiting event comes from the new manager: the second pod did not exist
	// before the first manager stopped.
	waitForWaitingEvent(t, ns, "second", "InsufficientQuota")
	if !isGated(t, ns, "second") {
		t.Fatal("web admitted a second pod of 2 CPU while the relabelled one still runs under hard 2")
	}
	if err := admin.Delete(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	testbed.Poll(t, time.Minute, "the second pod admitted once the first is gone", func(context.Context) (bool, error) { return !isGated(t, ns, "second"), nil })
	w.waitForAdmissions(t, 2)
	w.check(t)
}

// TestTenantRelabelOutOfEverySelectorStaysGated: a tenant with only the built-in edit
// role relabels its waiting pod out of the podSelector of every Budget of its
// namespace. No budget covers it any more, and it stays gated, saying why.
func TestTenantRelabelOutOfEverySelectorStaysGated(t *testing.T) {
	ns := newNamespace(t, true)
	mustCreate(t, webBudget(ns, "1"))
	startManager(t, nil, false)
	tenant := editTenant(t, ns)
	pod := labelled(gatedPod(ns, "big", "2"), "web")
	if _, err := tenant.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the pod as the tenant: %v", err)
	}
	waitForWaitingEvent(t, ns, "big", "RequestsExceedHard")
	if _, err := tenant.CoreV1().Pods(ns).Patch(t.Context(), "big", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"app":"escaped"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("relabelling the gated pod as the tenant: %v", err)
	}
	ev := waitForWaitingEvent(t, ns, "big", "Uncovered")
	if !isGated(t, ns, "big") {
		t.Fatalf("the pod relabelled out of every selector was admitted (event: %s)", ev.Message)
	}
	t.Logf("Waiting event: %s", ev.Message)
}

// TestTenantRelabelIntoAnotherBudgetMovesNoCharge: a running pod admitted by Budget web
// is relabelled, by a tenant with only the edit role, into Budget batch's selector. Its
// charge stays where it was admitted, before and after a manager restart: batch is not
// charged for it (it never passed batch's queue, so counting it could push batch over
// its hard), and batch admits its own pods as before.
func TestTenantRelabelIntoAnotherBudgetMovesNoCharge(t *testing.T) {
	ns := newNamespace(t, true)
	mustCreate(t, webBudget(ns, "2"))
	batch := budget(ns, "batch", cpu("2"), "")
	batch.Spec.PodSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "batch"}}
	mustCreate(t, batch)
	first := startManager(t, nil, false)
	tenant := editTenant(t, ns)
	if _, err := tenant.CoreV1().Pods(ns).Create(t.Context(), labelled(gatedPod(ns, "w1", "2"), "web"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the pod as the tenant: %v", err)
	}
	testbed.Poll(t, time.Minute, "w1 admitted", func(context.Context) (bool, error) { return !isGated(t, ns, "w1"), nil })
	if _, err := tenant.CoreV1().Pods(ns).Patch(t.Context(), "w1", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"app":"batch"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("relabelling the running pod into batch as the tenant: %v", err)
	}
	if _, err := tenant.CoreV1().Pods(ns).Create(t.Context(), labelled(gatedPod(ns, "b1", "2"), "batch"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testbed.Poll(t, time.Minute, "b1 admitted by batch", func(context.Context) (bool, error) { return !isGated(t, ns, "b1"), nil })
	wantUsed(t, ns, "batch", map[corev1.ResourceName]string{"requests.cpu": "2"})
	wantUsed(t, ns, "web", map[corev1.ResourceName]string{"requests.cpu": "2"})

	first.stop(t)
	startManager(t, nil, false)
	// The restarted manager reads w1's admission labels back: batch still holds b1 only,
	// and is full for the next batch pod; web is still charged for w1.
	if _, err := tenant.CoreV1().Pods(ns).Create(t.Context(), labelled(gatedPod(ns, "b2", "1"), "batch"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForWaitingEvent(t, ns, "b2", "InsufficientQuota")
	wantUsed(t, ns, "batch", map[corev1.ResourceName]string{"requests.cpu": "2"})
	wantUsed(t, ns, "web", map[corev1.ResourceName]string{"requests.cpu": "2"})
	if !isGated(t, ns, "b2") {
		t.Error("batch admitted b2 beyond its hard")
	}
}

// TestHugeLimitErasesNoUsage: the attack of a pod with limits.memory 9Pi, admitted by a
// Budget that does not track limits.memory, relabelled into and out of the selector of
// a Budget that does. That Budget's used stays the exact sum of its own pods (it once
// went to the int64 bound and then to 0, erasing every other pod's usage), and it
// admits no more than its hard.
func TestHugeLimitErasesNoUsage(t *testing.T) {
	ns := newNamespace(t, true)
	mustCreate(t, budget(ns, "cpu", cpu("100"), ""))
	mem := budget(ns, "mem", corev1.ResourceList{"limits.memory": resource.MustParse("10Gi")}, "")
	mem.Spec.PodSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "mem"}}
	mustCreate(t, mem)
	startManager(t, nil, false)
	tenant := editTenant(t, ns)
	withLimit := func(pod *corev1.Pod, limit string) *corev1.Pod {
		pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(limit), corev1.ResourceCPU: resource.MustParse("1")}
		return pod
	}
	for _, name := range []string{"m1", "m2"} {
		if _, err := tenant.CoreV1().Pods(ns).Create(t.Context(), withLimit(labelled(gatedPod(ns, name, "1"), "mem"), "4Gi"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tenant.CoreV1().Pods(ns).Create(t.Context(), withLimit(labelled(gatedPod(ns, "huge", "1"), "other"), "9Pi"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the 9Pi pod as the tenant: %v", err)
	}
	for _, name := range []string{"m1", "m2", "huge"} {
		testbed.Poll(t, time.Minute, name+" admitted", func(context.Context) (bool, error) { return !isGated(t, ns, name), nil })
	}
	wantUsed(t, ns, "mem", map[corev1.ResourceName]string{"limits.memory": "8Gi"})
	for _, app := range []string{"mem", "other"} {
		if _, err := tenant.CoreV1().Pods(ns).Patch(t.Context(), "huge", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"app":"`+app+`"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatalf("relabelling the 9Pi pod to app=%s as the tenant: %v", app, err)
		}
	}
	if _, err := tenant.CoreV1().Pods(ns).Create(t.Context(), withLimit(labelled(gatedPod(ns, "m3", "1"), "mem"), "4Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForWaitingEvent(t, ns, "m3", "InsufficientQuota")
	wantUsed(t, ns, "mem", map[corev1.ResourceName]string{"limits.memory": "8Gi"})
	wantUsed(t, ns, "cpu", map[corev1.ResourceName]string{"requests.cpu": "3"})
	if !isGated(t, ns, "m3") {
		t.Error("Budget mem admitted 12Gi of limits under a hard of 10Gi")
	}
}

// TestUnadmittedRunningPodKeepsItsChargeAcrossRestart: a pod that runs without having
// passed a queue (created before its namespace opted in, here without the gate) is
// charged to Budget web by the labels the manager first saw it with, and the manager
// writes them into its admitted-labels annotation. The tenant relabels it out of web
// while no manager runs: the restarted manager reads the labels back, web stays
// charged, and a second pod of web waits until the first ends.
func TestUnadmittedRunningPodKeepsItsChargeAcrossRestart(t *testing.T) {
	ns := newNamespace(t, true)
	old := labelled(gatedPod(ns, "old", "2"), "web")
	old.Spec.SchedulingGates = nil
	mustCreate(t, old, webBudget(ns, "2"))
	first := startManager(t, nil, false)
	testbed.Poll(t, time.Minute, "the running pod's charge labels written", func(ctx context.Context) (bool, error) {
		pod := &corev1.Pod{}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "old"}, pod); err != nil {
			return false, err
		}
		return pod.Annotations[v1alpha1.AdmittedLabelsAnnotation] == `{"app":"web"}`, nil
	})
	wantUsed(t, ns, "web", map[corev1.ResourceName]string{"requests.cpu": "2"})
	pod := &corev1.Pod{}
	if err := admin.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "old"}, pod); err != nil {
		t.Fatal(err)
	}
	if _, ok := pod.Annotations[v1alpha1.AdmittedByAnnotation]; ok {
		t.Errorf("admitted-by written on a pod no budget admitted: %v", pod.Annotations)
	}
	first.stop(t)

	tenant := editTenant(t, ns)
	if _, err := tenant.CoreV1().Pods(ns).Patch(t.Context(), "old", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"app":"batch"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("relabelling the running pod as the tenant: %v", err)
	}
	mustCreate(t, labelled(gatedPod(ns, "second", "2"), "web"))

	startManager(t, nil, false)
	waitForWaitingEvent(t, ns, "second", "InsufficientQuota")
	wantUsed(t, ns, "web", map[corev1.ResourceName]string{"requests.cpu": "2"})
	if !isGated(t, ns, "second") {
		t.Fatal("web admitted a second pod of 2 CPU while the relabelled one still runs under hard 2")
	}
	if err := admin.Delete(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	testbed.Poll(t, time.Minute, "the second pod admitted once the first is gone", func(context.Context) (bool, error) { return !isGated(t, ns, "second"), nil })
}
