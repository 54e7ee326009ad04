package estimator

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/quotagate/quotagate/internal/testbed/eventtest"
	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/quota"
)

// eventT0 is 10:00 UTC, the clock of the event tests' first pass.
var eventT0 = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)

// startAt is pod name's known start at the given minutes after eventT0: median, low
// and high.
func startAt(name string, median, low, high int) estimate.Start {
	m := func(n int) time.Time { return eventT0.Add(time.Duration(n) * time.Minute) }
	return estimate.Start{Pod: quota.PodRef{UID: types.UID(name), Namespace: "team-a", Name: name}, Known: true,
		Median: m(median), Low: m(low), High: m(high)}
}

// unknownStart is pod name's start, unknown for want of history.
func unknownStart(name string) estimate.Start {
	return estimate.Start{Pod: quota.PodRef{UID: types.UID(name), Namespace: "team-a", Name: name},
		Unknown: estimate.UnknownNoHistory, Reason: "it waits for quota held by pods with no expected end"}
}

func starts(s ...estimate.Start) map[types.UID]estimate.Start {
	m := make(map[types.UID]estimate.Start, len(s))
	for _, x := range s {
		m[x.Pod.UID] = x
	}
	return m
}

// newEventEstimator is an estimator whose events rec records.
func newEventEstimator(t *testing.T) (*Estimator, *eventtest.PodRecorder) {
	t.Helper()
	e := New(&Settings{Clock: clock.RealClock{}}, DefaultInterval, nil)
	rec := &eventtest.PodRecorder{}
	e.recorder = rec
	return e, rec
}

