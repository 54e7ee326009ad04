package estimator

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/quota"
)

// EstimateChanged events tell a gated pod's owner that its estimated start moved a lot,
// so that `kubectl describe pod` and `kubectl events` answer "when will my pod start?"
// without the visibility API. After each pass, a pod gets one when, since the estimate
// last reported to it:
//   - its known median moved by more than max(10 minutes, half the wait that estimate
//     still announced when it was reported), later or earlier;
//   - or it became unknown after being known, or known after being unknown (a change of
//     the unknown reason alone is no event).
//
// The first estimate a pod gets is reported to it silently: it is the baseline, not a
// change. So is every estimate of a leader's first pass, and of the first pass after one
// skipped over --estimate-max-pods (a skipped pass forgets every baseline): a new leader
// or a bound crossed does not send an event to every gated pod.
//
// Cost is bounded twice: at most estimateEventsPerPass events per pass, the largest moves
// first (a transition to or from unknown ranks above any move), and at most one per pod
// per estimateEventInterval. A pod held back keeps its baseline, and gets its event at a
// later pass if its estimate is still far from it. An event names only the pod's own
// times and reason, never another pod.

const (
	// estimateEventsPerPass is the most EstimateChanged events one pass emits.
	estimateEventsPerPass = 50
	// estimateEventInterval is the least time between two EstimateChanged events of a pod.
	estimateEventInterval = 10 * time.Minute
	// estimateMoveFloor is the least move of a known median worth an event.
	estimateMoveFloor = 10 * time.Minute
)

// eventEstimateChanged is the reason of the event.
const eventEstimateChanged = "EstimateChanged"

// notices remembers the estimate last reported to each gated pod. It is used
// only by the estimator's loop, one pass after another, and so has no lock.
type notices struct {
	perPass  int
	interval time.Duration
	pods     map[types.UID]noticed
}

// noticed is the estimate last reported to a pod (the first one it got, or the
// one its last event announced), when the pass that made it ran, and when the last
// event was emitted (zero for none).
type noticed struct {
	start   estimate.Start
	at      time.Time
	evented time.Time
}

// change is an estimate worth an event: the one reported before (was) and the
// new one (now); by ranks it, the median's move, or a transition to or from unknown
// above any move.
type change struct {
	was, now noticed
	by       time.Duration
}

// transitionRank ranks a transition to or from unknown above any move.
const transitionRank = time.Duration(1<<63 - 1)

func newNotices() *notices {
	return &notices{perPass: estimateEventsPerPass, interval: estimateEventInterval}
}

// changed is how far s moved from the estimate last reported, and whether that is worth
// an event.
func (n noticed) changed(s estimate.Start) (time.Duration, bool) {
	was := n.start
	switch {
	case was.Known != s.Known:
		return transitionRank, true
	case !s.Known:
		return 0, false
	}
	by := absDuration(s.Median.Sub(was.Median))
	waited := max(was.Median.Sub(n.at), 0)
	return by, by > max(estimateMoveFloor, waited/2)
}

// pass takes a pass's starts (nil for a skipped pass) at now, and returns the changes to
// announce, largest first; it records them as reported, and forgets the pods the pass
// did not see.
func (e *notices) pass(starts map[types.UID]estimate.Start, now time.Time) []change {
	next := make(map[types.UID]noticed, len(starts))
	var changes []change
	for uid, s := range starts {
		prev, seen := e.pods[uid]
		if !seen {
			next[uid] = noticed{start: s, at: now}
			continue
		}
		next[uid] = prev
		if !prev.evented.IsZero() && now.Sub(prev.evented) < e.interval {
			continue
		}
		if by, ok := prev.changed(s); ok {
			changes = append(changes, change{was: prev, now: noticed{start: s, at: now, evented: now}, by: by})
		}
	}
	slices.SortFunc(changes, func(a, b change) int {
		return cmp.Or(cmp.Compare(b.by, a.by), a.now.start.Pod.Compare(b.now.start.Pod))
	})
	if len(changes) > e.perPass {
		changes = changes[:e.perPass]
	}
	for _, c := range changes {
		next[c.now.start.Pod.UID] = c.now
	}
	e.pods = next
	return changes
}

// message is the event's sentence: the pod's new estimate and the one reported before.
func (c change) message() string {
	was, now := c.was.start, c.now.start
	at := c.now.at
	switch {
	case was.Known && now.Known:
		dir := "later"
		if now.Median.Before(was.Median) {
			dir = "earlier"
		}
		return fmt.Sprintf("Estimated start moved %s by %s: now %s, was %s", dir, shortDuration(c.by),
			knownStart(now, at), clockTime(was.Median, at))
	case now.Known:
		return fmt.Sprintf("Estimated start is now known: %s, was unknown (%s)", knownStart(now, at), was.Unknown)
	default:
		return fmt.Sprintf("Estimated start is now unknown (%s: %s), was %s", now.Unknown, now.Reason, clockTime(was.Median, at))
	}
}

// knownStart is a known start's median and, when they differ, its range:
// "10:42 UTC (range 10:30–11:05)".
func knownStart(s estimate.Start, now time.Time) string {
	m := clockTime(s.Median, now)
	if s.Low.Equal(s.High) {
		return m
	}
	return fmt.Sprintf("%s (range %s–%s)", m, wallClock(s.Low, now), wallClock(s.High, now))
}

// clockTime is t in UTC to the minute, "10:42 UTC", with its date when it is not now's
// day.
func clockTime(t, now time.Time) string { return wallClock(t, now) + " UTC" }

// wallClock is clockTime without its zone.
func wallClock(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	if y, m, d := t.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return t.Format("15:04")
	}
	return t.Format("2006-01-02 15:04")
}

// shortDuration is d to the minute: 37m, 2h5m, 26h0m.
func shortDuration(d time.Duration) string {
	d = d.Round(time.Minute)
	if d < time.Hour {
		return fmt.Sprintf("%dm", int(d.Minutes()))
	}
	return fmt.Sprintf("%dh%dm", int(d.Hours()), int(d.Minutes())%60)
}

// podRef is the pod an event is about.
func podRef(ref quota.PodRef) *corev1.Pod {
	pod := &corev1.Pod{}
	pod.Namespace, pod.Name, pod.UID = ref.Namespace, ref.Name, ref.UID
	pod.APIVersion, pod.Kind = "v1", "Pod"
	return pod
}

// announce emits the EstimateChanged events of a pass's starts (nil for a skipped
// pass) made at now.
func (e *Estimator) announce(starts map[types.UID]estimate.Start, now time.Time) {
	for _, ch := range e.notices.pass(starts, now) {
		e.recorder.Eventf(podRef(ch.now.start.Pod), nil, corev1.EventTypeNormal, eventEstimateChanged, "Estimate", "%s", ch.message())
	}
}
