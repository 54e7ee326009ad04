package docscheck

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	manager "github.com/quotagate/quotagate/cmd/manager/app"
	"github.com/quotagate/quotagate/internal/version"
	"github.com/quotagate/quotagate/pkg/admission"
	"github.com/quotagate/quotagate/pkg/quota/controller"
)

// metric is a metric a binary registers.
type metric struct {
	name      string
	binaries  []string // manager, webhook
	typ       string   // counter, gauge, histogram, summary or untyped
	labels    []string // its variable and constant labels, sorted
	collector prometheus.Collector
}

// recorder is a prometheus.Registerer that notes every metric registered with it. It
// registers into a registry of its own, so that the constructors see the errors and
// the sharing (promreg) they see in the binary.
type recorder struct {
	binary  string
	reg     *prometheus.Registry
	metrics map[string]*metric
}

var _ prometheus.Registerer = (*recorder)(nil)

func (r *recorder) Register(c prometheus.Collector) error {
	if err := r.reg.Register(c); err != nil {
		return err
	}
	return r.record(c)
}

// record notes the metrics c describes; a collector that gates others (the manager's
// leader-only one) is recorded as the collectors it gates, each with its own type.
func (r *recorder) record(c prometheus.Collector) error {
	if w, ok := c.(interface{ Unwrap() []prometheus.Collector }); ok {
		for _, inner := range w.Unwrap() {
			if err := r.record(inner); err != nil {
				return err
			}
		}
		return nil
	}
	descs := make(chan *prometheus.Desc)
	go func() {
		c.Describe(descs)
		close(descs)
	}()
	for d := range descs {
		m, err := parseDesc(d)
		if err != nil {
			return err
		}
		if seen, ok := r.metrics[m.name]; ok {
			seen.binaries = append(seen.binaries, r.binary)
			continue
		}
		m.binaries, m.typ, m.collector = []string{r.binary}, typeOf(c), c
		r.metrics[m.name] = &m
	}
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

func (r *recorder) Unregister(c prometheus.Collector) bool { return r.reg.Unregister(c) }

// descFields reads a Desc's name and label names: client_golang has no accessors
// for them, only its String.
var descFields = regexp.MustCompile(`^Desc\{fqName: "([^"]+)", .*constLabels: \{(.*)\}, variableLabels: \{(.*)\}\}$`)

func parseDesc(d *prometheus.Desc) (metric, error) {
	m := descFields.FindStringSubmatch(d.String())
	if m == nil {
		return metric{}, fmt.Errorf("cannot read the descriptor %s", d)
	}
	out := metric{name: m[1]}
	for _, pair := range strings.Split(m[2], ",") {
		if name, _, ok := strings.Cut(pair, "="); ok {
			out.labels = append(out.labels, name)
		}
	}
	for _, name := range strings.Split(m[3], ",") {
		if name = strings.TrimSuffix(strings.TrimPrefix(name, "c("), ")"); name != "" {
			out.labels = append(out.labels, name)
		}
	}
	slices.Sort(out.labels)
	return out, nil
}

// typeOf is the Prometheus type of a collector's metrics.
func typeOf(c prometheus.Collector) string {
	switch c.(type) {
	case *prometheus.CounterVec:
		return "counter"
	case *prometheus.GaugeVec:
		return "gauge"
	case *prometheus.HistogramVec:
		return "histogram"
	case *prometheus.SummaryVec:
		return "summary"
	}
	ms := make(chan prometheus.Metric)
	go func() {
		c.Collect(ms)
		close(ms)
	}()
	typ := "untyped"
	for m := range ms {
		var out dto.Metric
		if err := m.Write(&out); err != nil {
			continue
		}
		switch {
		case out.Counter != nil:
			typ = "counter"
		case out.Gauge != nil:
			typ = "gauge"
		case out.Histogram != nil:
			typ = "histogram"
		case out.Summary != nil:
			typ = "summary"
		}
	}
	return typ
}

// registeredMetrics are the quotagate metrics the manager and the webhook register, from
// the constructors their commands call (cmd/manager/app.Run, cmd/webhook/app.Serve).
func registeredMetrics(t *testing.T) map[string]*metric {
	t.Helper()
	metrics := map[string]*metric{}
	mgr := &recorder{binary: "manager", reg: prometheus.NewRegistry(), metrics: metrics}
	if err := version.Register(mgr); err != nil {
		t.Fatal(err)
	}
	opts := manager.DefaultOptions().Controller
	opts.Registerer = mgr
	if _, err := controller.New(opts); err != nil {
		t.Fatalf("building the manager's controller: %v", err)
	}
	webhook := &recorder{binary: "webhook", reg: prometheus.NewRegistry(), metrics: metrics}
	if err := version.Register(webhook); err != nil {
		t.Fatal(err)
	}
	if _, err := admission.NewMetrics(webhook); err != nil {
		t.Fatalf("building the webhook's metrics: %v", err)
	}
	if len(metrics) < 10 {
		t.Fatalf("only %d metrics registered: %v", len(metrics), metrics)
	}
	return metrics
}
