package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/pkg/quota/controller"
)

// A ClusterBudget whose namespaceSelector gets past the API server but does not parse (a
// value that is not a label value: CEL cannot afford to check label syntax) fails closed:
// the pods of the namespaces it might cover stay gated with a Waiting event that names
// it, its Ready condition is False with InvalidSelector, and pods it cannot cover are not
// held. Fixed, it admits them.
func TestInvalidSelectorFailsClosed(t *testing.T) {
	key := fmt.Sprintf("broken-%d", nsCounter.Add(1))
	covered := newNamespace(t, true)
	other := newNamespace(t, true)
	n := &corev1.Namespace{}
	if err := admin.Get(t.Context(), client.ObjectKey{Name: covered}, n); err != nil {
		t.Fatal(err)
	}
	n.Labels[key] = "x"
	if err := admin.Update(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	cb := &v1alpha1.ClusterBudget{
		ObjectMeta: metav1.ObjectMeta{Name: key},
		Spec: v1alpha1.ClusterBudgetSpec{
			BudgetSpec: v1alpha1.BudgetSpec{Hard: cpu("10")},
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: key, Operator: metav1.LabelSelectorOpIn, Values: []string{"x y"}},
			}},
		},
	}
	createClusterBudgets(t, cb)
	// Uncovered pods are admitted at once, so that free shows it is not held.
	startManager(t, func(o *controller.Options) { o.HoldUncovered = false }, false)
	mustCreate(t, gatedPod(covered, "held", "1"), gatedPod(other, "free", "1"))

	ev := waitForWaitingEvent(t, covered, "held", "BudgetClosed")
	wantMsg := fmt.Sprintf("Waiting: ClusterBudget %s cannot admit pods: invalid namespaceSelector: namespaceSelector.matchExpressions[0].values[0]: Invalid value: \"x y\"", key)
	if !strings.HasPrefix(ev.Message, wantMsg) || !strings.HasSuffix(ev.Message, fmt.Sprintf("until it is fixed the budget covers the namespaces matching %q, and admits nothing", key)) {
		t.Errorf("Waiting event %q, want it to start with %q and say what the budget covers", ev.Message, wantMsg)
	}
	waitForState(t, "", key, v1alpha1.StateClosed, v1alpha1.ReasonInvalidSelector)
	ready := apimeta.FindStatusCondition(getStatus(t, "", key).Conditions, v1alpha1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || !strings.HasPrefix(ready.Message, "invalid namespaceSelector: ") {
		t.Errorf("Ready condition %+v, want False with the selector's error", ready)
	}
	testbed.Poll(t, time.Minute, "the pod no budget can cover to be admitted", func(context.Context) (bool, error) { return !isGated(t, other, "free"), nil })
	if !isGated(t, covered, "held") {
		t.Fatal("the pod the broken ClusterBudget might cover was admitted")
	}

	patch := fmt.Sprintf(`{"spec":{"namespaceSelector":{"matchExpressions":[{"key":%q,"operator":"In","values":["x"]}]}}}`, key)
	if err := admin.Patch(t.Context(), cb, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatalf("fixing the selector: %v", err)
	}
	testbed.Poll(t, time.Minute, "the held pod to be admitted once the selector is fixed", func(context.Context) (bool, error) { return !isGated(t, covered, "held"), nil })
	waitForState(t, "", key, v1alpha1.StateOpen, v1alpha1.ReasonActive)
}
