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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
)

const (
	defaultRelease   = "quotagate"
	defaultNamespace = "quotagate-system"
)

func TestLint(t *testing.T) {
	kv, err := common.ParseKubeVersion(kubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	for name, values := range lintMatrix() {
		t.Run(name, func(t *testing.T) {
			result := lint.RunAll(chartDir(t), values, defaultNamespace, lint.WithKubeVersion(kv))
			for _, m := range result.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("lint: %v", m)
				}
			}
		})
	}
}

// Every object of the built-in kinds must decode strictly, and every namespaced object must
// land in the release namespace.
func TestRenderedObjectsAreValid(t *testing.T) {
	m := mustInstall(t, defaultRelease, defaultNamespace, map[string]any{
		"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true}},
	})
	clusterScoped := []string{"CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "APIService",
		"MutatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
		"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"}
	// Delegated authentication reads kube-apiserver's extension-apiserver-authentication
	// ConfigMap, which lives in kube-system, so its RoleBinding must too.
	elsewhere := map[string]string{"RoleBinding quotagate-visibility-auth-reader": "kube-system"}
	for _, o := range append(append([]*unstructured.Unstructured{}, m.Objects...), m.Hooks...) {
		switch o.GetAPIVersion() {
		case "cert-manager.io/v1", "monitoring.coreos.com/v1":
		default:
			if _, err := decodeStrict(o); err != nil {
				t.Errorf("%s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
		if slices.Contains(clusterScoped, o.GetKind()) {
			if o.GetNamespace() != "" {
				t.Errorf("cluster-scoped %s %s has namespace %q", o.GetKind(), o.GetName(), o.GetNamespace())
			}
		} else if want, ok := elsewhere[o.GetKind()+" "+o.GetName()]; ok {
			if o.GetNamespace() != want {
				t.Errorf("%s %s is in namespace %q, want %q", o.GetKind(), o.GetName(), o.GetNamespace(), want)
			}
		} else if o.GetNamespace() != defaultNamespace {
			t.Errorf("%s %s is in namespace %q, want %q", o.GetKind(), o.GetName(), o.GetNamespace(), defaultNamespace)
		}
		if got := o.GetLabels()["app.kubernetes.io/instance"]; got != defaultRelease {
			t.Errorf("%s %s: label app.kubernetes.io/instance = %q, want %q", o.GetKind(), o.GetName(), got, defaultRelease)
		}
	}
}

func TestWebhookConfiguration(t *testing.T) {
	m := mustInstall(t, defaultRelease, defaultNamespace, nil)
	var mwc admissionregistrationv1.MutatingWebhookConfiguration
	into(t, m.find(t, "MutatingWebhookConfiguration", ""), &mwc)
	if len(mwc.Webhooks) != 1 {
		t.Fatalf("want one webhook, got %d", len(mwc.Webhooks))
	}
	wh := mwc.Webhooks[0]

	want := admissionregistrationv1.MutatingWebhook{
		Name:                    "gate.quotagate.io",
		AdmissionReviewVersions: []string{"v1"},
		ClientConfig: admissionregistrationv1.WebhookClientConfig{
			Service: &admissionregistrationv1.ServiceReference{
				Name: "quotagate-webhook", Namespace: defaultNamespace,
				Path: ptr.To("/mutate-v1-pod"), Port: ptr.To[int32](443),
			},
		},
		FailurePolicy:      ptr.To(admissionregistrationv1.Fail),
		MatchPolicy:        ptr.To(admissionregistrationv1.Equivalent),
		ReinvocationPolicy: ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy),
		SideEffects:        ptr.To(admissionregistrationv1.SideEffectClassNone),
		TimeoutSeconds:     ptr.To[int32](10),
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"},
			},
		}},
		NamespaceSelector: selector(
			requirement("quotagate.io/enabled", "In", "true"),
			requirement("kubernetes.io/metadata.name", "NotIn", "kube-system", defaultNamespace),
		),
		MatchConditions: wh.MatchConditions, // compared with config/default below
	}
	if diff := cmp.Diff(want, wh); diff != "" {
		t.Errorf("webhook (-want +got):\n%s", diff)
	}
	if len(wh.MatchConditions) == 0 {
		t.Error("no matchConditions: bound and mirror pods would reach the webhook")
	}

	// The kustomize install has the same webhook (timeoutSeconds included), but for the
	// Service port it leaves to the default (443).
	fromConfig := configWebhook(t).Webhooks[0]
	if fromConfig.ClientConfig.Service != nil && fromConfig.ClientConfig.Service.Port == nil {
		fromConfig.ClientConfig.Service.Port = ptr.To[int32](443)
	}
	if diff := cmp.Diff(fromConfig, wh, celWhitespace); diff != "" {
		t.Errorf("webhook differs from config/default's (-config +chart):\n%s", diff)
	}
}

