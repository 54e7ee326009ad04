package hours

import (
	"maps"
	"math"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The time side of a Ledger: the period counted and its turns, folding what running
// pods use into used (per calendar period, per UTC day of a rolling window, or
// decayed), and what it holds as a State for the status and back.

// reset forgets what was used, and starts counting at now.
func (l *Ledger) reset(now time.Time) {
	l.used, l.days = map[corev1.ResourceName]float64{}, nil
	if l.spec.RollingDays > 0 {
		l.days = map[string]map[corev1.ResourceName]float64{}
	}
	if l.spec.calendar() {
		l.periodStart, l.periodEnd = l.spec.periodOf(now)
	} else {
		l.periodStart, l.periodEnd = time.Time{}, time.Time{}
	}
}

func (l *Ledger) restore(st *State, now time.Time) {
	asOf := st.AsOf
	if asOf.After(now) {
		asOf = now // a clock that went back: count nothing twice
	}
	l.counted = asOf
	switch {
	case l.spec.calendar():
		if !st.PeriodStart.Equal(l.periodStart) {
			return // a period that ended: its hours are forgotten
		}
		l.used = clean(st.Used)
	case l.spec.HalfLife > 0:
		f := decay(now.Sub(asOf), l.spec.HalfLife)
		for r, v := range clean(st.Used) {
			l.used[r] = v * f
		}
	default:
		for _, d := range st.Days {
			l.days[d.Date] = clean(d.Used)
		}
		l.prune(now)
	}
}

// clean keeps the finite, positive amounts of m.
func clean(m map[corev1.ResourceName]float64) map[corev1.ResourceName]float64 {
	out := map[corev1.ResourceName]float64{}
	for r, v := range m {
		if v > 0 && !math.IsInf(v, 0) {
			out[r] = v
		}
	}
	return out
}

// Advance folds what the running pods used up to now into used, and starts a new
// period when one ended. Time never goes back: an earlier now is ignored.
func (l *Ledger) Advance(now time.Time) {
	if !now.After(l.at) {
		return
	}
	for l.spec.calendar() && !now.Before(l.periodEnd) {
		l.fold(l.periodEnd)
		l.used = map[corev1.ResourceName]float64{}
		l.periodStart, l.periodEnd = l.periodEnd, l.spec.periodEndAfter(l.periodEnd)
	}
	l.fold(now)
	if l.days != nil {
		l.prune(now)
	}
	maps.DeleteFunc(l.ended, func(_ types.UID, t time.Time) bool { return now.Sub(t) > time.Hour })
}

// periodEndAfter is the end of the calendar period that starts at start.
func (s *Spec) periodEndAfter(start time.Time) time.Time {
	_, end := s.periodOf(start)
	return end
}

// fold adds what every run used over (at, t] and moves at to t.
func (l *Ledger) fold(t time.Time) {
	if !t.After(l.at) {
		return
	}
	if l.spec.HalfLife > 0 {
		f := decay(t.Sub(l.at), l.spec.HalfLife)
		for r := range l.used {
			l.used[r] *= f
		}
	}
	from := l.at
	l.at = t
	if len(l.runs) > 0 {
		l.add(l.rate, from, t)
	}
}

// add counts rate used over [t0, t1], t1 not after at.
func (l *Ledger) add(rate map[corev1.ResourceName]float64, t0, t1 time.Time) {
	switch {
	case l.spec.HalfLife > 0:
		// ∫ rate·2^(-(at-τ)/h) dτ over [t0, t1] = rate·h/ln2·(2^(-(at-t1)/h) - 2^(-(at-t0)/h))
		h := l.spec.HalfLife.Hours()
		w := h / math.Ln2 * (decay(l.at.Sub(t1), l.spec.HalfLife) - decay(l.at.Sub(t0), l.spec.HalfLife))
		if w <= 0 {
			return
		}
		for r, v := range rate {
			l.used[r] += v * w
		}
	case l.days != nil:
		for t0.Before(t1) {
			u := t0.UTC()
			next := time.Date(u.Year(), u.Month(), u.Day()+1, 0, 0, 0, 0, time.UTC)
			stop := t1
			if next.Before(stop) {
				stop = next
			}
			day := l.days[u.Format(time.DateOnly)]
			if day == nil {
				day = map[corev1.ResourceName]float64{}
				l.days[u.Format(time.DateOnly)] = day
			}
			for r, v := range rate {
				day[r] += v * stop.Sub(t0).Hours()
			}
			t0 = stop
		}
	default:
		if t0.Before(l.periodStart) {
			t0 = l.periodStart
		}
		if !t0.Before(t1) {
			return
		}
		for r, v := range rate {
			l.used[r] += v * t1.Sub(t0).Hours()
		}
	}
}

// prune forgets the days of a rolling window that are out of it at now: older than the
// current UTC day and the RollingDays before it.
func (l *Ledger) prune(now time.Time) {
	u := now.UTC()
	oldest := time.Date(u.Year(), u.Month(), u.Day()-l.spec.RollingDays, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
	maps.DeleteFunc(l.days, func(d string, _ map[corev1.ResourceName]float64) bool { return d < oldest })
}

// decay is 2^(-d/h).
func decay(d, h time.Duration) float64 {
	if d <= 0 {
		return 1
	}
	return math.Exp2(-d.Hours() / h.Hours())
}

// Used is what was used of each resource, up to now.
func (l *Ledger) Used(now time.Time) map[corev1.ResourceName]float64 {
	l.Advance(now)
	out := map[corev1.ResourceName]float64{}
	for _, r := range l.names {
		if v := l.usedOf(r); v != 0 {
			out[r] = v
		}
	}
	return out
}

// usedOf is what was used of r, folded up to at.
func (l *Ledger) usedOf(r corev1.ResourceName) float64 {
	if l.days == nil {
		return l.used[r]
	}
	sum := 0.0
	for _, d := range l.days {
		sum += d[r]
	}
	return sum
}

// NextChange is when, with no pod starting or ending, what fits next changes on its
// own: a calendar period's end, a rolling window's next UTC midnight, the next step of
// decay (decayStep), and, under Exhaustion Evict, the first running pod to reach its
// maximum runtime after now.
func (l *Ledger) NextChange(now time.Time) time.Time {
	var next time.Time
	switch {
	case l.spec.calendar():
		next = l.periodEnd
		if !next.After(now) {
			_, next = l.spec.periodOf(now)
		}
	case l.days != nil:
		u := now.UTC()
		next = time.Date(u.Year(), u.Month(), u.Day()+1, 0, 0, 0, 0, time.UTC)
	default:
		next = now.Add(l.decayStep(now))
	}
	if l.spec.Evict {
		l.expire(now)
		if r, ok := l.reserving.Peek(); ok && r.max && r.end.Before(next) {
			next = r.end
		}
	}
	return next
}

// decayStep is how long after now, under HalfLife, what fits is looked at again: a
// sixteenth of the half-life, between a second and ten minutes; with
// Spec.DecayStepsGrow, at least a sixteenth of the time since the ledger was made.
func (l *Ledger) decayStep(now time.Time) time.Duration {
	step := min(max(l.spec.HalfLife/16, time.Second), 10*time.Minute)
	if l.spec.DecayStepsGrow {
		step = max(step, now.Sub(l.made)/16)
	}
	return step
}

// Snapshot is the ledger's State at now.
func (l *Ledger) Snapshot(now time.Time) State {
	l.Advance(now)
	st := State{AsOf: l.at, Used: l.Used(now), Reserved: l.Reserved(now), Limits: maps.Clone(l.spec.Limits)}
	st.Period, st.ResetAt = l.Period()
	if l.spec.calendar() {
		st.PeriodStart = l.periodStart
	}
	if l.days != nil {
		for _, d := range slices.Sorted(maps.Keys(l.days)) {
			st.Days = append(st.Days, Day{Date: d, Used: maps.Clone(l.days[d])})
		}
	}
	return st
}

// Period names the period counted (as status.usage does), and says when it resets:
// zero unless it is a calendar period. It reads the period as last advanced.
func (l *Ledger) Period() (name string, resetAt time.Time) {
	if l.spec.calendar() {
		resetAt = l.periodEnd
	}
	return l.spec.periodName(l.periodStart), resetAt
}
