package hours

import (
	"maps"
	"math"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/pkg/quota/internal/heap"
)

// Ledger is one budget's hours: what its pods used in the period and what its running
// pods reserved. It is not safe for concurrent use (the core's lock guards it).
type Ledger struct {
	spec Spec
	at   time.Time // used is folded up to here

	periodStart, periodEnd time.Time // a calendar period

	used map[corev1.ResourceName]float64            // Period: in the period; HalfLife: decayed to at
	days map[string]map[corev1.ResourceName]float64 // RollingDays: per UTC day (2006-01-02)

	counted time.Time // what a restored State holds was used up to here
	runs    map[types.UID]*run
	ended   map[types.UID]time.Time // pods whose charge ended: counted up to then

	// The sums that keep a pod's start, end and check from walking every run: what all
	// runs use per hour (rate), and, of the runs still within their maximum (reserving,
	// in order of their ends), their rate and rate × end (hours after base), so that
	// what they reserve at t is resvRateEnd - resvRate × (t - base). overrun are the
	// runs past their maximum.
	base        time.Time
	rate        map[corev1.ResourceName]float64
	resvRate    map[corev1.ResourceName]float64
	resvRateEnd map[corev1.ResourceName]float64
	reserving   heap.Heap[*run]
	overrun     map[types.UID]*run
	names       []corev1.ResourceName // the spec's, sorted
}

// run is one charged pod.
type run struct {
	uid   types.UID
	rate  map[corev1.ResourceName]float64 // its charge, of the resources the budget has hours for
	end   time.Time                       // admission plus its maximum runtime
	max   bool                            // it has a maximum (it was admitted under hours)
	index int                             // in reserving; -1 when not there
}

// Shortfall is why a pod's hours do not fit: in Resource, the budget has Limit, of
// which Used is used and Reserved is reserved by running pods, and the pod would
// reserve Need. Never is set when Need alone is more than Limit.
type Shortfall struct {
	Resource                    corev1.ResourceName
	Used, Reserved, Need, Limit float64
	Never                       bool
}

// State is what the ledger holds at AsOf, for the budget's status (status.usage), and
// what a manager that starts is given back (Restore).
type State struct {
	Period      string
	PeriodStart time.Time // zero for HalfLife and RollingDays
	ResetAt     time.Time // the period's end: zero unless a calendar period
	AsOf        time.Time
	Used        map[corev1.ResourceName]float64
	Reserved    map[corev1.ResourceName]float64
	Days        []Day // RollingDays: oldest first
	// Limits are the spec's hours (for metrics and messages; not kept in the status).
	Limits map[corev1.ResourceName]float64
}

// Day is what was used on one UTC day of a rolling window.
type Day struct {
	Date string // 2006-01-02
	Used map[corev1.ResourceName]float64
}

// NewLedger starts a budget's hours at now. restore, when not nil, is what its status
// held: it is taken up if it was counted the same way (a calendar period's only if
// still the current period), and the pods started next count from its AsOf.
func NewLedger(spec Spec, now time.Time, restore *State) *Ledger {
	l := &Ledger{spec: spec, at: now, counted: now, runs: map[types.UID]*run{}, ended: map[types.UID]time.Time{}, base: now,
		reserving: heap.New(func(a, b *run) bool { return a.end.Before(b.end) }, func(r *run) *int { return &r.index })}
	l.names = slices.Sorted(maps.Keys(spec.Limits))
	l.resum()
	l.reset(now)
	if restore != nil {
		l.restore(restore, now)
	}
	return l
}

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

// SetSpec takes a new spec. Limits, the default maximum runtime and the exhaustion
// policy change in place; a new way of counting (period, time zone, rollingDays or
// halfLife) starts counting anew at now, the running pods' reservations kept.
func (l *Ledger) SetSpec(spec Spec, now time.Time) {
	l.Advance(now)
	same := l.spec.sameCounting(&spec)
	l.spec = spec
	if !same {
		l.reset(now)
		l.counted = now
	}
	for _, r := range l.runs {
		maps.DeleteFunc(r.rate, func(name corev1.ResourceName, _ float64) bool { _, ok := spec.Limits[name]; return !ok })
	}
	l.names = slices.Sorted(maps.Keys(spec.Limits))
	l.resum()
}

