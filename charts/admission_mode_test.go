package charts_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/quotagate/quotagate/tools/chartrender"
)

// mapVersion is what `.Capabilities.APIVersions` holds on a cluster that serves
// MutatingAdmissionPolicy (Kubernetes 1.36 and later).
const mapVersion = "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy"

// webhookObjects are the objects only the webhook needs, as "Kind name".
var webhookObjects = []string{
	"Deployment quotagate-webhook", "Service quotagate-webhook", "ServiceAccount quotagate-webhook",
	"MutatingWebhookConfiguration quotagate-webhook", "PodDisruptionBudget quotagate-webhook",
}

// policyObjects are the objects only the policy needs.
var policyObjects = []string{
	"MutatingAdmissionPolicy quotagate-gate", "MutatingAdmissionPolicyBinding quotagate-gate",
	"ValidatingAdmissionPolicy quotagate-bound-pod-guard", "ValidatingAdmissionPolicyBinding quotagate-bound-pod-guard",
}

// installAPI renders the default release like `helm install --dry-run=client
// --api-versions ...`, as Helm sees a cluster that serves apiVersions.
func installAPI(values map[string]any, apiVersions ...string) (manifests, error) {
	return render(defaultRelease, defaultNamespace, chartrender.Cluster{KubeVersion: kubeVersion, APIVersions: apiVersions}, values)
}

func has(m manifests, kindName string) bool {
	kind, name, _ := strings.Cut(kindName, " ")
	for _, o := range m.all(kind) {
		if o.GetName() == name {
			return true
		}
	}
	return false
}

// admission.mode decides which admission step is rendered; auto follows the API server.
func TestAdmissionModes(t *testing.T) {
	tests := map[string]struct {
		mode        string
		apiVersions []string
		wantPolicy  bool
	}{
		"auto on a cluster that serves MutatingAdmissionPolicy renders the policy": {mode: "auto", apiVersions: []string{mapVersion}, wantPolicy: true},
		"auto elsewhere renders the webhook":                                       {mode: "auto"},
		"the default is auto":                                                      {apiVersions: []string{mapVersion}, wantPolicy: true},
		"policy forces the policy":                                                 {mode: "policy", wantPolicy: true},
		"webhook forces the webhook where the policy is served":                    {mode: "webhook", apiVersions: []string{mapVersion}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			values := map[string]any{}
			if tc.mode != "" {
				values["admission"] = map[string]any{"mode": tc.mode}
			}
			m, err := installAPI(values, tc.apiVersions...)
			if err != nil {
				t.Fatalf("rendering: %v", err)
			}
			for _, o := range policyObjects {
				if has(m, o) != tc.wantPolicy {
					t.Errorf("%s rendered: %v, want %v", o, has(m, o), tc.wantPolicy)
				}
			}
			for _, o := range webhookObjects {
				if has(m, o) == tc.wantPolicy {
					t.Errorf("%s rendered: %v, want %v", o, has(m, o), !tc.wantPolicy)
				}
			}
		})
	}
}

// In mode policy without the visibility API nothing serves TLS: neither the certificate
// Secret nor the manager's rotator is rendered.
func TestPolicyModeWithoutVisibilityHasNoCertificate(t *testing.T) {
	m, err := installAPI(map[string]any{"admission": map[string]any{"mode": "policy"}, "certManager": map[string]any{"enabled": false}, "visibility": map[string]any{"enabled": false}})
	if err != nil {
		t.Fatalf("rendering: %v", err)
	}
	for _, s := range m.all("Secret") {
		t.Errorf("Secret %s rendered in mode policy", s.GetName())
	}
	var d appsv1.Deployment
	into(t, m.find(t, "Deployment", "quotagate-manager"), &d)
	c := d.Spec.Template.Spec.Containers[0]
	for _, a := range c.Args {
		if strings.HasPrefix(a, "--webhook-") {
			t.Errorf("manager arg %s in mode policy", a)
		}
	}
	if len(c.VolumeMounts) != 0 || len(d.Spec.Template.Spec.Volumes) != 0 {
		t.Errorf("manager volumes %v, mounts %v; want none in mode policy", d.Spec.Template.Spec.Volumes, c.VolumeMounts)
	}
}

