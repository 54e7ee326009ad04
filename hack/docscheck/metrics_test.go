package docscheck

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// metricsDoc lists every metric with its labels and cardinality.
const metricsDoc = "docs/metrics.md"

// removedMetrics are metrics quotagate no longer registers; the docs may name them only
// in a paragraph that says they were removed.
var removedMetrics = []string{
	"quotagate_webhook_pods_gated_total",
	"quotagate_webhook_handler_duration_seconds",
}

var (
	// metricName is a quotagate metric name, with the suffixes a table row abbreviates
	// ("quotagate_budget_hard / _used / _pending"), or a prefix ending in _*.
	metricName = regexp.MustCompile(`\bquotagate_[a-z0-9_]*[a-z0-9*]((?:\s*/\s*_[a-z0-9_]+)*)`)
	// libraryMetric is a metric controller-runtime registers in both binaries, which the
	// alerts and the dashboard use.
	libraryMetric = regexp.MustCompile(`\b(?:controller_runtime|leader_election|workqueue|rest_client)_[a-z0-9_]*[a-z0-9*]`)
)

// metricFiles are where metric names are written: the docs, the alerts and the dashboard.
func metricFiles(t *testing.T) []string {
	return append(docFiles(t), prometheusRuleFile, dashboardFile)
}

// Every quotagate_* metric named in the docs, the PrometheusRule and the dashboard is one
// the manager or the webhook registers (a histogram's _bucket, _sum and _count too), and
// so is every controller-runtime metric they name: an alert on a metric nobody exports
// never fires.
func TestMetricNamesAreRegistered(t *testing.T) {
	metrics := registeredMetrics(t)
	var p problems
	found := 0
	for _, file := range metricFiles(t) {
		lines := readLines(t, file)
		paras := paragraphs(lines)
		for i, l := range lines {
			for _, m := range metricName.FindAllStringSubmatch(l.text, -1) {
				found++
				base := strings.TrimSpace(strings.SplitN(m[0], "/", 2)[0])
				if slices.Contains(removedMetrics, base) {
					if _, ok := metrics[base]; ok {
						p.add(l.pos(), "%s is registered, yet listed in removedMetrics", base)
					} else if !strings.Contains(strings.ToLower(paras[i]), "removed") {
						p.add(l.pos(), "%s was removed: this paragraph names it without saying so", base)
					}
					continue
				}
				if !registered(metrics, base) {
					p.add(l.pos(), "%s: no such metric; the manager and the webhook register %s", base, strings.Join(quotagateNames(metrics), ", "))
					continue
				}
				for _, suffix := range regexp.MustCompile(`_[a-z0-9_]+`).FindAllString(m[1], -1) {
					if abbreviated(metrics, base, suffix) == "" {
						p.add(l.pos(), "%s after %s: no registered metric ends so", suffix, base)
					}
				}
			}
			for _, name := range libraryMetric.FindAllString(l.text, -1) {
				if strings.HasSuffix(name, "*") {
					continue // a family (controller_runtime_webhook_*), not a name
				}
				if !libraryRegistered(name) {
					p.add(l.pos(), "%s: controller-runtime registers no such metric in the binaries", name)
				}
			}
		}
	}
	if found < 20 {
		t.Errorf("only %d metric names found in the docs, alerts and dashboard: the extraction is broken", found)
	}
	p.report(t, "metric names that no binary registers")
}

// registered reports whether name is a registered metric or a series of one: a
// histogram's _bucket, _sum, _count; a prefix written as quotagate_budget_*.
func registered(metrics map[string]*metric, name string) bool {
	if prefix, ok := strings.CutSuffix(name, "*"); ok {
		return slices.ContainsFunc(quotagateNames(metrics), func(n string) bool { return strings.HasPrefix(n, prefix) })
	}
	if _, ok := metrics[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if m, ok := metrics[strings.TrimSuffix(name, suffix)]; ok && strings.HasSuffix(name, suffix) &&
			(m.typ == "histogram" || (m.typ == "summary" && suffix != "_bucket")) {
			return true
		}
	}
	return false
}

// abbreviated is the registered metric that suffix stands for after base
// (quotagate_budget_gated_pods / _never_fit_pods is quotagate_budget_never_fit_pods), or "".
func abbreviated(metrics map[string]*metric, base, suffix string) string {
	parts := strings.Split(base, "_")
	for i := len(parts) - 1; i >= 1; i-- {
		if name := strings.Join(parts[:i], "_") + suffix; registered(metrics, name) {
			return name
		}
	}
	return ""
}

