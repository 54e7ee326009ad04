package controller

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// podEventRecorder records each event as "namespace/name: type reason note".
type podEventRecorder struct {
	*events.FakeRecorder
	got []string
}

func (r *podEventRecorder) Eventf(regarding, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	pod := regarding.(*corev1.Pod)
	r.got = append(r.got, fmt.Sprintf("%s/%s: %s %s %s", pod.Namespace, pod.Name, eventtype, reason, fmt.Sprintf(note, args...)))
}

// take returns the events recorded since the last call, sorted.
func (r *podEventRecorder) take() []string {
	got := r.got
	r.got = nil
	slices.Sort(got)
	return got
}

// Through the estimator's passes: a running pod that declares a longer duration moves
// the estimate of the pod waiting behind it, which is told so.
func TestEstimatorAnnouncesMoves(t *testing.T) {
	f := newEstimateFixture(t)
	rec := &podEventRecorder{FakeRecorder: events.NewFakeRecorder(0)}
	f.c.recorder = rec
	f.c.connectSimulations()
	ctx := t.Context()
	r1 := runningFor(estimatePod("team-a", "r1", 600, "4"), "team-a/a", estimateT0.Add(-2*time.Minute), "10m")
	f.add(t, r1)
	f.add(t, estimatePod("team-a", "g1", 60, "2").Gated().Annotation(v1alpha1.ExpectedDurationAnnotation, "5m").Obj())
	if err := f.c.estimates.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("events at the first pass: %q, want none", got)
	}
	longer := runningFor(estimatePod("team-a", "r1", 600, "4"), "team-a/a", estimateT0.Add(-2*time.Minute), "1h")
	f.update(t, r1, longer)
	f.clk.Step(DefaultEstimateInterval)
	if err := f.c.estimates.Once(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"team-a/g1: Normal EstimateChanged Estimated start moved later by 50m: now 12:58 UTC, was 12:08 UTC"}
	if diff := cmp.Diff(want, rec.take()); diff != "" {
		t.Errorf("events after r1 declared 1h (-want +got):\n%s", diff)
	}
}