// In mode policy the visibility API still needs a serving certificate: it names the
// visibility Service only, and the rotator injects its CA into the APIService alone.
func TestPolicyModeCertificateIsTheVisibilityAPIs(t *testing.T) {
	visibilityNames := []string{"quotagate-visibility.quotagate-system.svc", "quotagate-visibility.quotagate-system.svc.cluster.local"}
	t.Run("cert-manager", func(t *testing.T) {
		m, err := installAPI(map[string]any{"admission": map[string]any{"mode": "policy"}, "certManager": map[string]any{"enabled": true}})
		if err != nil {
			t.Fatalf("rendering: %v", err)
		}
		names, _, _ := unstructured.NestedStringSlice(m.find(t, "Certificate", "quotagate-webhook-cert").Object, "spec", "dnsNames")
		if diff := cmp.Diff(visibilityNames, names); diff != "" {
			t.Errorf("serving certificate dnsNames in mode policy (-want +got):\n%s", diff)
		}
	})
	t.Run("self-managed", func(t *testing.T) {
		m, err := installAPI(map[string]any{"admission": map[string]any{"mode": "policy"}, "certManager": map[string]any{"enabled": false}})
		if err != nil {
			t.Fatalf("rendering: %v", err)
		}
		var d appsv1.Deployment
		into(t, m.find(t, "Deployment", "quotagate-manager"), &d)
		args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " ")
		for _, want := range []string{"--webhook-cert-secret=quotagate-webhook-internal-tls", "--visibility-apiservice=v1alpha1.visibility.quotagate.io",
			"--webhook-cert-extra-dns-names=" + strings.Join(visibilityNames, ",")} {
			if !strings.Contains(args, want) {
				t.Errorf("manager args %q lack %s", args, want)
			}
		}
		for _, unwanted := range []string{"--webhook-configuration", "--webhook-service"} {
			if strings.Contains(args, unwanted) {
				t.Errorf("manager args %q name %s, which mode policy does not have", args, unwanted)
			}
		}
		var role rbacv1.ClusterRole
		into(t, m.find(t, "ClusterRole", "quotagate-manager-cert-rotator"), &role)
		var resources []string
		for _, r := range role.Rules {
			resources = append(resources, r.Resources...)
		}
		if diff := cmp.Diff([]string{"apiservices"}, resources); diff != "" {
			t.Errorf("the rotator's ClusterRole in mode policy (-want +got):\n%s", diff)
		}
	})
}

