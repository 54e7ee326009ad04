package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
)

// A Budget naming a Flavor that does not exist is not Ready (FlavorNotFound, naming the
// Flavor) and admits nothing, its pods saying why in their condition; once the Flavor
// is created it is Ready and admits them.
func TestMissingFlavorIsNotReady(t *testing.T) {
	ns := newNamespace(t, true)
	name := ns + "-gpu" // Flavors are cluster-wide: a name of this test's own
	b := budget(ns, "team", nil, "")
	b.Spec.Flavors = []v1alpha1.FlavorQuota{{Name: name, Hard: cpu("2")}}
	mustCreate(t, b)
	startManager(t, nil, false)
	mustCreate(t, gatedPod(ns, podName(0), "1"))

	waitForState(t, ns, "team", v1alpha1.StateClosed, v1alpha1.ReasonFlavorNotFound)
	ready := apimeta.FindStatusCondition(getStatus(t, ns, "team").Conditions, v1alpha1.ConditionReady)
	if want := "Flavor " + name + " not found"; ready.Status != metav1.ConditionFalse || !strings.Contains(ready.Message, want) {
		t.Errorf("Ready = %s (%s: %s), want False with a message naming the Flavor: %s", ready.Status, ready.Reason, ready.Message, want)
	}
	waitForCondition(t, ns, podName(0), "BudgetClosed", "Budget "+ns+"/team cannot admit pods: Flavor "+name+" not found")
	if !isGated(t, ns, podName(0)) {
		t.Fatal("p00 was admitted by a budget whose Flavor does not exist")
	}

	f := &v1alpha1.Flavor{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.FlavorSpec{NodeLabels: map[string]string{"pool": name}}}
	mustCreate(t, f)
	t.Cleanup(func() { _ = admin.Delete(context.Background(), f) })
	waitForState(t, ns, "team", v1alpha1.StateOpen, v1alpha1.ReasonActive)
	testbed.Poll(t, time.Minute, "p00 admitted once the Flavor exists", func(context.Context) (bool, error) {
		return !isGated(t, ns, podName(0)), nil
	})
}

// An uncovered pod's reason, in its condition, names the Budget of its namespace that
// nearly covers it and the label that differs.
func TestUncoveredPodNamesNearBudget(t *testing.T) {
	ns := newNamespace(t, true)
	b := budget(ns, "team", cpu("4"), "")
	b.Spec.PodSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "train"}}
	mustCreate(t, b)
	startManager(t, nil, false)
	pod := gatedPod(ns, podName(0), "1")
	pod.Labels = map[string]string{"app": "trian"}
	mustCreate(t, pod)
	waitForCondition(t, ns, podName(0), "Uncovered", "no Budget or ClusterBudget covers it, and uncovered pods are held: Budget "+ns+"/team selects app=train, the pod has app=trian")
}
