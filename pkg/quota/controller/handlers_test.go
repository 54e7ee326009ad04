package controller

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// TestPodEventsBeforeTheirNamespace: the pod and namespace informers are separate
// watches, so the pods of a new namespace may reach the manager before the namespace
// does. Those pods are held until it does, then decided with its labels: a
// ClusterBudget of 1 CPU that selects the namespace by label admits one pod of 1 CPU,
// not nine (with uncovered pods held or released alike).
func TestPodEventsBeforeTheirNamespace(t *testing.T) {
	for _, hold := range []bool{true, false} {
		t.Run(fmt.Sprintf("hold uncovered %v", hold), func(t *testing.T) {
			opts := DefaultOptions()
			opts.HoldUncovered = hold
			c, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			c.onClusterBudget(&v1alpha1.ClusterBudget{
				ObjectMeta: metav1.ObjectMeta{Name: "gold"},
				Spec: v1alpha1.ClusterBudgetSpec{
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}},
					BudgetSpec:        v1alpha1.BudgetSpec{Hard: corev1.ResourceList{"requests.cpu": resource.MustParse("1")}},
				},
			})
			for i := range 9 {
				c.onPod(&corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Namespace: "new", Name: fmt.Sprintf("p%d", i), UID: types.UID(fmt.Sprintf("u%d", i)), ResourceVersion: "1"},
					Spec: corev1.PodSpec{
						SchedulingGates: []corev1.PodSchedulingGate{{Name: v1alpha1.SchedulingGate}},
						Containers:      []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
					},
				}, false)
			}
			if adm := c.core.Admit(); len(adm) != 0 {
				t.Fatalf("admitted %d pods of a namespace the manager has not seen", len(adm))
			}
			c.onNamespace(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "new", Labels: map[string]string{v1alpha1.EnabledLabel: "true", "tier": "gold"}}})
			adm := c.core.Admit()
			var names []string
			for _, a := range adm {
				names = append(names, a.Pod.Name)
				c.core.Done(a.Pod.UID, quota.Ungated, "")
			}
			if diff := cmp.Diff([]string{"p0"}, names); diff != "" {
				t.Errorf("admitted once the namespace arrived (-want +got):\n%s", diff)
			}
			st, _ := c.core.Reader().Status(quota.BudgetKey{Name: "gold"})
			if used := st.Used["requests.cpu"]; used.Cmp(resource.MustParse("1")) != 0 {
				t.Errorf("gold used %s, want 1", used.String())
			}
		})
	}
}
