package controller_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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
