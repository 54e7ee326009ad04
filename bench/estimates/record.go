package estimates

import (
	"fmt"

	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/quotagate/quotagate/bench/figures"
)

// TrackRecord is what the manager says of its own estimates in one budget at the end
// of a run: its track record (the line kubectl quotagate why prints: of the budget's
// last admissions with a known first estimate, that estimate's median error and how
// many were within its range) and, from its metrics, how many pods were counted at
// each moment and how many of those within the range (quotagate_estimate_error_seconds'
// count and quotagate_estimate_within_range_total).
type TrackRecord struct {
	Budget string `json:"budget"`
	// Pods, MedianError (seconds) and Within are the track record's; Known is false
	// when the manager had none.
	Known       bool    `json:"known"`
	Pods        int     `json:"pods"`
	MedianError float64 `json:"medianErrorSeconds"`
	Within      int     `json:"within"`
	// Metrics are the counts of the metrics, by their estimate label (first, head).
	Metrics map[string]MetricCounts `json:"metrics"`
}

// MetricCounts are one estimate label's counts in a budget's metrics.
type MetricCounts struct {
	Pods   uint64  `json:"pods"`
	Within float64 `json:"within"`
}

// trackRecords reads the track record and the metrics of each of b's budgets from the
// manager in this process.
func trackRecords(e *figures.Env, b budgetsOf) ([]TrackRecord, error) {
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		return nil, fmt.Errorf("reading the manager's metrics: %w", err)
	}
	out := make([]TrackRecord, 0, len(b.keys))
	for _, key := range b.keys {
		t := TrackRecord{Budget: key.String(), Metrics: map[string]MetricCounts{}}
		if rec, ok := e.EstimateRecord(key); ok {
			t.Known, t.Pods, t.MedianError, t.Within = true, rec.Pods, rec.MedianError.Seconds(), rec.Within
		}
		for _, f := range families {
			name := f.GetName()
			if name != "quotagate_estimate_error_seconds" && name != "quotagate_estimate_within_range_total" {
				continue
			}
			for _, m := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["kind"] != "Budget" || labels["namespace"] != key.Namespace || labels["name"] != key.Name {
					continue
				}
				c := t.Metrics[labels["estimate"]]
				if h := m.GetHistogram(); h != nil {
					c.Pods = h.GetSampleCount()
				} else {
					c.Within = m.GetCounter().GetValue()
				}
				t.Metrics[labels["estimate"]] = c
			}
		}
		out = append(out, t)
	}
	return out, nil
}