// A pass's estimates against the ones before them: a pod's first estimate is no event;
// a move of its median over max(10m, half the wait announced) is, later or earlier; a
// smaller move is not; becoming unknown or known is.
func TestEstimateChangedEvents(t *testing.T) {
	tests := map[string]struct {
		first, then estimate.Start
		after       time.Duration // from the first pass to the second
		want        []string
	}{
		"first estimate": {
			then: startAt("p", 5, 5, 5),
		},
		"big move later": {
			first: startAt("p", 5, 5, 5), then: startAt("p", 42, 30, 65), after: 5 * time.Second,
			want: []string{"team-a/p: Normal EstimateChanged Estimated start moved later by 37m: now 10:42 UTC (range 10:30–11:05), was 10:05 UTC"},
		},
		"big move earlier": {
			first: startAt("p", 120, 100, 140), then: startAt("p", 30, 30, 30), after: time.Minute,
			want: []string{"team-a/p: Normal EstimateChanged Estimated start moved earlier by 1h30m: now 10:30 UTC, was 12:00 UTC"},
		},
		"move under the 10m floor": {
			first: startAt("p", 5, 5, 5), then: startAt("p", 14, 14, 14),
		},
		"move under half the wait announced": {
			// 4h announced: a move of 1h59m is under half of it.
			first: startAt("p", 240, 240, 240), then: startAt("p", 359, 359, 359),
		},
		"move over half the wait announced, counted from its pass": {
			// At 10:00 it announced 1h; 31m later an estimate is 31m later.
			first: startAt("p", 60, 60, 60), then: startAt("p", 91, 91, 91), after: 31 * time.Minute,
			want: []string{"team-a/p: Normal EstimateChanged Estimated start moved later by 31m: now 11:31 UTC, was 11:00 UTC"},
		},
		"known to unknown": {
			first: startAt("p", 5, 5, 5), then: unknownStart("p"),
			want: []string{"team-a/p: Normal EstimateChanged Estimated start is now unknown (NoHistory: it waits for quota held by pods with no expected end), was 10:05 UTC"},
		},
		"unknown to known": {
			first: unknownStart("p"), then: startAt("p", 90, 80, 24*60+30),
			want: []string{"team-a/p: Normal EstimateChanged Estimated start is now known: 11:30 UTC (range 11:20–2026-01-02 10:30), was unknown (NoHistory)"},
		},
		"unknown stays unknown": {
			first: unknownStart("p"), then: unknownStart("p"),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e, rec := newEventEstimator(t)
			if tc.first.Pod.UID != "" {
				e.announce(starts(tc.first), eventT0)
				if got := rec.Take(); len(got) != 0 {
					t.Fatalf("events for a first estimate: %q", got)
				}
			}
			e.announce(starts(tc.then), eventT0.Add(tc.after))
			if diff := cmp.Diff(tc.want, rec.Take()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// A pod gets at most one event per 10 minutes; a move held back is announced at the
// first pass after, measured from the estimate last reported.
func TestEstimateChangedRateLimit(t *testing.T) {
	e, rec := newEventEstimator(t)
	e.announce(starts(startAt("p", 5, 5, 5)), eventT0)
	e.announce(starts(startAt("p", 30, 30, 30)), eventT0.Add(time.Minute))
	if got := rec.Take(); len(got) != 1 {
		t.Fatalf("events after a move of 25m: %q, want one", got)
	}
	// 9m after the event it moves again: held back.
	e.announce(starts(startAt("p", 60, 60, 60)), eventT0.Add(10*time.Minute))
	if got := rec.Take(); len(got) != 0 {
		t.Errorf("events 9m after the last one: %q, want none", got)
	}
	// 10m after: announced against 10:30, the estimate the last event reported.
	e.announce(starts(startAt("p", 61, 61, 61)), eventT0.Add(11*time.Minute))
	want := []string{"team-a/p: Normal EstimateChanged Estimated start moved later by 31m: now 11:01 UTC, was 10:30 UTC"}
	if diff := cmp.Diff(want, rec.Take()); diff != "" {
		t.Errorf("events 10m after the last one (-want +got):\n%s", diff)
	}
}

// One pass announces at most its cap, the largest moves first (a transition above any
// move); the others keep their baselines and are announced at the next pass.
func TestEstimateChangedCapPerPass(t *testing.T) {
	e, rec := newEventEstimator(t)
	e.notices.perPass = 2
	e.announce(starts(startAt("small", 5, 5, 5), startAt("large", 5, 5, 5), startAt("gone", 5, 5, 5), startAt("quiet", 5, 5, 5)), eventT0)
	e.announce(starts(startAt("small", 20, 20, 20), startAt("large", 200, 200, 200), unknownStart("gone"), startAt("quiet", 6, 6, 6)), eventT0.Add(time.Minute))
	want := []string{
		"team-a/gone: Normal EstimateChanged Estimated start is now unknown (NoHistory: it waits for quota held by pods with no expected end), was 10:05 UTC",
		"team-a/large: Normal EstimateChanged Estimated start moved later by 3h15m: now 13:20 UTC, was 10:05 UTC",
	}
	if diff := cmp.Diff(want, rec.Take()); diff != "" {
		t.Errorf("the first pass's events (-want +got):\n%s", diff)
	}
	e.announce(starts(startAt("small", 20, 20, 20), startAt("large", 200, 200, 200), unknownStart("gone"), startAt("quiet", 6, 6, 6)), eventT0.Add(2*time.Minute))
	want = []string{"team-a/small: Normal EstimateChanged Estimated start moved later by 15m: now 10:20 UTC, was 10:05 UTC"}
	if diff := cmp.Diff(want, rec.Take()); diff != "" {
		t.Errorf("the next pass's events (-want +got):\n%s", diff)
	}
}

// A skipped pass forgets every baseline: the estimates of the pass after are first
// estimates, and no event.
func TestEstimateChangedAfterSkippedPass(t *testing.T) {
	e, rec := newEventEstimator(t)
	e.announce(starts(startAt("p", 5, 5, 5)), eventT0)
	e.announce(nil, eventT0.Add(time.Minute))
	e.announce(starts(startAt("p", 300, 300, 300)), eventT0.Add(2*time.Minute))
	if got := rec.Take(); len(got) != 0 {
		t.Errorf("events after a skipped pass: %q, want none", got)
	}
}
