package admission

import (
	"fmt"

	"github.com/quotagate/quotagate/internal/promreg"

	"github.com/prometheus/client_golang/prometheus"
)

// The values of the `result` label of quotagate_webhook_requests_total.
const (
	resultGated   = "gated"
	resultSkipped = "skipped"
	resultDenied  = "denied"
	resultErrored = "errored"
)

// Metrics are the webhook's Prometheus metrics. Its latency is controller-runtime's
// controller_runtime_webhook_latency_seconds{webhook="/mutate-v1-pod"}, served by the
// same registry; the pods gated are quotagate_webhook_requests_total{result="gated"}.
type Metrics struct {
	requests    *prometheus.CounterVec
	podsSkipped *prometheus.CounterVec
}

// NewMetrics creates the webhook's metrics and registers them with reg
// (controller-runtime's metrics.Registry in the binary). A collector already
// registered under the same name is reused, so a second webhook in the same
// process shares the counts.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quotagate_webhook_requests_total",
			Help: "Pod admission requests answered by the quotagate webhook, by result (gated, skipped, denied, errored).",
		}, []string{"result"}),
		podsSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quotagate_webhook_pods_skipped_total",
			Help: "Pods the quotagate webhook let through without a gate, by reason.",
		}, []string{"reason"}),
	}
	var err error
	if m.requests, err = register(reg, m.requests); err != nil {
		return nil, err
	}
	if m.podsSkipped, err = register(reg, m.podsSkipped); err != nil {
		return nil, err
	}
	return m, nil
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	c, err := promreg.Register(reg, c)
	if err != nil {
		return c, fmt.Errorf("registering webhook metrics: %w", err)
	}
	return c, nil
}

func (m *Metrics) observe(result string) {
	m.requests.WithLabelValues(result).Inc()
}