// resum computes the sums of the runs afresh (a new spec, or no run left, so that
// what float additions and subtractions leave behind does not build up).
func (l *Ledger) resum() {
	l.rate, l.resvRate, l.resvRateEnd = map[corev1.ResourceName]float64{}, map[corev1.ResourceName]float64{}, map[corev1.ResourceName]float64{}
	for _, r := range l.runs {
		addTo(l.rate, r.rate, 1)
		if r.index >= 0 {
			addTo(l.resvRate, r.rate, 1)
			addTo(l.resvRateEnd, r.rate, r.end.Sub(l.base).Hours())
		}
	}
}

// addTo adds rate × f to sum.
func addTo(sum, rate map[corev1.ResourceName]float64, f float64) {
	for r, v := range rate {
		sum[r] += v * f
	}
}

// expire moves the runs whose maximum passed by now out of the reserving ones.
func (l *Ledger) expire(now time.Time) {
	for r, ok := l.reserving.Peek(); ok && !now.Before(r.end); r, ok = l.reserving.Peek() {
		l.reserving.Remove(r)
		addTo(l.resvRate, r.rate, -1)
		addTo(l.resvRateEnd, r.rate, -r.end.Sub(l.base).Hours())
		if r.max {
			if l.overrun == nil {
				l.overrun = map[types.UID]*run{}
			}
			l.overrun[r.uid] = r
		}
	}
}

// Spec returns the spec the ledger counts with.
func (l *Ledger) Spec() *Spec { return &l.spec }

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

// Start counts a pod charged rate (per resource, in units of the resource) from at,
// its admission, reserving rate times maxRuntime (0: it reserves nothing, and is
// never overrun: it was charged before the budget had hours). A pod admitted before what a
// restored State counted up to adds only what it used since, and an admission before
// the period counts from the period's start. A pod counted before (charged again,
// when where it is charged changes) counts from where it was left: nothing twice.
func (l *Ledger) Start(uid types.UID, rate map[corev1.ResourceName]float64, maxRuntime time.Duration, at, now time.Time) {
	l.Advance(now)
	r := &run{rate: map[corev1.ResourceName]float64{}, end: at.Add(max(maxRuntime, 0)), max: maxRuntime > 0}
	for name, v := range rate {
		if _, ok := l.spec.Limits[name]; ok && v > 0 && !math.IsInf(v, 0) {
			r.rate[name] = v
		}
	}
	from := at
	if from.Before(l.counted) {
		from = l.counted
	}
	if e, ok := l.ended[uid]; ok && from.Before(e) {
		from = e
	}
	if _, ok := l.runs[uid]; ok {
		from = l.at // counted up to now already
	}
	if old, ok := l.runs[uid]; ok {
		l.drop(old)
	}
	r.uid, r.index = uid, -1
	if len(r.rate) == 0 {
		return // it uses nothing the budget counts
	}
	if from.Before(l.at) {
		l.add(r.rate, from, l.at)
	}
	l.runs[uid] = r
	addTo(l.rate, r.rate, 1)
	if r.end.After(l.at) {
		l.reserving.Push(r)
		addTo(l.resvRate, r.rate, 1)
		addTo(l.resvRateEnd, r.rate, r.end.Sub(l.base).Hours())
	} else if r.max {
		if l.overrun == nil {
			l.overrun = map[types.UID]*run{}
		}
		l.overrun[uid] = r
	}
	delete(l.ended, uid)
}

// drop takes a run out of the ledger and its sums.
func (l *Ledger) drop(r *run) {
	delete(l.runs, r.uid)
	delete(l.overrun, r.uid)
	if len(l.runs) == 0 {
		l.reserving = heap.New(func(a, b *run) bool { return a.end.Before(b.end) }, func(r *run) *int { return &r.index })
		clear(l.rate)
		clear(l.resvRate)
		clear(l.resvRateEnd)
		return
	}
	addTo(l.rate, r.rate, -1)
	if r.index >= 0 {
		l.reserving.Remove(r)
		addTo(l.resvRate, r.rate, -1)
		addTo(l.resvRateEnd, r.rate, -r.end.Sub(l.base).Hours())
	}
}

// End stops counting a pod: what it used stays used, the rest of its reservation is
// given back.
func (l *Ledger) End(uid types.UID, now time.Time) {
	r, ok := l.runs[uid]
	if !ok {
		return
	}
	l.Advance(now)
	l.drop(r)
	l.ended[uid] = l.at
}

// Forget drops what the ledger remembers of a pod that is gone for good.
func (l *Ledger) Forget(uid types.UID) { delete(l.ended, uid) }

