package charts_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// fullname is the chart's quotagate.fullname for a release without overrides.
func fullname(release string) string {
	if strings.Contains(release, "quotagate") {
		return release
	}
	return release + "-quotagate"
}

// The chart's resize guard is config/policy's, bound in the namespaces the release's
// webhook gates: the pkg/admission tests run config/policy's on a real API server.
func TestResizeGuardMatchesConfigPolicy(t *testing.T) {
	cfg := kustomizeBuild(t, "config/policy")
	wantPolicy, wantBinding := cfg.policy(t, "quotagate-resize-guard")
	if wantBinding.Spec.PolicyName != wantPolicy.Name {
		t.Errorf("config/policy: binding names policy %q, want %q", wantBinding.Spec.PolicyName, wantPolicy.Name)
	}

	for name, tc := range map[string]struct{ release, namespace string }{
		"default release": {release: defaultRelease, namespace: defaultNamespace},
		"another release": {release: "acme", namespace: "batch-system"},
	} {
		t.Run(name, func(t *testing.T) {
			m := mustInstall(t, tc.release, tc.namespace, nil)
			policy, binding := m.policy(t, fullname(tc.release)+"-resize-guard")
			var mwc admissionregistrationv1.MutatingWebhookConfiguration
			into(t, m.find(t, "MutatingWebhookConfiguration", fullname(tc.release)+"-webhook"), &mwc)

			if diff := cmp.Diff(wantPolicy.Spec, policy.Spec, celWhitespace); diff != "" {
				t.Errorf("policy spec (-config +chart):\n%s", diff)
			}
			want := wantBinding.Spec.DeepCopy()
			want.PolicyName = policy.Name
			want.MatchResources.NamespaceSelector.MatchExpressions[1].Values = []string{"kube-system", tc.namespace}
			if diff := cmp.Diff(*want, binding.Spec); diff != "" {
				t.Errorf("binding spec (-want +chart):\n%s", diff)
			}
			// Resizes are guarded exactly where the webhook gates new pods.
			if diff := cmp.Diff(mwc.Webhooks[0].NamespaceSelector, binding.Spec.MatchResources.NamespaceSelector); diff != "" {
				t.Errorf("binding namespaceSelector differs from the webhook's (-webhook +binding):\n%s", diff)
			}
		})
	}
}
