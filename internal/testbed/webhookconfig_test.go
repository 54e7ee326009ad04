package testbed

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The configuration tests register is the one kustomize ships: the generated webhook
// with the patch's opt-in selector, match conditions and failure policy.
func TestShippedWebhookConfiguration(t *testing.T) {
	mwc, err := ShippedWebhookConfiguration(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if len(mwc.Webhooks) != 1 {
		t.Fatalf("%d webhooks, want 1", len(mwc.Webhooks))
	}
	w := mwc.Webhooks[0]
	if w.Name != "gate.quotagate.io" {
		t.Errorf("webhook %q, want gate.quotagate.io", w.Name)
	}
	optIn := metav1.LabelSelectorRequirement{Key: "quotagate.io/enabled", Operator: metav1.LabelSelectorOpIn, Values: []string{"true"}}
	if w.NamespaceSelector == nil || len(w.NamespaceSelector.MatchExpressions) == 0 {
		t.Fatalf("namespaceSelector %+v, want the opt-in label first", w.NamespaceSelector)
	}
	if diff := cmp.Diff(optIn, w.NamespaceSelector.MatchExpressions[0]); diff != "" {
		t.Errorf("namespaceSelector's first requirement (-want +got):\n%s", diff)
	}
	if len(w.MatchConditions) == 0 {
		t.Error("no matchConditions: webhook_patch.yaml was not applied")
	}
	if w.FailurePolicy == nil || *w.FailurePolicy != admissionregistrationv1.Fail {
		t.Errorf("failurePolicy %v, want Fail", w.FailurePolicy)
	}

	if _, err := ShippedWebhookConfiguration(t.TempDir()); err == nil || !strings.Contains(err.Error(), "manifests.yaml") {
		t.Errorf("a root without config/webhook: error %v, want one naming manifests.yaml", err)
	}
}
