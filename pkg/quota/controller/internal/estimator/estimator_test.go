package estimator

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/quota"
)

// testMetrics are the estimator's series, unregistered, labelled by budget kind,
// namespace, name and estimate.
func testMetrics() *Metrics {
	labels := []string{"kind", "namespace", "name", "estimate"}
	return &Metrics{
		Error:    prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "error_seconds"}, labels),
		Within:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "within_total"}, labels),
		Pass:     prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "pass_seconds"}, []string{"phase"}),
		Pods:     prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pods"}, []string{"state"}),
		Skipped:  prometheus.NewCounter(prometheus.CounterOpts{Name: "skipped_total"}),
		Labels:   func(k quota.BudgetKey) []string { return []string{"Budget", k.Namespace, k.Name} },
		NoBudget: []string{"None", "", ""},
	}
}

// A pod's first known estimate, its first at the head of its queue and its last are
// each judged against its admission, once: g1 was first estimated at +8m while second
// in its queue, then at +9m at the head, then at +11m (range +9m to +12m); admitted at
// +10m, the first and head estimates missed by 2m and 1m outside their ranges, the
// last by 1m within its range. The budget's track record keeps the first estimate's
// error. A pod that never had a known estimate is not judged.
func TestErrorJudgesFirstHeadAndLast(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	m := testMetrics()
	e := New(&Settings{Clock: clock.RealClock{}}, DefaultInterval, m)
	at := func(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }
	g1 := quota.PodRef{UID: "g1", Namespace: "team-a", Name: "g1"}
	known := func(median, low, high int, head bool) estimate.Start {
		return estimate.Start{Pod: g1, Known: true, Head: head, Median: at(median), Low: at(low), High: at(high)}
	}
	stuck := estimate.Start{Pod: quota.PodRef{UID: "stuck", Namespace: "team-b", Name: "stuck"}, Unknown: estimate.UnknownNoHistory}
	e.publish(map[types.UID]estimate.Start{"g1": known(8, 8, 8, false), "stuck": stuck})
	e.publish(map[types.UID]estimate.Start{"g1": known(9, 9, 9, true), "stuck": stuck})
	e.publish(map[types.UID]estimate.Start{"g1": known(11, 9, 12, true), "stuck": stuck})
	if s, ok := e.StartOf("g1"); !ok || !s.Median.Equal(at(11)) {
		t.Fatalf("g1's start: %+v, %v; want the last pass's, +11m", s, ok)
	}

	a := quota.BudgetKey{Namespace: "team-a", Name: "a"}
	e.ObserveError("g1", []quota.BudgetKey{a}, at(10))
	e.ObserveError("g1", []quota.BudgetKey{a}, at(10)) // once per pod
	e.ObserveError("stuck", []quota.BudgetKey{{Namespace: "team-b", Name: "b"}}, at(10))
	for _, tc := range []struct {
		estimate string
		sum      float64
		within   float64
	}{{"first", 120, 0}, {"head", 60, 0}, {"last", 60, 1}} {
		labels := []string{"Budget", "team-a", "a", tc.estimate}
		var h dto.Metric
		if err := m.Error.WithLabelValues(labels...).(prometheus.Metric).Write(&h); err != nil {
			t.Fatal(err)
		}
		if got := h.GetHistogram(); got.GetSampleCount() != 1 || got.GetSampleSum() != tc.sum {
			t.Errorf("estimate=%s: %d samples summing to %gs, want 1 of %gs", tc.estimate, got.GetSampleCount(), got.GetSampleSum(), tc.sum)
		}
		if got := testutil.ToFloat64(m.Within.WithLabelValues(labels...)); got != tc.within {
			t.Errorf("estimate=%s: %g admitted within range, want %g", tc.estimate, got, tc.within)
		}
	}
	if n := testutil.CollectAndCount(m.Error); n != 3 {
		t.Errorf("%d error series, want 3 (g1's first, head and last; none for stuck)", n)
	}
	r, ok := e.Record(a)
	if want := (estimate.Record{Budget: a, Pods: 1, MedianError: 2 * time.Minute, Since: r.Since}); !ok || r != want {
		t.Errorf("team-a/a's track record: %+v (%v), want %+v", r, ok, want)
	}
	e.Forget(a)
	if _, ok := e.Record(a); ok {
		t.Error("a deleted budget's track record is still there")
	}
}

// With the estimator off (nil) the manager still calls it: it knows no start and no
// record, judges nothing, and has no yield for admission to signal.
func TestEstimatorOff(t *testing.T) {
	e := New(&Settings{Clock: clock.RealClock{}}, 0, testMetrics())
	if e != nil {
		t.Fatalf("New with interval 0 = %v, want nil (off)", e)
	}
	if _, ok := e.StartOf("g1"); ok {
		t.Error("an estimator that is off knows a start")
	}
	e.ObserveError("g1", nil, time.Now())
	e.Forget(quota.BudgetKey{Name: "a"})
	if _, ok := e.Record(quota.BudgetKey{Name: "a"}); ok {
		t.Error("an estimator that is off has a track record")
	}
	if y := e.Yield(); y != nil {
		t.Errorf("an estimator that is off has a yield %v", y)
	}
}
