package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/storage"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/pkg/quota/controller"
)

// The chart's Grafana dashboard, with two manager replicas scraped as Prometheus scrapes
// them (one leads, one stands by with a warm core): every panel shows what the leader
// alone shows, and the per-budget panels show the Budget's own status, not twice it. The
// namespace and budget variables narrow the panels to one budget.

const managerJob = "quotagate-manager-metrics"

func TestDashboardShowsOneReplicasTruthWithTwoReplicas(t *testing.T) {
	ns := newNamespace(t, true)
	mustCreate(t, budget(ns, "b", cpu("2"), ""))
	for i := range 4 {
		mustCreate(t, gatedPod(ns, podName(i), "1"))
	}
	mustCreate(t, gatedPod(ns, "huge", "5")) // more than hard: never fits

	regA, regB := prometheus.NewRegistry(), prometheus.NewRegistry()
	a := startManager(t, func(o *controller.Options) { o.Registerer = regA }, true)
	testbed.Poll(t, time.Minute, "the first replica to lead", func(context.Context) (bool, error) { return a.ctrl.Leading(), nil })
	b := startManager(t, func(o *controller.Options) { o.Registerer = regB }, true)
	testbed.Poll(t, time.Minute, "the standby's informers to sync", func(context.Context) (bool, error) { return b.ctrl.ReadyCheck(nil) == nil, nil })
	if b.ctrl.Leading() {
		t.Fatal("the second replica leads while the first holds the lease")
	}
	urlA, urlB := serveMetrics(t, regA), serveMetrics(t, regB)

	// Two scrapes, a while apart: 2 of the 1-CPU pods admitted, then 3 once hard is 3.
	truth1 := waitForTruth(t, ns, "b", 2, 3)
	scrape1 := scrapeWhenLeaderShows(t, ns, truth1, urlA, urlB)
	editBudget(t, ns, "b", func(b *v1alpha1.Budget) { b.Spec.Hard = cpu("3") })
	truth2 := waitForTruth(t, ns, "b", 3, 2)
	scrape2 := scrapeWhenLeaderShows(t, ns, truth2, urlA, urlB)
	if n := len(scrape2[1]); n != 0 {
		t.Errorf("the standby exports %d quotagate series, want none", n)
	}

	// Prometheus's view: minutes 0-5 the first scrape, 6-10 the second, both replicas;
	// the panels are evaluated at minute 8, with the rate windows over the change.
	both := loadScrapes(t, []string{"a", "b"}, scrape1, scrape2)
	leaderOnly := loadScrapes(t, []string{"a"}, scrape1[:1], scrape2[:1])
	all := strings.NewReplacer("$manager", managerJob, "$namespace", ".*", "$budget", ".*", "$__rate_interval", "5m")
	one := strings.NewReplacer("$manager", managerJob, "$namespace", ns, "$budget", "b", "$__rate_interval", "5m")
	other := strings.NewReplacer("$manager", managerJob, "$namespace", "no-such-namespace", "$budget", ".*", "$__rate_interval", "5m")

	cpuQ := func(q resource.Quantity) float64 { return q.AsApproximateFloat64() }
	ours := fmt.Sprintf(`kind="Budget", name="b", namespace=%q`, ns)
	wantOne := map[string]map[string]float64{
		"Queue depth per budget":           nil, // summed over queues below
		"Gated pods per budget":            {"{" + ours + "}": float64(truth2.GatedPods)},
		"Used / hard per budget":           {"{" + ours + `, resource="requests.cpu"}`: cpuQ(truth2.Used["requests.cpu"]) / cpuQ(truth2.Hard["requests.cpu"])},
		"Pending per budget":               {"{" + ours + `, resource="requests.cpu"}`: cpuQ(truth2.Pending["requests.cpu"])},
		"Pods that can never fit":          {"{" + ours + "}": 1},
		"Admissions per second per budget": nil, // positive, below
	}
	var sawNamespaceFilter int
	for _, p := range readDashboard(t) {
		for _, expr := range p.exprs {
			// Every panel: two replicas give what the leader alone gives.
			for _, vars := range []*strings.Replacer{all, one} {
				q := vars.Replace(expr)
				if got, want := evalAt(t, both, q), evalAt(t, leaderOnly, q); !equalResults(got, want) {
					t.Errorf("panel %q with two replicas shows %v, the leader alone %v\nquery: %s", p.title, got, want, q)
				}
			}
			if !strings.Contains(expr, "$namespace") {
				continue
			}
			sawNamespaceFilter++
			if got := evalAt(t, both, other.Replace(expr)); len(got) != 0 {
				t.Errorf("panel %q for another namespace shows %v, want nothing\nquery: %s", p.title, got, other.Replace(expr))
			}
			got := evalAt(t, both, one.Replace(expr))
			switch want, checked := wantOne[p.title]; {
			case p.title == "Queue depth per budget":
				var sum float64
				for _, v := range got {
					sum += v
				}
				if sum != float64(truth2.GatedPods) {
					t.Errorf("panel %q: %v, %v pods in all, want the budget's %d gated pods", p.title, got, sum, truth2.GatedPods)
				}
			case p.title == "Admissions per second per budget":
				if len(got) != 1 || got["{"+ours+"}"] <= 0 {
					t.Errorf("panel %q: %v, want one positive rate for the budget", p.title, got)
				}
			case checked:
				if !equalResults(got, want) {
					t.Errorf("panel %q: %v, want the budget's status %v", p.title, got, want)
				}
			}
		}
	}
	if sawNamespaceFilter < len(wantOne) {
		t.Errorf("%d queries filter by $namespace, want at least the %d per-budget panels", sawNamespaceFilter, len(wantOne))
	}

	// Failover: the standby, elected, exports the same truth at once from its warm core.
	a.stop(t)
	testbed.Poll(t, time.Minute, "the standby to lead", func(context.Context) (bool, error) { return b.ctrl.Leading(), nil })
	testbed.Poll(t, time.Minute, "the new leader to export the budget", func(context.Context) (bool, error) {
		s := scrapeReplica(t, urlB)
		return s[gatedKey(ns)] == float64(truth2.GatedPods) && queueDepthSum(s, ns) == float64(truth2.GatedPods), nil
	})
}