func quotagateNames(metrics map[string]*metric) []string {
	var names []string
	for name := range metrics {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// libraryRegistered reports whether controller-runtime's registry, which both binaries
// serve, has a metric of this name (or whose _bucket, _sum or _count this is). The
// registry has no list of names: registering a probe of the same name fails exactly
// when one exists.
func libraryRegistered(name string) bool {
	for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		probe := prometheus.NewGauge(prometheus.GaugeOpts{Name: base, Help: "docscheck probe"})
		if err := crmetrics.Registry.Register(probe); err != nil {
			return true
		}
		crmetrics.Registry.Unregister(probe)
	}
	return false
}

// tableRow is a row of docs/metrics.md's table.
type tableRow struct {
	l      line
	names  []string
	typ    string
	labels []string
	series string
}

// metricsTable reads the table of docs/metrics.md.
func metricsTable(t *testing.T, metrics map[string]*metric) []tableRow {
	t.Helper()
	var rows []tableRow
	for _, l := range readLines(t, metricsDoc) {
		if !strings.HasPrefix(l.text, "| quotagate_") {
			continue
		}
		cells := strings.Split(strings.Trim(l.text, "| "), " | ")
		if len(cells) != 4 {
			t.Fatalf("%s: want 4 cells (metric, type, labels, series), found %d", l.pos(), len(cells))
		}
		r := tableRow{l: l, typ: regexp.MustCompile(`^[a-z]*`).FindString(cells[1]), series: cells[3]}
		m := metricName.FindStringSubmatch(cells[0])
		r.names = []string{strings.TrimSpace(strings.SplitN(m[0], "/", 2)[0])}
		for _, suffix := range regexp.MustCompile(`_[a-z0-9_]+`).FindAllString(m[1], -1) {
			if name := abbreviated(metrics, r.names[0], suffix); name != "" {
				r.names = append(r.names, name)
			}
		}
		// The labels are the first word of each comma-separated part, outside the
		// parentheses that explain them: "from (incoming or a queue), to (...)".
		plain := regexp.MustCompile(`\([^)]*\)`).ReplaceAllString(cells[2], "")
		for _, part := range strings.Split(plain, ",") {
			if f := strings.Fields(part); len(f) > 0 {
				r.labels = append(r.labels, f[0])
			}
		}
		slices.Sort(r.labels)
		rows = append(rows, r)
	}
	return rows
}

// docs/metrics.md lists every metric the binaries register, with their type and labels.
func TestMetricsTableMatchesTheRegistry(t *testing.T) {
	metrics := registeredMetrics(t)
	rows := metricsTable(t, metrics)
	var p problems
	listed := map[string]bool{}
	for _, r := range rows {
		for _, name := range r.names {
			listed[name] = true
			m, ok := metrics[name]
			if !ok {
				continue // TestMetricNamesAreRegistered says so
			}
			if r.typ != m.typ {
				p.add(r.l.pos(), "%s: the table says %s, the %s registers a %s", name, r.typ, strings.Join(m.binaries, " and "), m.typ)
			}
			if !slices.Equal(r.labels, m.labels) {
				p.add(r.l.pos(), "%s: the table's labels are [%s], the registered ones [%s]", name, strings.Join(r.labels, ", "), strings.Join(m.labels, ", "))
			}
		}
	}
	for _, name := range quotagateNames(metrics) {
		if !listed[name] {
			m := metrics[name]
			p.add(metricsDoc, "%s (a %s of the %s, labels [%s]) is not in the table", name, m.typ, strings.Join(m.binaries, " and "), strings.Join(m.labels, ", "))
		}
	}
	p.report(t, "differences between docs/metrics.md's table and the registered metrics")
}

var (
	perBudget    = regexp.MustCompile(`^(?:≤\s*)?(\d+)(\s*×\s*resources)? per budget$`)
	perBudgetSum = regexp.MustCompile(`About (\d+) \+ (\d+) × resources series per budget`)
	bucketCount  = regexp.MustCompile(`(\d+) buckets`)
)

// The series count per budget that docs/metrics.md gives is the sum of its table's
// rows, and the histogram's row counts its real buckets.
func TestMetricsSeriesPerBudget(t *testing.T) {
	metrics := registeredMetrics(t)
	var p problems
	fixed, perResource := 0, 0
	for _, r := range metricsTable(t, metrics) {
		m := perBudget.FindStringSubmatch(r.series)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		if m[2] != "" {
			perResource += n
		} else {
			fixed += n
		}
		if h, ok := metrics[r.names[0]]; ok && h.typ == "histogram" {
			buckets := histogramBuckets(t, h)
			if want := buckets + 3; n != want {
				p.add(r.l.pos(), "%s: %d series per budget, but %d buckets are %d series (+Inf, _sum and _count besides)", h.name, n, buckets, want)
			}
			if b := bucketCount.FindStringSubmatch(r.l.text); b == nil || b[1] != strconv.Itoa(buckets) {
				p.add(r.l.pos(), "%s: the row should say it has %d buckets", h.name, buckets)
			}
		}
	}
	if fixed == 0 {
		t.Fatalf("%s: no row's series count ends in \"per budget\"", metricsDoc)
	}
	sums := 0
	for _, l := range readLines(t, metricsDoc) {
		m := perBudgetSum.FindStringSubmatch(l.text)
		if m == nil {
			continue
		}
		sums++
		if got, _ := strconv.Atoi(m[1]); got != fixed {
			p.add(l.pos(), "says %s + %s × resources series per budget; its table adds up to %d + %d × resources", m[1], m[2], fixed, perResource)
		} else if got, _ := strconv.Atoi(m[2]); got != perResource {
			p.add(l.pos(), "says %s + %s × resources series per budget; its table adds up to %d + %d × resources", m[1], m[2], fixed, perResource)
		}
	}
	if sums != 1 {
		t.Errorf("%s: want one sentence \"About N + M × resources series per budget\", found %d", metricsDoc, sums)
	}
	p.report(t, "series counts that disagree")
}

// histogramBuckets is how many buckets (without +Inf) the histogram has.
func histogramBuckets(t *testing.T, m *metric) int {
	t.Helper()
	vec, ok := m.collector.(*prometheus.HistogramVec)
	if !ok {
		t.Fatalf("%s: a %T, not a HistogramVec", m.name, m.collector)
	}
	values := make([]string, len(m.labels))
	h, err := vec.GetMetricWithLabelValues(values...)
	if err != nil {
		t.Fatal(err)
	}
	var out dto.Metric
	if err := h.(prometheus.Metric).Write(&out); err != nil {
		t.Fatal(err)
	}
	return len(out.GetHistogram().GetBucket())
}
