package controller

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed/eventtest"
)

// Through the estimator's passes: a running pod that declares a longer duration moves
// the estimate of the pod waiting behind it, which is told so.
func TestEstimatorAnnouncesMoves(t *testing.T) {
	f := newEstimateFixture(t)
	rec := &eventtest.PodRecorder{}
	f.c.recorder = rec
	f.c.connectSimulations()
	ctx := t.Context()
	r1 := runningFor(estimatePod("team-a", "r1", 600, "4"), "team-a/a", estimateT0.Add(-2*time.Minute), "10m")
	f.add(t, r1)
	f.add(t, estimatePod("team-a", "g1", 60, "2").Gated().Annotation(v1alpha1.ExpectedDurationAnnotation, "5m").Obj())
	if err := f.c.estimates.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rec.Take(); len(got) != 0 {
		t.Fatalf("events at the first pass: %q, want none", got)
	}
	longer := runningFor(estimatePod("team-a", "r1", 600, "4"), "team-a/a", estimateT0.Add(-2*time.Minute), "1h")
	f.update(t, r1, longer)
	f.clk.Step(DefaultEstimateInterval)
	if err := f.c.estimates.Once(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"team-a/g1: Normal EstimateChanged Estimated start moved later by 50m: now 12:58 UTC, was 12:08 UTC"}
	if diff := cmp.Diff(want, rec.Take()); diff != "" {
		t.Errorf("events after r1 declared 1h (-want +got):\n%s", diff)
	}
}
