package estimator

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/quotagate/quotagate/pkg/quota"
)

// Metrics are the estimator's series, which the manager registers with its own.
type Metrics struct {
	// Error and Within are quotagate_estimate_error_seconds and
	// quotagate_estimate_within_range_total: a budget's labels (Labels), then which
	// estimate ("first", "head", "last").
	Error  *prometheus.HistogramVec
	Within *prometheus.CounterVec
	// Pass is how long each phase of a pass took ("build", "simulate"), Pods how many
	// pods the last pass saw ("gated", "running"), Skipped how many passes were skipped
	// over Settings.MaxPods.
	Pass    *prometheus.HistogramVec
	Pods    *prometheus.GaugeVec
	Skipped prometheus.Counter
	// Labels are the labels of key's series; NoBudget those of a pod charged to none.
	Labels   func(key quota.BudgetKey) []string
	NoBudget []string
}