func TestNoCABundleAnywhere(t *testing.T) {
	m := mustInstall(t, defaultRelease, defaultNamespace, nil)
	for _, o := range append(append([]*unstructured.Unstructured{}, m.Objects...), m.Hooks...) {
		raw, err := o.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), "caBundle") {
			t.Errorf("%s %s templates a caBundle; cert-manager's CA injector owns it", o.GetKind(), o.GetName())
		}
	}
}

func TestWebhookValues(t *testing.T) {
	m := mustInstall(t, defaultRelease, defaultNamespace, map[string]any{
		"webhook": map[string]any{"failurePolicy": "Ignore", "timeoutSeconds": 3},
	})
	var mwc admissionregistrationv1.MutatingWebhookConfiguration
	into(t, m.find(t, "MutatingWebhookConfiguration", ""), &mwc)
	if got := *mwc.Webhooks[0].FailurePolicy; got != admissionregistrationv1.Ignore {
		t.Errorf("failurePolicy = %s, want Ignore", got)
	}
	if got := *mwc.Webhooks[0].TimeoutSeconds; got != 3 {
		t.Errorf("timeoutSeconds = %d, want 3", got)
	}
}

// A wrong value must fail the install with a message that names it.
func TestSchemaRejectsBadValues(t *testing.T) {
	for name, tc := range map[string]struct {
		values   map[string]any
		wantPath string
	}{
		"negative webhook replicas":          {map[string]any{"webhook": map[string]any{"replicas": -1}}, "/webhook/replicas"},
		"zero manager replicas":              {map[string]any{"manager": map[string]any{"replicas": 0}}, "/manager/replicas"},
		"fractional replicas":                {map[string]any{"manager": map[string]any{"replicas": 1.5}}, "/manager/replicas"},
		"failurePolicy Sometimes":            {map[string]any{"webhook": map[string]any{"failurePolicy": "Sometimes"}}, "/webhook/failurePolicy"},
		"zero qps":                           {map[string]any{"manager": map[string]any{"kubeAPIQPS": 0}}, "/manager/kubeAPIQPS"},
		"negative burst":                     {map[string]any{"manager": map[string]any{"kubeAPIBurst": -5}}, "/manager/kubeAPIBurst"},
		"zero workers":                       {map[string]any{"manager": map[string]any{"workers": 0}}, "/manager/workers"},
		"holdUncovered as a string":          {map[string]any{"manager": map[string]any{"holdUncovered": "yes"}}, "/manager/holdUncovered"},
		"image repository a number":          {map[string]any{"image": map[string]any{"repository": 5}}, "/image/repository"},
		"image tag a number":                 {map[string]any{"image": map[string]any{"tag": 1.2}}, "/image/tag"},
		"unknown pull policy":                {map[string]any{"image": map[string]any{"pullPolicy": "Sometimes"}}, "/image/pullPolicy"},
		"timeout above 30 seconds":           {map[string]any{"webhook": map[string]any{"timeoutSeconds": 31}}, "/webhook/timeoutSeconds"},
		"misspelt value":                     {map[string]any{"webhook": map[string]any{"replica": 3}}, "/webhook"},
		"unknown log level":                  {map[string]any{"manager": map[string]any{"logLevel": "verbose"}}, "/manager/logLevel"},
		"allowed user with a quote":          {map[string]any{"guard": map[string]any{"extraAllowedUsers": []any{"o'brien"}}}, "/guard/extraAllowedUsers/0"},
		"exempt DaemonSet without namespace": {map[string]any{"admission": map[string]any{"exemptDaemonSets": []any{"node-exporter"}}}, "/admission/exemptDaemonSets/0"},
		"exempt DaemonSet with a quote":      {map[string]any{"admission": map[string]any{"exemptDaemonSets": []any{"ops/a'] || true || ['"}}}, "/admission/exemptDaemonSets/0"},
		"issuer kind unknown":                {map[string]any{"certManager": map[string]any{"issuerRef": map[string]any{"name": "x", "kind": "Vault"}}}, "/certManager/issuerRef/kind"},
		"negative backoffLimit":              {map[string]any{"releaseOnUninstall": map[string]any{"backoffLimit": -1}}, "/releaseOnUninstall/backoffLimit"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := install(defaultRelease, defaultNamespace, tc.values)
			if err == nil {
				t.Fatal("install succeeded, want a schema error")
			}
			if !strings.Contains(err.Error(), "values don't meet the specifications of the schema") ||
				!strings.Contains(err.Error(), "'"+tc.wantPath+"'") {
				t.Errorf("error does not name %s:\n%v", tc.wantPath, err)
			}
		})
	}
}

