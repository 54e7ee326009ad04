package estimator

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/quotagate/quotagate/internal/loglevel"
	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/quota/controller/internal/pacing"
)

// Estimator answers "when will my pod start?" (package estimate) for the views.
//
// It is a part of its own, beside the admission loop and never in its way:
//   - the manager's informer handlers feed its Learner with every pod first seen
//     Succeeded or Failed (Learn; on every replica, so that a new leader starts with
//     what the old one learned since it started) and its Arrivals with every pod
//     created through the gate (Arrived), and note that something changed (Changed);
//   - on the leader, at most every interval and only when something changed, it builds
//     an estimate.World from the manager's caches (Caches), never from the core, and
//     runs estimate.Simulate on a fresh core of its own: the real core's lock is never
//     taken, so admission never waits for an estimate;
//   - it keeps the latest Start of every gated pod, swapped in whole under its own lock,
//     which StartOf reads;
//   - it tells a pod whose estimate moved a lot in an EstimateChanged event (notices).
//
// Pods the real core admitted whose ungate the cache has not shown yet are gated in
// the world: the simulation admits them at once, as the core did.
type Estimator struct {
	*Settings
	learner *estimate.Learner
	// arrivals learns how often each workload creates pods, from every pod first seen
	// that carries the gate or was admitted through it: the pods still to come that a
	// simulation draws.
	arrivals *estimate.Arrivals
	interval time.Duration
	// changed is set by every informer event, and cleared by the pass it starts.
	changed atomic.Bool

	// mu guards starts, first and head. It is held only to read or swap them, never
	// while a simulation runs.
	mu     sync.RWMutex
	starts map[types.UID]estimate.Start // nil until the first pass
	// first is the first known estimate of each gated pod, and head its first known
	// estimate while it was first in its budget's queue (Start.Head), kept until it is
	// admitted (judge) or no pass sees it gated any more.
	first, head map[types.UID]estimate.Start

	// record is each budget's track record, what kubectl quotagate why shows.
	record *estimate.TrackRecord

	// notices is the estimate last reported to each gated pod in an EstimateChanged
	// event; only the loop's passes use it.
	notices *notices

	// yield is what a pass waits on between its steps, so that it yields the CPU to
	// admission; the admission loop and the ungate workers signal it (Yield).
	yield *pacing.Yield

	metrics *Metrics
	// Set by Connect, once the manager's caches exist.
	caches   Caches
	recorder recorder.EventRecorder
	// synced reports whether the manager's informer handlers delivered their lists.
	synced func() bool
}

// errNotConnected is a pass before Connect.
var errNotConnected = errors.New("the estimator is not connected to the manager's caches")

// DefaultInterval is the least time between two passes.
const DefaultInterval = 5 * time.Second

// rest is how many times as long as a pass the estimator waits before the next one, at
// least: it takes at most a quarter of a core however long its passes are.
const rest = 3

// DefaultMaxPods is the most pods the estimator simulates by default: a pass over more
// would hold a large share of a core and of the manager's memory (make bench, figure 4:
// 200 MiB of heap at 50,000 gated pods with passes, against 84 without).
const DefaultMaxPods = 20000

// New is an estimator that passes at most every interval, with settings, recording to
// m; nil for an interval of 0 or less (the estimator is off). Connect must follow.
func New(settings *Settings, interval time.Duration, m *Metrics) *Estimator {
	if interval <= 0 {
		return nil
	}
	e := &Estimator{Settings: settings, learner: estimate.NewLearner(0), arrivals: estimate.NewArrivals(0), interval: interval,
		notices: newNotices(), record: estimate.NewTrackRecord(time.Now()), yield: pacing.NewYield(clock.RealClock{}), metrics: m}
	e.changed.Store(true)
	return e
}

// Connect gives the estimator what it reads once the manager's caches exist: the
// caches, the event recorder of EstimateChanged events, and whether the manager's
// informer handlers delivered their lists (Start waits for it).
func (e *Estimator) Connect(caches Caches, r recorder.EventRecorder, synced func() bool) {
	e.caches, e.recorder, e.synced = caches, r, synced
}

