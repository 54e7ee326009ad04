package charts_test

import (
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The chart binds the metrics-reader ClusterRole to the ServiceAccount Prometheus runs as:
// kube-prometheus-stack's by default, any other by value, none when asked or when the
// metrics are plain HTTP.
func TestPrometheusBinding(t *testing.T) {
	for name, tc := range map[string]struct {
		values map[string]any
		want   []rbacv1.Subject // nil: no binding
	}{
		"default: kube-prometheus-stack": {nil, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "kube-prometheus-stack-prometheus", Namespace: "monitoring"}}},
		"kube-prometheus": {
			map[string]any{"metrics": map[string]any{"prometheus": map[string]any{"serviceAccount": map[string]any{"name": "prometheus-k8s", "namespace": "monitoring"}}}},
			[]rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus-k8s", Namespace: "monitoring"}},
		},
		"no name":            {map[string]any{"metrics": map[string]any{"prometheus": map[string]any{"serviceAccount": map[string]any{"name": ""}}}}, nil},
		"plain-http metrics": {map[string]any{"manager": map[string]any{"metricsSecure": false}}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			m := mustInstall(t, defaultRelease, defaultNamespace, tc.values)
			var found []rbacv1.ClusterRoleBinding
			for _, o := range m.all("ClusterRoleBinding") {
				var b rbacv1.ClusterRoleBinding
				into(t, o, &b)
				if b.RoleRef.Name == "quotagate-metrics-reader" {
					found = append(found, b)
				}
			}
			if tc.want == nil {
				if len(found) != 0 {
					t.Fatalf("metrics-reader bound to %v, want no binding", found[0].Subjects)
				}
				return
			}
			if len(found) != 1 {
				t.Fatalf("%d bindings of quotagate-metrics-reader, want 1", len(found))
			}
			b := found[0]
			if b.Name != "quotagate-metrics-reader-prometheus" || b.RoleRef.Kind != "ClusterRole" {
				t.Errorf("binding %s of %s %s, want quotagate-metrics-reader-prometheus of the ClusterRole", b.Name, b.RoleRef.Kind, b.RoleRef.Name)
			}
			if diff := cmp.Diff(tc.want, b.Subjects); diff != "" {
				t.Errorf("subjects (-want +got):\n%s", diff)
			}
		})
	}
	_, err := install(defaultRelease, defaultNamespace, map[string]any{
		"metrics": map[string]any{"prometheus": map[string]any{"serviceAccount": map[string]any{"name": "prom", "namespace": ""}}},
	})
	if err == nil || !strings.Contains(err.Error(), "metrics.prometheus.serviceAccount.namespace is required") {
		t.Errorf("a name without a namespace: err = %v, want the namespace required", err)
	}
}

// managerEndpoint is the one endpoint of the manager's ServiceMonitor.
func managerEndpoint(t *testing.T, values map[string]any) map[string]any {
	t.Helper()
	m := mustInstall(t, defaultRelease, defaultNamespace, values)
	sm := m.find(t, "ServiceMonitor", "quotagate-manager")
	eps, _, err := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if err != nil || len(eps) != 1 {
		t.Fatalf("manager ServiceMonitor endpoints %v (%v), want one", eps, err)
	}
	return eps[0].(map[string]any)
}

