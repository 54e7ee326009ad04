package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// UngateOnFlavor runs the controller's ungate of one gated pod against api, for the
// tests of the real API server (package controller_test): a controller whose clients
// and pod store are api (useAPI: the pod is read through the informer's transform), with
// a Budget ns/b of 8 CPU over the pod's namespace, admits the pod, puts the admission on
// flavor and ungates it. It returns the events recorded on the pod.
func UngateOnFlavor(t *testing.T, api client.Client, pod *corev1.Pod, flavor *quota.Flavor) []string {
	t.Helper()
	c, err := New(Options{Gate: v1alpha1.SchedulingGate, Workers: 1, PodAdmittedEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	rec := events.NewFakeRecorder(10)
	useAPI(c, api, false, rec)
	c.core.SetNamespace(pod.Namespace, map[string]string{v1alpha1.EnabledLabel: "true"})
	c.core.UpsertBudget(quota.Budget{Key: quota.BudgetKey{Namespace: pod.Namespace, Name: "b"}, Hard: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}})
	showCore(t.Context(), t, c, api, c.opts.Clock.Now(), pod)
	adm := c.core.Admit()
	if len(adm) != 1 || adm[0].Pod.Name != pod.Name {
		t.Fatalf("Admit = %v, want %s", adm, pod.Name)
	}
	adm[0].Flavor = flavor // the core does not choose flavors yet
	c.ungate(t.Context(), adm[0])
	var out []string
	for len(rec.Events) > 0 {
		out = append(out, <-rec.Events)
	}
	return out
}
