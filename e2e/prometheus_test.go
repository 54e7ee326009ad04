//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPrometheusScrapesTheManager installs the chart with its defaults (manager.metricsSecure
// on, metrics.prometheus.serviceAccount kube-prometheus-stack's) and scrapes the running
// manager as Prometheus would: over HTTPS, with a TokenRequest token of the ServiceAccount
// the chart bound to the metrics-reader ClusterRole. No other ServiceAccount gets in.
func TestPrometheusScrapesTheManager(t *testing.T) {
	began := time.Now()
	e := setUp(t)
	t.Logf("Control plane up and quotagate installed in %v", time.Since(began).Round(time.Millisecond))
	ctx := t.Context()

	url := e.inst.ManagerMetricsURL()
	if !strings.HasPrefix(url, "https://") {
		t.Fatalf("manager metrics at %s, want HTTPS (manager.metricsSecure defaults to true)", url)
	}
	// Prometheus's namespace and ServiceAccount, as kube-prometheus-stack would create them.
	fatalIf(t, e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"}}), "creating namespace monitoring")
	prometheus, err := e.cluster.ServiceAccountConfig(ctx, "monitoring", "kube-prometheus-stack-prometheus", 0)
	fatalIf(t, err, "getting Prometheus's token")
	// Another workload of the same namespace, which nobody bound to anything.
	grafana, err := e.cluster.ServiceAccountConfig(ctx, "monitoring", "grafana", 0)
	fatalIf(t, err, "getting Grafana's token")

	var samples map[string]string
	waitFor(t, "the manager to serve metrics to Prometheus's ServiceAccount", 30*time.Second, func() (bool, string) {
		code, s, err := scrape(ctx, url, prometheus.BearerToken)
		samples = s
		return err == nil && code == 200, fmt.Sprintf("HTTP %d, %v", code, err)
	})
	if !hasSampleOf(samples, "quotagate_build_info") {
		t.Errorf("the scrape has no quotagate_build_info sample (%d samples)", len(samples))
	}

	for _, tc := range []struct {
		who, token string
		want       []int
	}{
		{"an unbound ServiceAccount (monitoring/grafana)", grafana.BearerToken, []int{403}},
		{"no credentials", "", []int{401, 403}},
	} {
		code, _, err := scrape(ctx, url, tc.token)
		fatalIf(t, err, "scraping as "+tc.who)
		if !slices.Contains(tc.want, code) {
			t.Errorf("scraping as %s: HTTP %d, want %v", tc.who, code, tc.want)
		}
	}
}

// hasSampleOf reports whether samples hold a sample of metric name, with any labels.
func hasSampleOf(samples map[string]string, name string) bool {
	for k := range samples {
		if k == name || strings.HasPrefix(k, name+"{") {
			return true
		}
	}
	return false
}