// The dashboard's panels and their queries.
type dashboardPanel struct {
	title string
	exprs []string
}

func readDashboard(t *testing.T) []dashboardPanel {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "charts", "quotagate", "dashboards", "quotagate.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("the dashboard: %v", err)
	}
	var out []dashboardPanel
	for _, p := range d.Panels {
		dp := dashboardPanel{title: p.Title}
		for _, tg := range p.Targets {
			dp.exprs = append(dp.exprs, tg.Expr)
		}
		out = append(out, dp)
	}
	return out
}

// waitForTruth waits until the Budget's status, written by the leader for the current
// generation, shows the pods admitted and gated, and returns it.
func waitForTruth(t *testing.T, ns, name string, admitted, gated int32) v1alpha1.BudgetStatus {
	t.Helper()
	var st v1alpha1.BudgetStatus
	testbed.Poll(t, 2*time.Minute, fmt.Sprintf("budget %s/%s to show %d admitted and %d gated", ns, name, admitted, gated), func(context.Context) (bool, error) {
		b := &v1alpha1.Budget{}
		if err := admin.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
			return false, err
		}
		st = b.Status
		return st.ObservedGeneration == b.Generation && st.AdmittedPods == admitted && st.GatedPods == gated, nil
	})
	return st
}

// serveMetrics serves reg as the manager's metrics endpoint serves its registry.
func serveMetrics(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// scrape is one scrape of one replica: sample value by series, in PromQL's notation
// (histograms as _bucket, _sum and _count), quotagate's series only.
type scrape map[string]float64

func scrapeReplica(t *testing.T, url string) scrape {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scraping %s: %v", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing the scrape of %s: %v", url, err)
	}
	out := scrape{}
	for name, f := range families {
		if !strings.HasPrefix(name, "quotagate_") {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			add := func(suffix string, v float64, extra ...string) {
				ls := append(slices.Clone(labels), extra...)
				slices.Sort(ls)
				out[name+suffix+"{"+strings.Join(ls, ", ")+"}"] = v
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				add("", m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				add("", m.GetGauge().GetValue())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, bk := range h.GetBucket() {
					add("_bucket", float64(bk.GetCumulativeCount()), fmt.Sprintf("le=%q", strconv.FormatFloat(bk.GetUpperBound(), 'f', -1, 64)))
				}
				add("_bucket", float64(h.GetSampleCount()), `le="+Inf"`)
				add("_sum", h.GetSampleSum())
				add("_count", float64(h.GetSampleCount()))
			}
		}
	}
	return out
}

