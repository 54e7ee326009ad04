package controller

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/visibility"
)

// With more pods than EstimateMaxPods the estimator skips its pass and drops what it
// had: no gated pod has an estimate until the pods are back under the bound.
func TestEstimatorBound(t *testing.T) {
	f := newEstimateFixture(t)
	ctx := t.Context()
	f.c.estimates.MaxPods = 2 // the what-ifs share it (estimator.Settings)
	f.add(t, runningFor(estimatePod("team-a", "r1", 600, "4"), "team-a/a", estimateT0, "10m"))
	f.add(t, estimatePod("team-a", "g1", 60, "2").Gated().Obj())
	if err := f.c.estimates.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.c.EstimatedStart("g1"); !ok {
		t.Fatalf("g1 has no estimate with 2 pods, at the bound")
	}
	f.add(t, estimatePod("team-a", "g2", 30, "2").Gated().Obj())
	if err := f.c.estimates.Once(ctx); err != nil {
		t.Fatal(err)
	}
	for _, uid := range []types.UID{"g1", "g2"} {
		if s, ok := f.c.EstimatedStart(uid); ok {
			t.Errorf("pod %s has an estimate %+v with 3 pods, over the bound of 2", uid, s)
		}
	}
	got := estimatePassMetrics(t, f.c)
	want := estimatePassCounts{Build: 1, Simulate: 1, Gated: 0, Running: 0, Skipped: 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after a pass and a skipped one: the pass metrics (-want +got):\n%s", diff)
	}
}

// estimatePassCounts are what the estimator's pass metrics say: how many passes each
// phase histogram observed, the pods of the last pass, and the skipped passes.
type estimatePassCounts struct {
	Build, Simulate uint64
	Gated, Running  float64
	Skipped         float64
}

func estimatePassMetrics(t *testing.T, c *Controller) estimatePassCounts {
	t.Helper()
	count := func(phase string) uint64 {
		var m dto.Metric
		if err := c.metrics.estimatePass.WithLabelValues(phase).(prometheus.Metric).Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetHistogram().GetSampleCount()
	}
	return estimatePassCounts{
		Build:    count("build"),
		Simulate: count("simulate"),
		Gated:    testutil.ToFloat64(c.metrics.estimatePods.WithLabelValues("gated")),
		Running:  testutil.ToFloat64(c.metrics.estimatePods.WithLabelValues("running")),
		Skipped:  testutil.ToFloat64(c.metrics.estimateSkipped),
	}
}

// Each pass observes how long it built and simulated, and how many pods it saw.
func TestEstimatePassMetrics(t *testing.T) {
	f := newEstimateFixture(t)
	ctx := t.Context()
	f.add(t, runningFor(estimatePod("team-a", "r1", 600, "4"), "team-a/a", estimateT0, "10m"))
	f.add(t, estimatePod("team-a", "g1", 60, "2").Gated().Obj())
	f.add(t, estimatePod("team-a", "g2", 30, "2").Gated().Obj())
	for range 2 {
		if err := f.c.estimates.Once(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := estimatePassCounts{Build: 2, Simulate: 2, Gated: 2, Running: 1}
	if diff := cmp.Diff(want, estimatePassMetrics(t, f.c)); diff != "" {
		t.Errorf("after two passes over 2 gated pods and 1 running: the pass metrics (-want +got):\n%s", diff)
	}
}

// The leader's /debug/queues carries the estimator's estimated starts of the pods in
// its queues, in the visibility API's type; without the estimator it carries none.
func TestDebugQueuesCarriesEstimates(t *testing.T) {
	f := newEstimateFixture(t)
	f.add(t, runningFor(estimatePod("team-a", "r1", 600, "4"), "team-a/a", estimateT0.Add(-2*time.Minute), "10m"))
	g1 := estimatePod("team-a", "g1", 60, "2").Gated().Obj()
	f.add(t, g1)
	if err := f.c.estimates.Once(t.Context()); err != nil {
		t.Fatal(err)
	}
	core := f.c.core
	core.SetNamespace("team-a", map[string]string{v1alpha1.EnabledLabel: "true"})
	core.UpsertBudget(quota.BudgetFromAPI(&v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "a"},
		Spec: v1alpha1.BudgetSpec{Hard: podtest.ParseList("cpu=4")}}))
	core.UpsertPod(quota.NewPod(g1, v1alpha1.SchedulingGate, estimateT0))
	f.c.leading.Store(true)

	read := func(c *Controller) visibility.QueuesSnapshot {
		t.Helper()
		rec := httptest.NewRecorder()
		c.DebugHandlers()["/debug/queues"].ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/queues", nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("/debug/queues answered %d: %s", rec.Code, rec.Body)
		}
		var snap visibility.QueuesSnapshot
		if err := json.Unmarshal(rec.Body.Bytes(), &snap); err != nil {
			t.Fatal(err)
		}
		return snap
	}
	snap := read(f.c)
	if len(snap.Budgets) != 1 || len(snap.Budgets[0].Pods) != 1 {
		t.Fatalf("the snapshot holds %+v, want g1 in team-a/a's queue", snap.Budgets)
	}
	got := snap.EstimatedStarts["g1"]
	if got == nil || got.Median == nil || !got.Median.Time.Equal(estimateT0.Add(8*time.Minute)) {
		t.Errorf("g1's estimated start in the snapshot is %+v, want a median at +8m (r1's end)", got)
	}

	f.c.estimates = nil
	if snap := read(f.c); snap.EstimatedStarts != nil {
		t.Errorf("without the estimator the snapshot carries estimates %+v", snap.EstimatedStarts)
	}
}
