package hours

import (
	"fmt"
	"maps"
	"math"
	"sort"
	"strings"
	"time"
	_ "time/tzdata" // every IANA zone, in an image without a zone database

	corev1 "k8s.io/api/core/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// Spec is a budget's usageLimits as the ledger uses it.
type Spec struct {
	// Limits are the resource-hours per resource, keyed as the budget's charges are
	// (the caller normalizes the names as it normalizes hard).
	Limits map[corev1.ResourceName]float64
	// Exactly one of Period (with Location), RollingDays and HalfLife is set.
	Period      v1alpha1.UsagePeriod
	Location    *time.Location
	RollingDays int
	HalfLife    time.Duration
	// DefaultMaxRuntime is the maximum runtime of a pod that declares none (0: such a
	// pod may not be admitted).
	DefaultMaxRuntime time.Duration
	// Evict: a pod that outruns its maximum runtime is evicted (Exhaustion Evict).
	Evict bool
	// DecayStepsGrow: under HalfLife, the steps at which what fits is looked at again as
	// used decays (NextChange) grow with the time since the ledger was made. It has no
	// field in the API: the estimator's simulations (pkg/estimate) set it, so that a
	// pod that waits months for used to decay is some 200 simulated moments, not
	// tens of thousands, each at most a sixteenth of its wait later than the core's.
	DecayStepsGrow bool
}

// FromAPI converts usageLimits; names normalizes a resource name as hard's are. A
// time zone the manager does not know is reported in problem (the core makes the
// budget invalid with it, and the spec counts in UTC meanwhile), as is anything the CRD
// should have refused.
func FromAPI(u *v1alpha1.UsageLimits, names func(corev1.ResourceName) corev1.ResourceName) (s Spec, problem string) {
	s = Spec{Limits: map[corev1.ResourceName]float64{}, Period: u.Period, RollingDays: int(u.RollingDays), Location: time.UTC,
		Evict: u.Exhaustion == v1alpha1.ExhaustionEvict}
	var problems []string
	for r, q := range u.Hours {
		v := q.AsApproximateFloat64()
		if q.Sign() < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			problems = append(problems, fmt.Sprintf("hours of %s must be a finite amount, not negative (%s)", r, q.String()))
			v = 0
		}
		if prev, seen := s.Limits[names(r)]; !seen || v < prev {
			s.Limits[names(r)] = v // cpu and requests.cpu both: the smaller, as hard
		}
	}
	if u.HalfLife != nil {
		s.HalfLife = u.HalfLife.Duration
	}
	if u.DefaultMaxRuntime != nil && u.DefaultMaxRuntime.Duration > 0 {
		s.DefaultMaxRuntime = u.DefaultMaxRuntime.Duration
	}
	if u.TimeZone != "" {
		loc, err := time.LoadLocation(u.TimeZone)
		if err != nil || strings.HasPrefix(u.TimeZone, "/") {
			problems = append(problems, fmt.Sprintf("unknown time zone %q: hours are counted in UTC", u.TimeZone))
		} else {
			s.Location = loc
		}
	}
	if n := boolCount(s.Period != "", s.RollingDays > 0, s.HalfLife > 0); n != 1 {
		problems = append(problems, "set exactly one of period, rollingDays and halfLife")
		if n == 0 {
			s.Period = v1alpha1.PeriodMonth // counted somehow: never unlimited by a typo
		}
	}
	sort.Strings(problems)
	return s, strings.Join(problems, "; ")
}

func boolCount(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// calendar reports whether used is reset at the end of calendar periods.
func (s *Spec) calendar() bool { return s.Period != "" && s.RollingDays == 0 && s.HalfLife == 0 }

// periodOf returns the calendar period that holds t: [start, end).
func (s *Spec) periodOf(t time.Time) (start, end time.Time) {
	lt := t.In(s.Location)
	y, m, d := lt.Date()
	switch s.Period {
	case v1alpha1.PeriodDay:
		start = time.Date(y, m, d, 0, 0, 0, 0, s.Location)
		end = time.Date(y, m, d+1, 0, 0, 0, 0, s.Location)
	case v1alpha1.PeriodWeek:
		back := (int(lt.Weekday()) + 6) % 7 // days since Monday
		start = time.Date(y, m, d-back, 0, 0, 0, 0, s.Location)
		end = time.Date(y, m, d-back+7, 0, 0, 0, 0, s.Location)
	default:
		start = time.Date(y, m, 1, 0, 0, 0, 0, s.Location)
		end = time.Date(y, m+1, 1, 0, 0, 0, 0, s.Location)
	}
	return start, end
}

// periodName names the period that starts at start, as statuses and messages show it.
func (s *Spec) periodName(start time.Time) string {
	switch {
	case s.HalfLife > 0:
		return "decayed, half-life " + s.HalfLife.String()
	case s.RollingDays > 0:
		if s.RollingDays == 1 {
			return "last day"
		}
		return fmt.Sprintf("last %d days", s.RollingDays)
	}
	lt := start.In(s.Location)
	switch s.Period {
	case v1alpha1.PeriodDay:
		return lt.Format("2006-01-02")
	case v1alpha1.PeriodWeek:
		y, w := lt.ISOWeek()
		return fmt.Sprintf("%d-W%02d", y, w)
	default:
		return lt.Format("2006-01")
	}
}

// sameCounting reports whether a ledger kept for s may go on for t: the same way of
// counting, so what was used still means the same.
func (s *Spec) sameCounting(t *Spec) bool {
	return s.Period == t.Period && s.RollingDays == t.RollingDays && s.HalfLife == t.HalfLife &&
		s.Location.String() == t.Location.String()
}

// MaxRuntime is the maximum runtime a pod is charged hours for: the shorter of its
// activeDeadlineSeconds and what it declares (declared, 0 for none), else the budget's
// default; ok is false when there is none.
func (s *Spec) MaxRuntime(activeDeadline, declared time.Duration) (time.Duration, bool) {
	d := declared
	if activeDeadline > 0 && (d == 0 || activeDeadline < d) {
		d = activeDeadline
	}
	if d == 0 {
		d = s.DefaultMaxRuntime
	}
	return d, d > 0
}

// Equal reports whether two specs count and limit the same.
func (s *Spec) Equal(o *Spec) bool {
	return s.sameCounting(o) && maps.Equal(s.Limits, o.Limits) && s.DefaultMaxRuntime == o.DefaultMaxRuntime && s.Evict == o.Evict &&
		s.DecayStepsGrow == o.DecayStepsGrow
}