// With secure metrics, the manager's ServiceMonitor scrapes over HTTPS with Prometheus's
// token and skips verifying the self-signed certificate, unless told otherwise.
func TestServiceMonitorCarriesTokenAndTLS(t *testing.T) {
	monitor := func(extra map[string]any) map[string]any {
		sm := map[string]any{"enabled": true}
		for k, v := range extra {
			sm[k] = v
		}
		return map[string]any{"metrics": map[string]any{"serviceMonitor": sm}}
	}
	for name, tc := range map[string]struct {
		values map[string]any
		want   map[string]any
	}{
		// honorLabels: a budget's own namespace label must not become exported_namespace.
		"default": {monitor(nil), map[string]any{
			"honorLabels": true,
			"port":        "https-metrics", "path": "/metrics", "interval": "30s", "scheme": "https",
			"bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
			"tlsConfig":       map[string]any{"insecureSkipVerify": true},
		}},
		"a token from a Secret and a CA": {monitor(map[string]any{
			"authorization": map[string]any{"type": "Bearer", "credentials": map[string]any{"name": "prom-token", "key": "token"}},
			// Helm merges maps with the defaults: insecureSkipVerify is turned off, not dropped.
			"tlsConfig": map[string]any{"ca": map[string]any{"secret": map[string]any{"name": "metrics-ca", "key": "ca.crt"}},
				"serverName": "quotagate-manager-metrics.quotagate-system.svc", "insecureSkipVerify": false},
		}), map[string]any{
			"honorLabels": true,
			"port":        "https-metrics", "path": "/metrics", "interval": "30s", "scheme": "https",
			"authorization": map[string]any{"type": "Bearer", "credentials": map[string]any{"name": "prom-token", "key": "token"}},
			"tlsConfig": map[string]any{"ca": map[string]any{"secret": map[string]any{"name": "metrics-ca", "key": "ca.crt"}},
				"serverName": "quotagate-manager-metrics.quotagate-system.svc", "insecureSkipVerify": false},
		}},
		"plain-http metrics": {map[string]any{
			"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true}},
			"manager": map[string]any{"metricsSecure": false},
		}, map[string]any{"honorLabels": true, "port": "metrics", "path": "/metrics", "interval": "30s"}},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, managerEndpoint(t, tc.values)); diff != "" {
				t.Errorf("manager endpoint (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNotesSayHowPrometheusScrapes(t *testing.T) {
	notes := mustInstall(t, defaultRelease, defaultNamespace, nil).Notes
	for _, want := range []string{
		"quotagate-metrics-reader", "monitoring/kube-prometheus-stack-prometheus",
		"metrics.serviceMonitor.enabled=true", "quotagate-budget-admin", "view, edit and admin",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES.txt does not say %q:\n%s", want, notes)
		}
	}
	notes = mustInstall(t, defaultRelease, defaultNamespace, map[string]any{"manager": map[string]any{"metricsSecure": false}}).Notes
	if !strings.Contains(notes, "plain HTTP") {
		t.Errorf("NOTES.txt with metricsSecure=false does not say the metrics are plain HTTP:\n%s", notes)
	}
}

// The new values are checked like the others: a wrong one fails the install, naming it.
func TestSchemaRejectsBadRoleValues(t *testing.T) {
	for name, tc := range map[string]struct {
		values   map[string]any
		wantPath string
	}{
		"aggregation as a string": {map[string]any{"rbac": map[string]any{"aggregateToDefaultRoles": "yes"}}, "/rbac/aggregateToDefaultRoles"},
		"misspelt rbac value":     {map[string]any{"rbac": map[string]any{"aggregate": true}}, "/rbac"},
		"unknown prometheus ServiceAccount field": {
			map[string]any{"metrics": map[string]any{"prometheus": map[string]any{"serviceAccount": map[string]any{"account": "prom"}}}},
			"/metrics/prometheus/serviceAccount",
		},
		"tlsConfig as a string": {map[string]any{"metrics": map[string]any{"serviceMonitor": map[string]any{"tlsConfig": "insecure"}}}, "/metrics/serviceMonitor/tlsConfig"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := install(defaultRelease, defaultNamespace, tc.values)
			if err == nil {
				t.Fatal("install succeeded, want a schema error")
			}
			if !strings.Contains(err.Error(), "'"+tc.wantPath+"'") {
				t.Errorf("error does not name %s:\n%v", tc.wantPath, err)
			}
		})
	}
}

// helm lint is clean with secure metrics scraped through a ServiceMonitor, a custom
// Prometheus, a token from a Secret and the aggregation off.
func TestLintRoleValues(t *testing.T) {
	kv, err := common.ParseKubeVersion(kubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{
		"rbac": map[string]any{"aggregateToDefaultRoles": false},
		"metrics": map[string]any{
			"serviceMonitor": map[string]any{
				"enabled":       true,
				"labels":        map[string]any{"release": "kube-prometheus-stack"},
				"authorization": map[string]any{"type": "Bearer", "credentials": map[string]any{"name": "prom-token", "key": "token"}},
			},
			"prometheus": map[string]any{"serviceAccount": map[string]any{"name": "prometheus-k8s", "namespace": "monitoring"}},
		},
	}
	for _, m := range lint.RunAll(chartDir(t), values, defaultNamespace, lint.WithKubeVersion(kv)).Messages {
		if m.Severity >= support.WarningSev {
			t.Errorf("lint: %v", m)
		}
	}
}
