package window

import (
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// Start is when gated work may start: not before NotBefore, and, with a schedule, only
// while one of its windows is open (each firing opens one for Duration, read in
// TimeZone). A pod's annotations or a budget's spec.start give one
// (docs/start-control.md). Build it with NewStart; it is read-only once built, and
// safe to share.
type Start struct {
	NotBefore time.Time
	Schedule  string
	Duration  time.Duration
	TimeZone  string

	sched *cron.SpecSchedule
	loc   *time.Location
}

// startChained bounds the overlapping firings At follows, lower than a window's
// (maxChained): any tenant may write a start rule on its pods, and the core asks At of
// each such pod when it places it, under the lock every admission takes. A schedule
// that fires every minute with a duration of weeks costs 16 steps of the schedule, not
// a thousand; the pod is looked at again after them and is still inside its window.
const startChained = 16

// NewStart checks and builds a start rule. notBefore may be zero, and schedule empty
// (then duration and zone must be too); nil and no problem when both are: there is
// nothing to wait for.
func NewStart(notBefore time.Time, schedule string, duration time.Duration, zone string) (*Start, *Problem) {
	if schedule == "" {
		if duration != 0 || zone != "" {
			return nil, &Problem{Reason: v1alpha1.ReasonInvalidSchedule,
				Message: "a duration or time zone needs a schedule"}
		}
		if notBefore.IsZero() {
			return nil, nil
		}
		return &Start{NotBefore: notBefore}, nil
	}
	spec := v1alpha1.BudgetWindowSpec{Schedule: schedule, Duration: &metav1.Duration{Duration: duration}, TimeZone: zone}
	sched, p := parse(spec)
	if p != nil {
		return nil, p
	}
	if sched.Next(time.Now()).IsZero() {
		return nil, &Problem{Reason: v1alpha1.ReasonScheduleNeverFires,
			Message: fmt.Sprintf("schedule %q fires at no instant in the next %d years", schedule, int(neverHorizon/(365*24*time.Hour)))}
	}
	if zone == "" {
		zone = "UTC"
	}
	return &Start{NotBefore: notBefore, Schedule: schedule, Duration: duration, TimeZone: zone, sched: sched, loc: sched.Location}, nil
}

// StartFromAPI builds the start rule of a budget's spec.start (nil for none).
func StartFromAPI(s *v1alpha1.StartRule) (*Start, *Problem) {
	if s == nil {
		return nil, nil
	}
	var notBefore time.Time
	if s.NotBefore != nil {
		notBefore = s.NotBefore.Time
	}
	var d time.Duration
	if s.Duration != nil {
		d = s.Duration.Duration
	}
	if s.Schedule != "" && d <= 0 {
		return nil, &Problem{Reason: v1alpha1.ReasonInvalidSchedule, Message: "schedule needs a duration greater than zero"}
	}
	return NewStart(notBefore, s.Schedule, d, s.TimeZone)
}

// At says whether work may start at now, and when that next changes: when it may start
// (closed), or when its schedule's window closes (open); zero when it never changes
// again. A nil rule is always open.
func (s *Start) At(now time.Time) (open bool, next time.Time) {
	if s == nil {
		return true, time.Time{}
	}
	if now.Before(s.NotBefore) {
		if s.sched == nil {
			return false, s.NotBefore
		}
		// Closed until NotBefore, then as the schedule stands then.
		if st := scheduleState(s.sched, s.Duration, s.NotBefore, startChained); st.Open {
			return false, s.NotBefore
		}
		return false, s.sched.Next(s.NotBefore)
	}
	if s.sched == nil {
		return true, time.Time{}
	}
	st := scheduleState(s.sched, s.Duration, now, startChained)
	return st.Open, st.Next
}

// Describe says when work held by the rule at now may start, for a reason: "not
// before 2026-12-06T22:00:00Z", "inside 0 22 * * * for 8h (Europe/Berlin): opens
// 2026-12-06 22:00 CET".
func (s *Start) Describe(now time.Time) string {
	open, next := s.At(now)
	if s.sched == nil {
		return "not before " + s.NotBefore.UTC().Format(time.RFC3339)
	}
	when := "never opens again"
	if !next.IsZero() {
		verb := "opens"
		if open {
			verb = "closes"
		}
		when = verb + " " + next.In(s.loc).Format("2006-01-02 15:04 MST")
	}
	out := fmt.Sprintf("inside %q for %s (%s): %s", s.Schedule, s.Duration, s.TimeZone, when)
	if !s.NotBefore.IsZero() && now.Before(s.NotBefore) {
		out = "not before " + s.NotBefore.UTC().Format(time.RFC3339) + ", then " + out
	}
	return out
}

// Equal reports whether two rules say the same.
func (s *Start) Equal(o *Start) bool {
	if s == nil || o == nil {
		return s == o
	}
	return s.NotBefore.Equal(o.NotBefore) && s.Schedule == o.Schedule && s.Duration == o.Duration && s.TimeZone == o.TimeZone
}