// StartOf is a gated pod's estimated start as of the last pass; false when the
// estimator is off, has not run yet, or did not see the pod gated.
func (e *Estimator) StartOf(uid types.UID) (estimate.Start, bool) {
	if e == nil {
		return estimate.Start{}, false
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	s, ok := e.starts[uid]
	return s, ok
}

// Changed asks for a new pass: something a world is built from changed.
func (e *Estimator) Changed() { e.changed.Store(true) }

// Learn observes the facts of a pod first seen ended, charged to the budgets admitted
// lists; it reports whether the Learner took them.
func (e *Estimator) Learn(f *estimate.Facts, admitted []quota.BudgetKey) bool {
	return e.learner.ObserveFacts(f, admitted, e.Clock.Now())
}

// Arrived records a pod's creation in Arrivals, once per pod (its first sight): a pod
// that carries the gate or was admitted through it, at its priority, with its view v
// as a gated pod as the template of those to come.
func (e *Estimator) Arrived(v quota.Pod, f *estimate.Facts) {
	e.arrivals.Observe(v, f)
}

// Learner is what the estimator learned of how long pods run, from which its passes
// and the what-ifs expect the durations of running and gated pods.
func (e *Estimator) Learner() *estimate.Learner { return e.learner }

// Yield is the estimator's yield, for admission to signal; nil when the estimator is
// off.
func (e *Estimator) Yield() *pacing.Yield {
	if e == nil {
		return nil
	}
	return e.yield
}

// Record is budget's track record since this manager started; false when the estimator
// is off or has judged no admission in it yet.
func (e *Estimator) Record(budget quota.BudgetKey) (estimate.Record, bool) {
	if e == nil {
		return estimate.Record{}, false
	}
	return e.record.Of(budget)
}

// Forget drops budget's track record: the budget was deleted.
func (e *Estimator) Forget(budget quota.BudgetKey) {
	if e != nil {
		e.record.Forget(budget)
	}
}

// Start runs the estimator's loop on the leader (a manager.Runnable that needs leader
// election, as the admission loop): a pass when something changed, at most one per
// interval, passes one after another.
func (e *Estimator) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("estimates")
	ctx = log.IntoContext(ctx, logger)
	if !toolscache.WaitForCacheSync(ctx.Done(), e.synced) {
		return nil
	}
	var last time.Duration // how long the last pass took
	for {
		// The wait runs from the end of a pass, and is at least rest times the pass: a
		// pass over a long queue (seconds of CPU with tens of thousands of gated pods,
		// and a busy family) leaves the manager, and the API server beside it, the rest
		// of the time. Estimates are then older, not the admissions slower.
		if e.changed.Swap(false) {
			began := time.Now()
			if err := e.Once(ctx); err != nil {
				logger.Error(err, "Estimating starts")
			}
			last = time.Since(began)
		}
		timer := e.Clock.NewTimer(max(e.interval, rest*last))
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C():
		}
	}
}

// NeedLeaderElection: only the leader's estimates are answered.
func (e *Estimator) NeedLeaderElection() bool { return true }

// The estimator runs under the manager, on the leader only.
var _ manager.LeaderElectionRunnable = (*Estimator)(nil)

// Once is one pass: it builds the world from the caches, simulates it and publishes
// the starts. With more pods in the pod cache than MaxPods it publishes none instead.
func (e *Estimator) Once(ctx context.Context) error {
	if limit := e.MaxPods; limit > 0 && e.caches != nil {
		if n := e.caches.Pods(); n > limit {
			e.publish(nil)
			e.announce(nil, e.Clock.Now())
			e.metrics.Skipped.Inc()
			e.metrics.Pods.WithLabelValues("gated").Set(0)
			e.metrics.Pods.WithLabelValues("running").Set(0)
			log.FromContext(ctx).V(loglevel.Details).Info("Not estimating starts: too many pods", "pods", n, "max", limit)
			return nil
		}
	}
	// Both phases yield to admission between their steps (pacing.Yield.Pace), so their
	// durations include the waits.
	pace := e.yield.Pace(ctx)
	began, now := time.Now(), e.Clock.Now()
	w, err := e.World(ctx, now, pace)
	if err != nil {
		return err
	}
	built := time.Since(began)
	starts := estimate.Simulate(w, estimate.Options{Core: e.Core, Done: ctx.Done(), Pace: pace})
	if ctx.Err() != nil {
		return nil // stopping: the pass was cut short
	}
	simulated := time.Since(began) - built
	m := make(map[types.UID]estimate.Start, len(starts))
	for _, s := range starts {
		m[s.Pod.UID] = s
	}
	e.publish(m)
	e.announce(m, now)
	e.metrics.Pass.WithLabelValues("build").Observe(built.Seconds())
	e.metrics.Pass.WithLabelValues("simulate").Observe(simulated.Seconds())
	e.metrics.Pods.WithLabelValues("gated").Set(float64(len(w.Waiting)))
	e.metrics.Pods.WithLabelValues("running").Set(float64(len(w.Running)))
	log.FromContext(ctx).V(loglevel.Details).Info("Estimated starts", "gated", len(w.Waiting), "running", len(w.Running),
		"build", built, "simulate", simulated)
	return nil
}