func TestSchemaAcceptsGoodValues(t *testing.T) {
	for name, values := range map[string]map[string]any{
		"failurePolicy Ignore":   {"webhook": map[string]any{"failurePolicy": "Ignore"}},
		"three managers":         {"manager": map[string]any{"replicas": 3}},
		"fractional qps":         {"manager": map[string]any{"kubeAPIQPS": 7.5}},
		"numeric log level":      {"manager": map[string]any{"logLevel": 4}, "webhook": map[string]any{"logLevel": "debug"}},
		"a pinned image":         {"image": map[string]any{"repository": "registry.example/qg", "tag": "v0.1.0-rc.1", "pullPolicy": "Always"}},
		"percentage PDB":         {"webhook": map[string]any{"podDisruptionBudget": map[string]any{"minAvailable": "50%"}}},
		"global from a parent":   {"global": map[string]any{"imageRegistry": "x"}},
		"extra allowed users":    {"guard": map[string]any{"extraAllowedUsers": []any{"system:serviceaccount:ops:breakglass"}}},
		"exempt DaemonSets":      {"admission": map[string]any{"exemptDaemonSets": []any{"monitoring/node-exporter", "ops/agent.v2"}}},
		"no pre-delete hook":     {"releaseOnUninstall": map[string]any{"enabled": false}},
		"plain-http metrics":     {"manager": map[string]any{"metricsSecure": false}},
		"crds managed elsewhere": {"crds": map[string]any{"install": false}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := install(defaultRelease, defaultNamespace, values); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestKubeVersionRequirement(t *testing.T) {
	chrt := loadChart(t)
	if got, want := chrt.Metadata.KubeVersion, ">=1.30.0-0"; got != want {
		t.Errorf("kubeVersion = %q, want %q", got, want)
	}
	if _, err := installOn("v1.29.9", nil); err == nil || !strings.Contains(err.Error(), "kubeVersion") {
		t.Errorf("install on v1.29.9: err = %v, want a kubeVersion incompatibility", err)
	}
	if _, err := installOn("v1.30.0", nil); err != nil {
		t.Errorf("install on v1.30.0: %v", err)
	}
}

func selector(reqs ...metav1.LabelSelectorRequirement) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: reqs}
}

func requirement(key string, op metav1.LabelSelectorOperator, values ...string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: values}
}
