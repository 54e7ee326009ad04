package window

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
	_ "time/tzdata" // every IANA zone, in an image without a zone database

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// neverHorizon is how far ahead a schedule must fire at least once: robfig/cron's Next
// gives up after five years, and a schedule that names no instant in them (a 30th of
// February) is reported as never firing.
const neverHorizon = 5 * 365 * 24 * time.Hour

// maxChained bounds how many firings that overlap one another (duration longer than the
// time between them) Evaluate follows to find where an open window closes; past them it
// reports the last end found as the next change, when it looks again.
const maxChained = 1000

// Window is one window of a budget: its name (unique among the windows of the budget:
// they are all of one namespace, or all cluster-scoped) and its spec.
type Window struct {
	Name string
	Spec v1alpha1.BudgetWindowSpec
}

// Problem is why a window changes nothing: Reason is a condition reason of the API
// (v1alpha1.ReasonUnknownTimeZone and the rest), Message the sentence for the user.
type Problem struct {
	Reason  string
	Message string
}

func (p *Problem) Error() string { return p.Reason + ": " + p.Message }

// State is where one window stands at an instant.
type State struct {
	// Open says the window is open.
	Open bool
	// Next is when it next opens or closes; zero when it never will.
	Next time.Time
	// Problem, if not nil, says why the window changes nothing.
	Problem *Problem
}

// parser reads five-field cron expressions, without descriptors (@daily) or a time zone
// prefix: the zone is spec.timeZone.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// StateAt returns where w stands at now.
func StateAt(w v1alpha1.BudgetWindowSpec, now time.Time) State {
	if w.Schedule == "" {
		return absoluteState(w, now)
	}
	sched, p := parse(w)
	if p != nil {
		return State{Problem: p}
	}
	if sched.Next(now).IsZero() {
		return State{Problem: &Problem{Reason: v1alpha1.ReasonScheduleNeverFires,
			Message: fmt.Sprintf("schedule %q fires at no instant in the next %d years", w.Schedule, int(neverHorizon/(365*24*time.Hour)))}}
	}
	return scheduleState(sched, w.Duration.Duration, now, maxChained)
}

// scheduleState is where a repeating window of duration d, opened by each firing of
// sched, stands at now. It follows at most chain firings that overlap one another to
// find where an open window closes; past them, Next is the last end found (the caller
// looks again then, and finds the window still open).
func scheduleState(sched *cron.SpecSchedule, d time.Duration, now time.Time, chain int) State {
	// The firing that may hold the window open now is the first after now-d: one at or
	// before now-d closed by now.
	f := sched.Next(now.Add(-d))
	if f.IsZero() || f.After(now) {
		return State{Next: f}
	}
	end := f.Add(d)
	for range chain {
		n := sched.Next(f)
		if n.IsZero() || n.After(end) {
			break
		}
		f, end = n, n.Add(d)
	}
	return State{Open: true, Next: end}
}

// Check returns why w changes nothing, or nil: the parse of its time zone and schedule
// and whether the schedule ever fires after now.
func Check(w v1alpha1.BudgetWindowSpec, now time.Time) *Problem {
	return StateAt(w, now).Problem
}

func absoluteState(w v1alpha1.BudgetWindowSpec, now time.Time) State {
	if w.Start == nil || w.End == nil || w.Duration != nil {
		return State{Problem: &Problem{Reason: v1alpha1.ReasonInvalidSchedule,
			Message: "set either start and end, or schedule with duration"}}
	}
	start, end := w.Start.Time, w.End.Time
	switch {
	case now.Before(start):
		return State{Next: start}
	case now.Before(end):
		return State{Open: true, Next: end}
	default:
		return State{}
	}
}

// parse reads w's schedule in its time zone. The API server checks the form of both
// (docs/validation.md); what it cannot check, whether the zone exists and the fields
// are in range, is a Problem.
func parse(w v1alpha1.BudgetWindowSpec) (*cron.SpecSchedule, *Problem) {
	zone := w.TimeZone
	if zone == "" {
		zone = "UTC"
	}
	loc, err := loadLocation(zone)
	if err != nil || zone == "Local" {
		return nil, &Problem{Reason: v1alpha1.ReasonUnknownTimeZone,
			Message: fmt.Sprintf("timeZone %q is not an IANA time zone (such as Europe/Berlin or America/New_York)", zone)}
	}
	if w.Duration == nil || w.Duration.Duration <= 0 {
		return nil, &Problem{Reason: v1alpha1.ReasonInvalidSchedule,
			Message: "schedule needs a duration greater than zero"}
	}
	if len(w.Schedule) > 0 && (w.Schedule[0] == '@' || hasZonePrefix(w.Schedule)) {
		return nil, &Problem{Reason: v1alpha1.ReasonInvalidSchedule,
			Message: fmt.Sprintf("schedule %q: want five fields (minute hour day-of-month month day-of-week); the time zone goes in timeZone", w.Schedule)}
	}
	s, err := parser.Parse(w.Schedule)
	if err != nil {
		return nil, &Problem{Reason: v1alpha1.ReasonInvalidSchedule,
			Message: fmt.Sprintf("schedule %q: %v", w.Schedule, err)}
	}
	spec, ok := s.(*cron.SpecSchedule)
	if !ok { // a five-field expression always parses to one
		return nil, &Problem{Reason: v1alpha1.ReasonInvalidSchedule,
			Message: fmt.Sprintf("schedule %q is not a cron expression", w.Schedule)}
	}
	spec.Location = loc
	return spec, nil
}