// World is what the manager's caches hold at now, as Simulate takes it, with the
// estimator's Learner and Arrivals; pace, when set, is called between its steps.
func (e *Estimator) World(ctx context.Context, now time.Time, pace func()) (estimate.World, error) {
	if e.caches == nil {
		return estimate.World{}, errNotConnected
	}
	b, err := e.caches.World(ctx, now, e.learner, e.arrivals, pace)
	if err != nil {
		return estimate.World{}, err
	}
	return b.World(), nil
}

// publish swaps in a pass's starts, and keeps the first known estimate of each pod
// still gated, and its first known one at the head of its queue.
func (e *Estimator) publish(starts map[types.UID]estimate.Start) {
	e.mu.Lock()
	defer e.mu.Unlock()
	first := make(map[types.UID]estimate.Start, len(starts))
	head := make(map[types.UID]estimate.Start)
	for uid, s := range starts {
		if f, ok := e.first[uid]; ok {
			first[uid] = f
		} else if s.Known {
			first[uid] = s
		}
		if h, ok := e.head[uid]; ok {
			head[uid] = h
		} else if s.Known && s.Head {
			head[uid] = s
		}
	}
	e.starts, e.first, e.head = starts, first, head
}

// judged is how a pod's estimates fared against its admission: its first known one, its
// first at the head of its queue (when it had one there), and its last.
type judged struct {
	first, head, last estimate.Start
	hasHead, ok       bool
}

// judge returns how the estimates of a pod admitted at fared, once per pod (ok is false
// for a pod that had no known estimate, or was judged already).
func (e *Estimator) judge(uid types.UID) judged {
	e.mu.Lock()
	defer e.mu.Unlock()
	f, ok := e.first[uid]
	s := e.starts[uid]
	if !ok || !s.Known {
		return judged{}
	}
	h, hasHead := e.head[uid]
	delete(e.first, uid)
	delete(e.head, uid)
	return judged{first: f, head: h, last: s, hasHead: hasHead, ok: true}
}

// errorOf is how far from at an estimate's median was, and whether at was within its
// range.
func errorOf(s estimate.Start, at time.Time) (time.Duration, bool) {
	return absDuration(at.Sub(s.Median)), !at.Before(s.Low) && !at.After(s.High)
}

func absDuration(d time.Duration) time.Duration { return max(d, -d) }

// ObserveError records, for a pod admitted at charged to budgets, how far from at its
// first, head and last estimates were (quotagate_estimate_error_seconds) and whether
// at was within their ranges (quotagate_estimate_within_range_total), under the first
// budget (the most specific); and the first estimate's in that budget's track record.
// A nil estimator (off) records nothing.
func (e *Estimator) ObserveError(uid types.UID, budgets []quota.BudgetKey, at time.Time) {
	if e == nil {
		return
	}
	j := e.judge(uid)
	if !j.ok {
		return
	}
	labels := e.metrics.NoBudget
	var key quota.BudgetKey
	if len(budgets) > 0 {
		key = budgets[0]
		labels = e.metrics.Labels(key)
	}
	observe := func(which string, s estimate.Start) (time.Duration, bool) {
		d, within := errorOf(s, at)
		l := append(append([]string(nil), labels...), which)
		e.metrics.Error.WithLabelValues(l...).Observe(d.Seconds())
		if within {
			e.metrics.Within.WithLabelValues(l...).Inc()
		}
		return d, within
	}
	d, within := observe("first", j.first)
	if j.hasHead {
		observe("head", j.head)
	}
	observe("last", j.last)
	if len(budgets) > 0 {
		e.record.Add(key, d, within)
	}
}