func gatedKey(ns string) string {
	return fmt.Sprintf(`quotagate_budget_gated_pods{kind="Budget", name="b", namespace=%q}`, ns)
}

// queueDepthSum is the budget's gated pods as its queue depths count them.
func queueDepthSum(s scrape, ns string) float64 {
	prefix := fmt.Sprintf(`quotagate_queue_depth{kind="Budget", name="b", namespace=%q, queue=`, ns)
	var sum float64
	for k, v := range s {
		if strings.HasPrefix(k, prefix) {
			sum += v
		}
	}
	return sum
}

// scrapeWhenLeaderShows scrapes every replica (the leader first) once the leader's
// series show the budget's status.
func scrapeWhenLeaderShows(t *testing.T, ns string, st v1alpha1.BudgetStatus, urls ...string) []scrape {
	t.Helper()
	testbed.Poll(t, time.Minute, "the leader's metrics to show the budget's status", func(context.Context) (bool, error) {
		s := scrapeReplica(t, urls[0])
		return s[gatedKey(ns)] == float64(st.GatedPods) && queueDepthSum(s, ns) == float64(st.GatedPods), nil
	})
	var out []scrape
	for _, u := range urls {
		out = append(out, scrapeReplica(t, u))
	}
	return out
}

// loadScrapes stores, as Prometheus would from the manager's ServiceMonitor, the first
// scrape of each replica at minutes 0-5 and the second at 6-10, under job and instance.
func loadScrapes(t *testing.T, instances []string, first, second []scrape) storage.Queryable {
	t.Helper()
	series := map[string][]string{}
	for i, inst := range instances {
		for minute := 0; minute <= 10; minute++ {
			s := first[i]
			if minute > 5 {
				s = second[i]
			}
			for key, v := range s {
				name, labels, _ := strings.Cut(strings.TrimSuffix(key, "}"), "{")
				id := fmt.Sprintf("%s{job=%q, instance=%q", name, managerJob, inst)
				if labels != "" {
					id += ", " + labels
				}
				id += "}"
				vals := series[id]
				for len(vals) < minute {
					vals = append(vals, "_")
				}
				series[id] = append(vals, strconv.FormatFloat(v, 'g', -1, 64))
			}
		}
	}
	var load strings.Builder
	load.WriteString("load 1m\n")
	for id, vals := range series {
		fmt.Fprintf(&load, "  %s %s\n", id, strings.Join(vals, " "))
	}
	return promqltest.LoadedStorage(t, load.String())
}

// evalAt evaluates query at minute 8 and returns its vector by label set.
func evalAt(t *testing.T, st storage.Queryable, query string) map[string]float64 {
	t.Helper()
	engine := promqltest.NewTestEngine(t, false, 0, promqltest.DefaultMaxSamplesPerQuery)
	q, err := engine.NewInstantQuery(t.Context(), st, nil, query, time.Unix(0, 0).Add(8*time.Minute))
	if err != nil {
		t.Fatalf("query %s: %v", query, err)
	}
	defer q.Close()
	res := q.Exec(t.Context())
	if res.Err != nil {
		t.Fatalf("query %s: %v", query, res.Err)
	}
	vec, err := res.Vector()
	if err != nil {
		t.Fatalf("query %s: %v", query, err)
	}
	out := map[string]float64{}
	for _, s := range vec {
		out[s.Metric.String()] = s.F
	}
	return out
}

func equalResults(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || (v != w && !(v != v && w != w)) { // NaN equals NaN here
			return false
		}
	}
	return true
}
