package controller

import (
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"github.com/quotagate/quotagate/pkg/quota/hours"
)

// hoursSeries is what a budget's hour series were published with.
type hoursSeries struct {
	period string
	names  []corev1.ResourceName
	reset  bool
}

// setHours publishes a budget's hours (nil: it has none, and has no series). Series of
// a period that ended, or of a resource no longer limited, are dropped.
func (m *metrics) setHours(b []string, st *hours.State) {
	key := strings.Join(b, "/")
	var now hoursSeries
	if st != nil {
		now = hoursSeries{period: st.Period, names: slices.Sorted(maps.Keys(st.Limits)), reset: !st.ResetAt.IsZero()}
	}
	m.hoursMu.Lock()
	defer m.hoursMu.Unlock()
	if was, ok := m.hoursSeen[key]; ok {
		l := prometheus.Labels{"kind": b[0], "namespace": b[1], "name": b[2]}
		if was.period != now.period {
			m.hoursUsed.DeletePartialMatch(l)
		}
		for _, r := range was.names {
			if !slices.Contains(now.names, r) {
				for _, v := range []*prometheus.GaugeVec{m.hoursUsed, m.hoursReserved, m.hoursLimit} {
					v.DeletePartialMatch(prometheus.Labels{"kind": b[0], "namespace": b[1], "name": b[2], "resource": string(r)})
				}
			}
		}
		if was.reset && !now.reset {
			m.hoursReset.DeletePartialMatch(l)
		}
	}
	if st == nil {
		delete(m.hoursSeen, key)
		return
	}
	if m.hoursSeen == nil {
		m.hoursSeen = map[string]hoursSeries{}
	}
	m.hoursSeen[key] = now
	for r, limit := range st.Limits {
		m.hoursLimit.WithLabelValues(append(b, string(r))...).Set(limit)
		m.hoursUsed.WithLabelValues(append(b, string(r), st.Period)...).Set(st.Used[r])
		m.hoursReserved.WithLabelValues(append(b, string(r))...).Set(st.Reserved[r])
	}
	if now.reset {
		m.hoursReset.WithLabelValues(b...).Set(float64(st.ResetAt.Unix()))
	}
}