// Running reports whether the ledger counts the pod.
func (l *Ledger) Running(uid types.UID) bool { _, ok := l.runs[uid]; return ok }

// Used is what was used of each resource, up to now.
func (l *Ledger) Used(now time.Time) map[corev1.ResourceName]float64 {
	l.Advance(now)
	if l.days == nil {
		return maps.Clone(l.used)
	}
	out := map[corev1.ResourceName]float64{}
	for _, d := range l.days {
		for r, v := range d {
			out[r] += v
		}
	}
	return out
}

// Reserved is what the running pods may still use of each resource, up to their
// maximum runtime, at now (not before the last time the ledger was given).
func (l *Ledger) Reserved(now time.Time) map[corev1.ResourceName]float64 {
	out := map[corev1.ResourceName]float64{}
	for _, r := range l.names {
		out[r] = l.reservedOf(r, now)
	}
	return out
}

func (l *Ledger) reservedOf(r corev1.ResourceName, now time.Time) float64 {
	l.expire(now)
	if l.reserving.Len() == 0 {
		return 0
	}
	return max(l.resvRateEnd[r]-l.resvRate[r]*now.Sub(l.base).Hours(), 0)
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

// Need is what a pod charged rate may use in maxRuntime: rate × hours.
func Need(rate map[corev1.ResourceName]float64, maxRuntime time.Duration) map[corev1.ResourceName]float64 {
	out := make(map[corev1.ResourceName]float64, len(rate))
	for r, v := range rate {
		if v > 0 {
			out[r] = v * maxRuntime.Hours()
		}
	}
	return out
}

// Check says whether need (resource-hours, per resource) fits at now: for every
// resource the budget has hours for, used + reserved + need is within the limit. The
// first resource (by name) that does not fit is returned.
func (l *Ledger) Check(need map[corev1.ResourceName]float64, now time.Time) (Shortfall, bool) {
	return l.CheckFunc(func(r corev1.ResourceName) float64 { return need[r] }, now)
}

// Names are the resources the budget has hours for, sorted.
func (l *Ledger) Names() []corev1.ResourceName { return l.names }

// CheckFunc is Check with need(r) for each resource r of Names.
func (l *Ledger) CheckFunc(need func(corev1.ResourceName) float64, now time.Time) (Shortfall, bool) {
	l.Advance(now)
	for _, r := range l.names {
		n := need(r)
		if n <= 0 {
			continue
		}
		limit, used, reserved := l.spec.Limits[r], l.usedOf(r), l.reservedOf(r, now)
		if n > limit || math.IsInf(n, 0) || math.IsNaN(n) {
			return Shortfall{Resource: r, Used: used, Reserved: reserved, Need: n, Limit: limit, Never: true}, false
		}
		if used+reserved+n > limit {
			return Shortfall{Resource: r, Used: used, Reserved: reserved, Need: n, Limit: limit}, false
		}
	}
	return Shortfall{}, true
}

// Overrun returns, sorted, the pods running past their maximum runtime at now.
func (l *Ledger) Overrun(now time.Time) []types.UID {
	l.expire(now)
	if len(l.overrun) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(l.overrun))
}

// NextChange is when, with no pod starting or ending, what fits next changes on its
// own: a calendar period's end, a rolling window's next UTC midnight, the next step of
// decay (a sixteenth of the half-life, between a second and ten minutes), and, under
// Exhaustion Evict, the first running pod to reach its maximum runtime after now.
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
		next = now.Add(min(max(l.spec.HalfLife/16, time.Second), 10*time.Minute))
	}
	if l.spec.Evict {
		l.expire(now)
		if r, ok := l.reserving.Peek(); ok && r.max && r.end.Before(next) {
			next = r.end
		}
	}
	return next
}

// Snapshot is the ledger's State at now.
func (l *Ledger) Snapshot(now time.Time) State {
	l.Advance(now)
	st := State{AsOf: l.at, Used: l.Used(now), Reserved: l.Reserved(now), Period: l.spec.periodName(l.periodStart), Limits: maps.Clone(l.spec.Limits)}
	if l.spec.calendar() {
		st.PeriodStart, st.ResetAt = l.periodStart, l.periodEnd
	}
	if l.days != nil {
		for _, d := range slices.Sorted(maps.Keys(l.days)) {
			st.Days = append(st.Days, Day{Date: d, Used: maps.Clone(l.days[d])})
		}
	}
	return st
}

// Runs counts the pods the ledger counts.
func (l *Ledger) Runs() int { return len(l.runs) }
