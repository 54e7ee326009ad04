package quota

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// TestBudgetFromAPI converts API objects, nil-versus-empty selectors included.
func TestBudgetFromAPI(t *testing.T) {
	cb := &v1alpha1.ClusterBudget{ObjectMeta: metav1.ObjectMeta{Name: "all"}}
	cb.Spec.NamespaceSelector = &metav1.LabelSelector{}
	got := ClusterBudgetFromAPI(cb)
	if got.NamespaceSelector == nil || !got.NamespaceSelector.Empty() {
		t.Errorf("namespaceSelector {} = %v, want everything", got.NamespaceSelector)
	}
	cb.Spec.NamespaceSelector = nil
	if got := ClusterBudgetFromAPI(cb); got.NamespaceSelector != nil {
		t.Errorf("namespaceSelector unset = %v, want nil", got.NamespaceSelector)
	}
	b := &v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "b"}}
	b.Spec.PodSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}
	got = BudgetFromAPI(b)
	if got.SpecError == nil || got.PodSelector == nil || !got.PodSelector.Empty() {
		t.Errorf("bad podSelector: SpecError %v, selector %v; want an error and every pod (fail closed)", got.SpecError, got.PodSelector)
	}
}
