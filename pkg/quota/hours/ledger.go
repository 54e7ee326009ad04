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
	made time.Time // NewLedger's now (Spec.DecayStepsGrow)

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
	l := &Ledger{spec: spec, at: now, made: now, counted: now, runs: map[types.UID]*run{}, ended: map[types.UID]time.Time{}, base: now,
		reserving: heap.New(func(a, b *run) bool { return a.end.Before(b.end) }, func(r *run) *int { return &r.index })}
	l.names = slices.Sorted(maps.Keys(spec.Limits))
	l.resum()
	l.reset(now)
	if restore != nil {
		l.restore(restore, now)
	}
	return l
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

// Running reports whether the ledger counts the pod.
func (l *Ledger) Running(uid types.UID) bool { _, ok := l.runs[uid]; return ok }

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

// Runs counts the pods the ledger counts.
func (l *Ledger) Runs() int { return len(l.runs) }
