package charts_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/quotagate/quotagate/internal/version"
	"github.com/quotagate/quotagate/pkg/admission"
	"github.com/quotagate/quotagate/pkg/quota/controller"
)

// exportedRegistries are the registries of what the binaries serve: quotagate's own
// metrics, built as the manager and the webhook build them, and controller-runtime's
// registry with its leader-election, webhook, workqueue, Go and process collectors.
func exportedRegistries(t *testing.T) []prometheus.Registerer {
	t.Helper()
	reg := prometheus.NewRegistry()
	opts := controller.DefaultOptions()
	opts.Registerer = reg
	if _, err := controller.New(opts); err != nil {
		t.Fatal(err)
	}
	if _, err := admission.NewMetrics(reg); err != nil {
		t.Fatal(err)
	}
	if err := version.Register(reg); err != nil {
		t.Fatal(err)
	}
	return []prometheus.Registerer{reg, crmetrics.Registry}
}

// registered reports whether some registry has a metric family called name: registering
// a probe gauge of that name fails exactly when one exists.
func registered(regs []prometheus.Registerer, name string) bool {
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && registered(regs, base) {
			return true
		}
	}
	for _, reg := range regs {
		probe := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "probe"})
		err := reg.Register(probe)
		if err == nil {
			reg.Unregister(probe)
			continue
		}
		if are := (prometheus.AlreadyRegisteredError{}); errors.As(err, &are) || strings.Contains(err.Error(), name) {
			return true
		}
	}
	return false
}

// metricNames are the metric names expr selects.
func metricNames(t *testing.T, expr string) []string {
	t.Helper()
	e, err := promParser.ParseExpr(expr)
	if err != nil {
		t.Fatalf("parsing %s: %v", expr, err)
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			names = append(names, vs.Name)
		}
		return nil
	})
	return names
}

// grafanaVars replaces the dashboard's variables by values a query may take.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$manager", "quotagate-manager-metrics", "$webhook", "quotagate-webhook")

type dashboard struct {
	Title  string `json:"title"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// Every query of the dashboard parses as PromQL and names only metrics the manager and
// webhook export; it has the panels the issue asks for.
func TestDashboardQueriesNameExportedMetrics(t *testing.T) {
	raw := readAbs(t, filepath.Join(chartDir(t), "dashboards", "quotagate.json"))
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("dashboards/quotagate.json: %v", err)
	}
	regs := exportedRegistries(t)
	var titles []string
	for _, p := range d.Panels {
		titles = append(titles, p.Title)
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			names := metricNames(t, grafanaVars.Replace(tg.Expr))
			if len(names) == 0 {
				t.Errorf("panel %q: %s selects no metric", p.Title, tg.Expr)
			}
			for _, n := range names {
				if n != "up" && !registered(regs, n) {
					t.Errorf("panel %q: %s is not a metric quotagate exports", p.Title, n)
				}
			}
		}
	}
	all := strings.ToLower(strings.Join(titles, "|"))
	for _, want := range []string{"queue depth", "used / hard", "wait time", "admissions per second", "ungate errors", "webhook latency", "leader", "estimated start", "estimator"} {
		if !strings.Contains(all, want) {
			t.Errorf("no panel about %q among %q", want, titles)
		}
	}
	// The probe must tell a missing name apart.
	if registered(regs, "quotagate_no_such_metric") {
		t.Error("registered() finds a metric nobody exports")
	}
}

// Every alert expression names only exported metrics (and up), and the ConfigMap ships
// the dashboard file byte for byte, labelled for Grafana's sidecar.
func TestAlertsNameExportedMetricsAndDashboardConfigMap(t *testing.T) {
	regs := exportedRegistries(t)
	for name, r := range chartRules(t) {
		for _, n := range metricNames(t, r.Expr) {
			if n != "up" && !registered(regs, n) {
				t.Errorf("alert %s: %s is not a metric quotagate exports", name, n)
			}
		}
	}
	m := mustInstall(t, defaultRelease, defaultNamespace, map[string]any{
		"metrics": map[string]any{"grafanaDashboard": map[string]any{"enabled": true}},
	})
	cm := m.find(t, "ConfigMap", "quotagate-dashboard")
	if cm.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap labels %v, want grafana_dashboard=1", cm.GetLabels())
	}
	data, _, _ := unstructured.NestedString(cm.Object, "data", "quotagate.json")
	file, err := os.ReadFile(filepath.Join(chartDir(t), "dashboards", "quotagate.json"))
	if err != nil {
		t.Fatal(err)
	}
	if data != strings.TrimSuffix(string(file), "\n") {
		t.Errorf("the ConfigMap's quotagate.json differs from dashboards/quotagate.json")
	}
	off := mustInstall(t, defaultRelease, defaultNamespace, nil)
	if len(off.all("PrometheusRule")) != 0 || len(off.all("ConfigMap")) != len(m.all("ConfigMap"))-1 {
		t.Error("the PrometheusRule or the dashboard is rendered by default; both are off by default")
	}
}