// locations caches the zones found: time.LoadLocation reads the zone database each
// time, and a start rule is parsed for every view of every pod that carries one. Only
// zones that exist are kept, so the cache holds at most the database's few hundred.
var locations sync.Map // zone name -> *time.Location

func loadLocation(zone string) (*time.Location, error) {
	if l, ok := locations.Load(zone); ok {
		return l.(*time.Location), nil
	}
	l, err := time.LoadLocation(zone)
	if err != nil {
		return nil, err
	}
	locations.Store(zone, l)
	return l, nil
}

func hasZonePrefix(s string) bool {
	for _, p := range []string{"TZ=", "CRON_TZ="} {
		if len(s) >= len(p) && s[:len(p)] == p {
			return true
		}
	}
	return false
}

// Result is what the windows of one budget make of it at an instant.
type Result struct {
	// Spec is the effective spec: the written one with the open windows' fields.
	Spec v1alpha1.BudgetSpec
	// Open names the open windows, the winner first (precedence order).
	Open []string
	// Next is the earliest instant any window opens or closes; zero when none will.
	Next time.Time
	// States is each window's state, by name.
	States map[string]State
}

// Evaluate returns what windows make of the written spec at now. written is not
// modified; Result.Spec shares nothing with it that Evaluate changes.
func Evaluate(written v1alpha1.BudgetSpec, windows []Window, now time.Time) Result {
	res := Result{Spec: written, States: make(map[string]State, len(windows))}
	var open []Window
	for _, w := range windows {
		st := StateAt(w.Spec, now)
		res.States[w.Name] = st
		if st.Problem != nil {
			continue
		}
		if !st.Next.IsZero() && (res.Next.IsZero() || st.Next.Before(res.Next)) {
			res.Next = st.Next
		}
		if st.Open {
			open = append(open, w)
		}
	}
	slices.SortFunc(open, precedes)
	for _, w := range open {
		res.Open = append(res.Open, w.Name)
	}
	if len(open) == 0 {
		return res
	}
	res.Spec.Hard = effectiveHard(written.Hard, open)
	res.Spec.BorrowingLimit = overlay(written.BorrowingLimit, open, func(s *v1alpha1.BudgetWindowSpec) corev1.ResourceList { return s.BorrowingLimit })
	res.Spec.LendingLimit = overlay(written.LendingLimit, open, func(s *v1alpha1.BudgetWindowSpec) corev1.ResourceList { return s.LendingLimit })
	for _, w := range open {
		if w.Spec.State != "" {
			res.Spec.State = w.Spec.State
			break
		}
	}
	return res
}

// precedes orders windows by precedence: the higher priority first, then the name that
// sorts first.
func precedes(a, b Window) int {
	if c := cmp.Compare(b.Spec.Priority, a.Spec.Priority); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// effectiveHard is written's hard with, per resource, the first of open (in precedence
// order) that names it in hard (the value) or add (added to written's). add on a
// resource written does not limit changes nothing: it stays unlimited.
func effectiveHard(written corev1.ResourceList, open []Window) corev1.ResourceList {
	out := maps.Clone(written)
	decided := map[corev1.ResourceName]bool{}
	for _, w := range open {
		for name, q := range w.Spec.Hard {
			if decided[name] {
				continue
			}
			decided[name] = true
			if out == nil {
				out = corev1.ResourceList{}
			}
			out[name] = q.DeepCopy()
		}
		for name, q := range w.Spec.Add {
			if decided[name] {
				continue
			}
			decided[name] = true
			base, ok := written[name]
			if !ok {
				continue
			}
			sum := base.DeepCopy()
			sum.Add(q)
			out[name] = sum
		}
	}
	return out
}

// overlay is written with, per resource, the value of the first of open that names it
// in the list field picks.
func overlay(written corev1.ResourceList, open []Window, field func(*v1alpha1.BudgetWindowSpec) corev1.ResourceList) corev1.ResourceList {
	out := maps.Clone(written)
	decided := map[corev1.ResourceName]bool{}
	for _, w := range open {
		for name, q := range field(&w.Spec) {
			if decided[name] {
				continue
			}
			decided[name] = true
			if out == nil {
				out = corev1.ResourceList{}
			}
			out[name] = q.DeepCopy()
		}
	}
	return out
}
