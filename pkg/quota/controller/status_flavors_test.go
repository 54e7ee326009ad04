package controller

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// TestStatusCarriesFlavors: every field of the core's per-flavor status reaches the
// budget's status.flavors, in order (the two types share their JSON names), and a change
// in one flavor alone is a change of status, which the writer patches.
func TestStatusCarriesFlavors(t *testing.T) {
	list := func(name string, v string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceName(name): resource.MustParse(v)}
	}
	flavors := []quota.FlavorStatus{
		{Name: "h100", Hard: list("nvidia.com/gpu", "8"), Used: list("nvidia.com/gpu", "6"),
			Borrowed: list("requests.cpu", "2"), Lent: list("requests.memory", "1Gi")},
		{Name: "a100", Hard: list("nvidia.com/gpu", "32")},
	}
	var status v1alpha1.BudgetStatus
	applyStatus(&status, quota.BudgetStatus{State: v1alpha1.StateOpen, Flavors: flavors}, "team-a", 1, metav1.Now())

	want, err := json.Marshal(flavors)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(status.Flavors)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("status.flavors (-core +status):\n%s", diff)
	}

	before := status.DeepCopy()
	changed := append([]quota.FlavorStatus(nil), flavors...)
	changed[1].Used = list("nvidia.com/gpu", "1")
	applyStatus(&status, quota.BudgetStatus{State: v1alpha1.StateOpen, Flavors: changed}, "team-a", 1, metav1.Now())
	if equality.Semantic.DeepEqual(before, &status) {
		t.Error("a flavor's used changed and the status compares equal: the writer would not patch it")
	}

	applyStatus(&status, quota.BudgetStatus{State: v1alpha1.StateOpen}, "team-a", 1, metav1.Now())
	if status.Flavors != nil {
		t.Errorf("a budget without flavors has status.flavors %v, want none", status.Flavors)
	}
}
