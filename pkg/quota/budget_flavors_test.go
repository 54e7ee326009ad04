package quota

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// TestBudgetFromAPIFlavors: spec.flavors arrive in order with their three lists, and
// spec.flavorFungibility as the core's two switches, for a Budget and a ClusterBudget.
func TestBudgetFromAPIFlavors(t *testing.T) {
	gpus := func(n string) corev1.ResourceList {
		return corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(n)}
	}
	spec := v1alpha1.BudgetSpec{Flavors: []v1alpha1.FlavorQuota{
		{Name: "h100", Hard: gpus("8"), BorrowingLimit: gpus("2"), LendingLimit: gpus("4")},
		{Name: "a100", Hard: gpus("32")},
	}}
	wantFlavors := []FlavorQuota{
		{Name: "h100", Hard: gpus("8"), BorrowingLimit: gpus("2"), LendingLimit: gpus("4")},
		{Name: "a100", Hard: gpus("32")},
	}
	for name, tc := range map[string]struct {
		fungibility *v1alpha1.FlavorFungibility
		want        Fungibility
	}{
		"unset":    {nil, Fungibility{}},
		"defaults": {&v1alpha1.FlavorFungibility{WhenFull: v1alpha1.FlavorTryNext, WhenCanBorrow: v1alpha1.FlavorBorrow}, Fungibility{}},
		"wait for the preferred flavor": {&v1alpha1.FlavorFungibility{WhenFull: v1alpha1.FlavorWaitForPreferred, WhenCanBorrow: v1alpha1.FlavorBorrow},
			Fungibility{WaitForPreferred: true}},
		"avoid borrowing": {&v1alpha1.FlavorFungibility{WhenFull: v1alpha1.FlavorTryNext, WhenCanBorrow: v1alpha1.FlavorTryNext},
			Fungibility{AvoidBorrowing: true}},
		"stop to preempt": {&v1alpha1.FlavorFungibility{WhenFull: v1alpha1.FlavorTryNext, WhenCanBorrow: v1alpha1.FlavorBorrow, WhenCanPreempt: v1alpha1.FlavorPreempt},
			Fungibility{StopToPreempt: true}},
		"both": {&v1alpha1.FlavorFungibility{WhenFull: v1alpha1.FlavorWaitForPreferred, WhenCanBorrow: v1alpha1.FlavorTryNext},
			Fungibility{WaitForPreferred: true, AvoidBorrowing: true}},
	} {
		t.Run(name, func(t *testing.T) {
			s := *spec.DeepCopy()
			s.FlavorFungibility = tc.fungibility
			b := BudgetFromAPI(&v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "gpu"}, Spec: s})
			cb := ClusterBudgetFromAPI(&v1alpha1.ClusterBudget{ObjectMeta: metav1.ObjectMeta{Name: "org"}, Spec: v1alpha1.ClusterBudgetSpec{BudgetSpec: s}})
			for _, got := range []Budget{b, cb} {
				if diff := cmp.Diff(wantFlavors, got.Flavors); diff != "" {
					t.Errorf("%s: Flavors (-want +got):\n%s", got.Key, diff)
				}
				if got.Fungibility != tc.want {
					t.Errorf("%s: Fungibility = %+v, want %+v", got.Key, got.Fungibility, tc.want)
				}
			}
		})
	}
	if b := BudgetFromAPI(&v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "plain"}}); b.Flavors != nil {
		t.Errorf("a budget without spec.flavors has Flavors %v, want nil", b.Flavors)
	}
}

// TestFlavorFromAPI: the name, labels and tolerations, in copies the informer's object
// does not share.
func TestFlavorFromAPI(t *testing.T) {
	api := &v1alpha1.Flavor{
		ObjectMeta: metav1.ObjectMeta{Name: "spot"},
		Spec: v1alpha1.FlavorSpec{
			NodeLabels:  map[string]string{"pool": "spot"},
			Tolerations: []corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		},
	}
	got := FlavorFromAPI(api)
	want := Flavor{Name: "spot", NodeLabels: map[string]string{"pool": "spot"},
		Tolerations: []corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("FlavorFromAPI (-want +got):\n%s", diff)
	}
	api.Spec.NodeLabels["pool"] = "changed"
	api.Spec.Tolerations[0].Key = "changed"
	if got.NodeLabels["pool"] != "spot" || got.Tolerations[0].Key != "spot" {
		t.Errorf("FlavorFromAPI shares the informer's map or slice: %+v", got)
	}
}
