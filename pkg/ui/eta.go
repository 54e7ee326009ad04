package ui

import (
	"context"
	"fmt"
	"strings"
	"time"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/pkg/visibility"
	"k8s.io/client-go/rest"
)

// The manager's estimate of when a gated pod starts (docs/visibility.md, Estimated
// start), as the queue's "Estimated start" column and the pod's page show it. Both read
// it from the visibility API with the user's credentials: the queue's page carries each
// pod's estimatedStart, and the pod's page reads the pod's PendingPodStatus.

// startView is an estimated start on a page: Text is what the cell says ("in 12m",
// "due now", "unknown: NoHistory", "no estimate"), Title what its tooltip adds (the
// absolute time and the range, or the sentence of an unknown start), and DateTime the
// median in RFC 3339 for a <time> element ("" without a known start).
type startView struct {
	Text, Title, DateTime string
}

// startOf is how e, read at now, is shown.
func startOf(e *visv1.EstimatedStart, now time.Time) startView {
	switch {
	case e == nil:
		return startView{Text: "no estimate", Title: "The manager has no estimate for this pod: its estimator is off or has not run since the pod was created."}
	case e.Unknown != "" || e.Median == nil:
		return startView{Text: "unknown: " + e.Unknown, Title: e.Message}
	}
	median := e.Median.Time
	v := startView{DateTime: median.UTC().Format(time.RFC3339)}
	if d := median.Sub(now); d >= time.Second { // its times are whole seconds, rounded
		v.Text = "in " + humanDuration(d)
	} else {
		v.Text = "due now"
	}
	var t strings.Builder
	fmt.Fprintf(&t, "Estimated start %s", localClock(median))
	if e.Low != nil && e.High != nil && !e.Low.Equal(e.High) {
		fmt.Fprintf(&t, ", between %s and %s", localClock(e.Low.Time), localClock(e.High.Time))
	}
	if e.Ends > 0 {
		fmt.Fprintf(&t, ", after %d pod end", e.Ends)
		if e.Ends > 1 {
			t.WriteString("s")
		}
	}
	if e.Samples > 0 {
		fmt.Fprintf(&t, ", durations learned from %d finished pods at least", e.Samples)
	}
	v.Title = t.String()
	return v
}

// clockLayout is the one way the page writes a time, 24-hour, to the second: in the
// estimated starts, a pod's history, its events' Last seen, and (written by app.js, in
// the browser's local time, the same machine's) when the view last updated.
const clockLayout = "2006-01-02 15:04:05"

// localClock is t in the local time of the machine that serves the page (the user's:
// `kubectl quotagate ui` runs there), as clockLayout writes it.
func localClock(t time.Time) string { return t.Local().Format(clockLayout) }

// podStatusReader reads a gated pod's PendingPodStatus from the visibility API.
type podStatusReader func(ctx context.Context, namespace, name string) (*visv1.PendingPodStatus, error)

// visibilityPodStatus reads it with rc, a REST client of the user's rest config.
func visibilityPodStatus(rc rest.Interface) podStatusReader {
	return visibility.NewClient(rc).PodStatus
}