// The chart's policy is config/policy/admission's, field by field, for release quotagate
// in quotagate-system; its skip conditions are the webhook's, and so the webhook's handler's
// (pkg/admission checks those against SkipReasonFor).
func TestPolicyMatchesKustomizeAndWebhook(t *testing.T) {
	chart, err := installAPI(map[string]any{"admission": map[string]any{"mode": "policy"}})
	if err != nil {
		t.Fatalf("rendering: %v", err)
	}
	cfg := kustomizeBuild(t, "config/policy/admission")
	// kustomize re-folds the multi-line CEL differently; CEL ignores the white space.
	spaces := cmp.Transformer("spaces", func(s string) string { return strings.Join(strings.Fields(s), " ") })
	for _, o := range policyObjects {
		kind, name, _ := strings.Cut(o, " ")
		if diff := cmp.Diff(chart.find(t, kind, name).Object["spec"], cfg.find(t, kind, name).Object["spec"], spaces); diff != "" {
			t.Errorf("%s spec (-chart +config/policy/admission):\n%s", o, diff)
		}
	}

	var mwc admissionregistrationv1.MutatingWebhookConfiguration
	into(t, mustInstall(t, defaultRelease, defaultNamespace, map[string]any{"admission": map[string]any{"mode": "webhook"}}).
		find(t, "MutatingWebhookConfiguration", "quotagate-webhook"), &mwc)
	var policy admissionregistrationv1.MutatingAdmissionPolicy
	into(t, chart.find(t, "MutatingAdmissionPolicy", "quotagate-gate"), &policy)
	var binding admissionregistrationv1.MutatingAdmissionPolicyBinding
	into(t, chart.find(t, "MutatingAdmissionPolicyBinding", "quotagate-gate"), &binding)
	webhook := mwc.Webhooks[0]
	// The policy has one condition more: a bound pod goes to the bound-pod guard.
	if i := slices.IndexFunc(policy.Spec.MatchConditions, func(c admissionregistrationv1.MatchCondition) bool { return c.Name == "not-bound" }); i < 0 {
		t.Errorf("policy has no not-bound condition: %v", policy.Spec.MatchConditions)
	} else if diff := cmp.Diff(webhook.MatchConditions, slices.Delete(slices.Clone(policy.Spec.MatchConditions), i, i+1)); diff != "" {
		t.Errorf("matchConditions (-webhook +policy):\n%s", diff)
	}
	if diff := cmp.Diff(webhook.NamespaceSelector, binding.Spec.MatchResources.NamespaceSelector); diff != "" {
		t.Errorf("namespaceSelector (-webhook +policy binding):\n%s", diff)
	}
	if got, want := string(*policy.Spec.FailurePolicy), string(*webhook.FailurePolicy); got != want {
		t.Errorf("failurePolicy %s, want the webhook's %s", got, want)
	}
	if got := policy.Spec.ReinvocationPolicy; got != admissionregistrationv1.IfNeededReinvocationPolicy {
		t.Errorf("reinvocationPolicy %s, want IfNeeded", got)
	}
}

// helm lint is clean in each mode.
func TestLintAdmissionModes(t *testing.T) {
	kv, err := common.ParseKubeVersion(kubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"auto", "policy", "webhook"} {
		t.Run(mode, func(t *testing.T) {
			result := lint.RunAll(chartDir(t), map[string]any{"admission": map[string]any{"mode": mode}}, defaultNamespace, lint.WithKubeVersion(kv))
			for _, msg := range result.Messages {
				if msg.Severity >= support.WarningSev {
					t.Errorf("lint: %v", msg)
				}
			}
		})
	}
	if _, err := install(defaultRelease, defaultNamespace, map[string]any{"admission": map[string]any{"mode": "both"}}); err == nil {
		t.Error("admission.mode=both was accepted, want the schema to refuse it")
	}
}

// The uninstall hook takes out the admission step of the release's mode before it
// releases gated pods, and may delete that object only.
func TestReleaseHookTakesOutTheAdmissionStep(t *testing.T) {
	tests := map[string]struct {
		mode, wantArg, wantResource, wantName string
	}{
		"policy":  {"policy", "--admission-policy-binding=quotagate-gate", "mutatingadmissionpolicybindings", "quotagate-gate"},
		"webhook": {"webhook", "--webhook-configuration=quotagate-webhook", "mutatingwebhookconfigurations", "quotagate-webhook"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m, err := installAPI(map[string]any{"admission": map[string]any{"mode": tc.mode}})
			if err != nil {
				t.Fatalf("rendering: %v", err)
			}
			var job batchv1.Job
			into(t, m.find(t, "Job", "quotagate-release-gated-pods"), &job)
			if args := job.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, tc.wantArg) {
				t.Errorf("hook args %v, want %s", args, tc.wantArg)
			}
			var role rbacv1.ClusterRole
			into(t, m.find(t, "ClusterRole", "quotagate-release-hook"), &role)
			if len(role.Rules) != 1 || !slices.Equal(role.Rules[0].Resources, []string{tc.wantResource}) ||
				!slices.Equal(role.Rules[0].ResourceNames, []string{tc.wantName}) || !slices.Equal(role.Rules[0].Verbs, []string{"delete"}) {
				t.Errorf("hook rules %+v, want delete on %s %s only", role.Rules, tc.wantResource, tc.wantName)
			}
		})
	}
}
