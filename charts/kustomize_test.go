package charts_test

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/tools/chartrender"
)

// kustomizeBuild runs `kubectl kustomize` on a directory of config/, as a user without Helm
// would, and decodes its output. kubectl is part of the development machine; a missing
// kubectl fails the test rather than skipping it.
func kustomizeBuild(t testing.TB, dir string) manifests {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is needed to build %s with kustomize: %v", dir, err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(kubectl, "kustomize", filepath.Join(repoRoot(t), dir))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr.String())
	}
	objs, err := chartrender.DecodeAll(stdout.String())
	if err != nil {
		t.Fatalf("decoding kubectl kustomize %s: %v", dir, err)
	}
	return manifests{Objects: objs}
}

// configWebhook is the MutatingWebhookConfiguration that config/default installs.
func configWebhook(t testing.TB) admissionregistrationv1.MutatingWebhookConfiguration {
	t.Helper()
	var mwc admissionregistrationv1.MutatingWebhookConfiguration
	into(t, kustomizeBuild(t, "config/default").find(t, "MutatingWebhookConfiguration", ""), &mwc)
	if len(mwc.Webhooks) != 1 {
		t.Fatalf("config/default: want one webhook, got %d", len(mwc.Webhooks))
	}
	return mwc
}

// config/default builds, and installs the same objects as the chart does with
// certManager.enabled=true for release "quotagate" in quotagate-system (but for what only
// Helm can do: the uninstall hook, and the optional ServiceMonitors). Its certificate
// always comes from cert-manager: the chart's default, the manager's own, is not in
// config/.
func TestKustomizeDefaultMatchesChart(t *testing.T) {
	cfg := kustomizeBuild(t, "config/default")
	// The chart's README says: the release with certManager.enabled=true and the webhook.
	chart := mustInstall(t, defaultRelease, defaultNamespace, map[string]any{
		"certManager": map[string]any{"enabled": true},
		"admission":   map[string]any{"mode": "webhook"},
	})

	key := func(o *unstructured.Unstructured) string {
		return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
	}
	var fromConfig, fromChart []string
	for _, o := range cfg.Objects {
		if o.GetKind() == "Namespace" {
			continue // Helm leaves the release namespace to `helm install --create-namespace`
		}
		fromConfig = append(fromConfig, key(o))
	}
	for _, o := range chart.Objects {
		fromChart = append(fromChart, key(o))
	}
	slices.Sort(fromConfig)
	slices.Sort(fromChart)
	if diff := cmp.Diff(fromChart, fromConfig); diff != "" {
		t.Errorf("objects (-chart +config/default):\n%s", diff)
	}

	// The pieces that must agree field by field: the whole pod spec of each Deployment
	// (args, ports, securityContext, probes, priorityClassName, resources, affinity, ...);
	// the webhook (failurePolicy, timeoutSeconds, namespaceSelector, ...) is compared in
	// TestWebhookConfiguration.
	for _, name := range []string{"quotagate-webhook", "quotagate-manager"} {
		var want, got appsv1.Deployment
		into(t, chart.find(t, "Deployment", name), &want)
		into(t, cfg.find(t, "Deployment", name), &got)
		if diff := cmp.Diff(want.Spec.Template.Spec, got.Spec.Template.Spec); diff != "" {
			t.Errorf("Deployment %s pod spec (-chart +config/default):\n%s", name, diff)
		}
		if diff := cmp.Diff(want.Spec.Selector, got.Spec.Selector); diff != "" {
			t.Errorf("Deployment %s selector (-chart +config/default):\n%s", name, diff)
		}
		if diff := cmp.Diff(want.Spec.Replicas, got.Spec.Replicas); diff != "" {
			t.Errorf("Deployment %s replicas (-chart +config/default):\n%s", name, diff)
		}
	}
	for _, kind := range []string{"Service", "PodDisruptionBudget", "Certificate", "Issuer", "Role", "RoleBinding", "ClusterRoleBinding", "ClusterRole"} {
		for _, o := range (manifests{Objects: chart.Objects}).all(kind) { // hooks apart
			c := cfg.find(t, kind, o.GetName())
			for _, field := range []string{"spec", "rules", "roleRef", "subjects"} {
				if diff := cmp.Diff(o.Object[field], c.Object[field]); diff != "" {
					t.Errorf("%s %s %s (-chart +config/default):\n%s", kind, o.GetName(), field, diff)
				}
			}
		}
	}
	if got, want := configWebhook(t).Annotations["cert-manager.io/inject-ca-from"], "quotagate-system/quotagate-ca"; got != want {
		t.Errorf("config/default inject-ca-from = %q, want %q", got, want)
	}
	for _, o := range cfg.Objects {
		raw, _ := o.MarshalJSON()
		if strings.Contains(string(raw), "caBundle") {
			t.Errorf("config/default: %s %s sets a caBundle", o.GetKind(), o.GetName())
		}
	}
}

// The samples are valid Budgets and ClusterBudgets (strictly: no unknown fields).
func TestSamplesDecode(t *testing.T) {
	samples := kustomizeBuild(t, "config/samples")
	if len(samples.Objects) == 0 {
		t.Fatal("no samples")
	}
	for _, o := range samples.Objects {
		var out any
		switch o.GetKind() {
		case "Budget":
			out = &v1alpha1.Budget{}
		case "ClusterBudget":
			out = &v1alpha1.ClusterBudget{}
		default:
			t.Fatalf("unexpected sample kind %s", o.GetKind())
		}
		if o.GetAPIVersion() != v1alpha1.GroupVersion.String() {
			t.Errorf("%s %s: apiVersion %s, want %s", o.GetKind(), o.GetName(), o.GetAPIVersion(), v1alpha1.GroupVersion)
		}
		into(t, o, out)
	}
}
