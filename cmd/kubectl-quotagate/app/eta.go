package app

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// The manager's estimate of when a gated pod starts (docs/visibility.md), as queue's ETA
// column and why's "Estimated start" line show it.

// eta is the ETA column: how long until the estimated start (its median), "now" when
// it is due, "unknown" when the manager cannot estimate it, "-" when there is no
// estimate (the estimator is off or has not run, or the queue was read from the
// manager's snapshot).
func eta(e *visv1.EstimatedStart, now time.Time) string {
	switch {
	case e == nil:
		return "-"
	case e.Unknown != "" || e.Median == nil:
		return "unknown"
	}
	return until(now, e.Median.Time)
}

// until is how long from now to t, as kubectl prints ages; "now" when t is less than
// a second away: an estimate's times are whole seconds, rounded (docs/visibility.md).
func until(now, t time.Time) string {
	if t.Sub(now) < time.Second {
		return "now"
	}
	return duration.HumanDuration(t.Sub(now))
}

// EstimateLine is why's line for an estimate: when, its range, and what it rests on;
// "" when there is none. make demo prints its estimates with it too.
func EstimateLine(e *visv1.EstimatedStart, now time.Time) string {
	switch {
	case e == nil:
		return ""
	case e.Unknown != "" || e.Median == nil:
		return fmt.Sprintf("Estimated start: unknown (%s: %s)", e.Unknown, e.Message)
	}
	var b strings.Builder
	b.WriteString("Estimated start: ")
	if when := until(now, e.Median.Time); when == "now" {
		b.WriteString(when)
	} else {
		b.WriteString("in " + when)
	}
	if e.Low != nil && e.High != nil && !e.Low.Equal(e.High) {
		fmt.Fprintf(&b, " (between %s and %s)", until(now, e.Low.Time), until(now, e.High.Time))
	}
	if e.Ends > 0 {
		fmt.Fprintf(&b, ", from %s", podEnds(e.Ends))
	}
	switch {
	case e.Basis != "":
		fmt.Fprintf(&b, " (%s)", e.Basis)
	case e.Samples > 0:
		fmt.Fprintf(&b, ", %d samples at least", e.Samples)
	}
	return b.String()
}

// recordLine is why's line for the track record of the pod's budget: "Estimates in
// Budget team-a/a: median error 40s, 83% within range (166 of 200 pods admitted since
// the manager started at 2026-12-05 07:12 UTC)"; "" when there is none. The record is
// the leader's, in memory: it covers the last pods (at most 200) since it started.
func recordLine(r *visv1.EstimateRecord) string {
	if r == nil || r.Pods <= 0 {
		return ""
	}
	key := quota.BudgetKey{Namespace: r.Namespace, Name: r.Name}
	since := r.Since.UTC().Format("2006-01-02 15:04 UTC")
	return fmt.Sprintf("Estimates in %s: median error %s, %d%% within range (%d of %d pods admitted since the manager started at %s)",
		key.Describe(), (time.Duration(r.MedianErrorSeconds * float64(time.Second))).Round(time.Second), 100*r.WithinRange/r.Pods, r.WithinRange, r.Pods, since)
}

// podEnds is "1 pod end", "12 pod ends".
func podEnds(n int64) string {
	if n == 1 {
		return "1 pod end"
	}
	return fmt.Sprintf("%d pod ends", n)
}
