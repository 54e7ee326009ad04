//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testMetrics scrapes the manager as Prometheus would: with a ServiceAccount bound to
// the chart's metrics-reader ClusterRole.
func testMetrics(t *testing.T, e env, _ *podWatcher) {
	ctx := t.Context()
	url := e.inst.ManagerMetricsURL()
	if !strings.HasPrefix(url, "https://") {
		t.Fatalf("manager metrics at %s, want HTTPS (manager.metricsSecure defaults to true)", url)
	}
	code, _, err := scrape(ctx, url, "")
	fatalIf(t, err, "scraping without credentials")
	if code != 401 && code != 403 {
		t.Errorf("scraping without credentials: HTTP %d, want 401 or 403", code)
	}
	ns := e.inst.Namespace()
	fatalIf(t, e.c.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-reads-quotagate"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: e.inst.Release() + "-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "prometheus"}},
	}), "binding the metrics-reader ClusterRole")
	promCfg, err := e.cluster.ServiceAccountConfig(ctx, ns, "prometheus", 0)
	fatalIf(t, err, "getting prometheus's credentials")

	var samples map[string]string
	waitFor(t, "the manager to serve metrics to the metrics reader", 30*time.Second, func() (bool, string) {
		code, s, err := scrape(ctx, url, promCfg.BearerToken)
		samples = s
		return err == nil && code == 200, fmt.Sprintf("HTTP %d, %v", code, err)
	})
	// The queue snapshot beside the metrics names every tenant's pods: the metrics
	// reader is refused, an operator bound to the debug-queues-reader role reads it.
	debugURL := strings.TrimSuffix(url, "/metrics") + "/debug/queues"
	if code, _, err := scrape(ctx, debugURL, promCfg.BearerToken); err != nil || code != 403 {
		t.Errorf("GET %s as the metrics reader: HTTP %d, %v; want 403", debugURL, code, err)
	}
	fatalIf(t, e.c.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "operator-reads-queues"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: e.inst.Release() + "-debug-queues-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "operator"}},
	}), "binding the debug-queues-reader ClusterRole")
	opCfg, err := e.cluster.ServiceAccountConfig(ctx, ns, "operator", 0)
	fatalIf(t, err, "getting the operator's credentials")
	waitFor(t, "the manager to serve /debug/queues to the operator", 30*time.Second, func() (bool, string) {
		code, _, err := scrape(ctx, debugURL, opCfg.BearerToken)
		return err == nil && code == 200, fmt.Sprintf("HTTP %d, %v", code, err)
	})
	want := float64(len(burst()))
	if got, ok := sumOf(samples, "quotagate_queue_incoming_pods_total"); !ok || got < want {
		t.Errorf("quotagate_queue_incoming_pods_total = %v (present: %v), want at least %v", got, ok, want)
	}
	if got, ok := sumOf(samples, "quotagate_pod_wait_seconds_count"); !ok || got != want {
		t.Errorf("quotagate_pod_wait_seconds_count = %v (present: %v), want %v (one per admitted pod)", got, ok, want)
	}
	if got, ok := sumOf(samples, "quotagate_budget_admissions_total"); !ok || got != want {
		t.Errorf("quotagate_budget_admissions_total = %v (present: %v), want %v (the journey's one Budget admitted every pod)", got, ok, want)
	}
}
