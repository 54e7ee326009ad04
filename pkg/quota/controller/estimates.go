package controller

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/loglevel"
	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/quota/controller/internal/pacing"
)

// The estimator answers "when will my pod start?" (package estimate) for the views.
//
// It is a part of its own, beside the admission loop and never in its way:
//   - its informer handlers feed a Learner with every pod first seen Succeeded or
//     Failed (on every replica, so that a new leader starts with what the old one
//     learned since it started), and note that something changed;
//   - on the leader, at most every EstimateInterval and only when something changed,
//     it builds an estimate.World from the informers' caches (Budgets, ClusterBudgets,
//     namespaces, Flavors and the pod cache's compact views), never from the core, and
//     runs estimate.Simulate on a fresh core of its own: the real core's lock is never
//     taken, so admission never waits for an estimate;
//   - it keeps the latest Start of every gated pod, swapped in whole under its own lock,
//     which EstimatedStart reads;
//   - it tells a pod whose estimate moved a lot in an EstimateChanged event
//     (estimateNotices).
//
// Pods the real core admitted whose ungate the cache has not shown yet are gated in
// the world: the simulation admits them at once, as the core did.
type estimator struct {
	learner *estimate.Learner
	// arrivals learns how often each workload creates pods, from every pod first seen
	// that carries the gate or was admitted through it: the pods still to come that a
	// simulation draws.
	arrivals *estimate.Arrivals
	interval time.Duration
	// pods lists the pod informer's store, of cachedPods.
	pods podLister
	// changed is set by every informer event, and cleared by the pass it starts.
	changed atomic.Bool

	// mu guards starts. It is held only to read or swap the map, never while a
	// simulation runs.
	mu     sync.RWMutex
	starts map[types.UID]estimate.Start // nil until the first pass
	// first is the first known estimate of each gated pod, and head its first known
	// estimate while it was first in its budget's queue (Start.Head), kept until it is
	// admitted (judge) or no pass sees it gated any more.
	first, head map[types.UID]estimate.Start

	// record is each budget's track record (estimate.TrackRecord), what kubectl quotagate why shows.
	record *estimate.TrackRecord

	// notices is the estimate last reported to each gated pod in an EstimateChanged
	// event (estimateNotices); only the loop's passes use it.
	notices *estimateNotices

	// yield is what a pass waits on between its steps, so that it yields the CPU to
	// admission (pacing.Yield); the admission loop and the ungate workers signal it.
	yield *pacing.Yield

	// What a pass needs of the manager, set by New (the settings it shares with the
	// what-ifs, metrics) and by Controller.connectSimulations (the rest, once the caches
	// exist).
	*simulationSettings
	metrics  *metrics
	recorder recorder.EventRecorder
	source   *worldSource
	// synced reports whether the manager's informer handlers delivered their lists.
	synced func() bool
}

// podLister lists the pod informer's store.
type podLister interface{ List() []any }

// DefaultEstimateInterval is the least time between two estimator passes.
const DefaultEstimateInterval = 5 * time.Second

// estimateRest is how many times as long as a pass the estimator waits before the next
// one, at least: it takes at most a quarter of a core however long its passes are.
const estimateRest = 3

// DefaultEstimateMaxPods is the most pods the estimator simulates by default: a pass
// over more would hold a large share of a core and of the manager's memory (make bench,
// figure 4: 200 MiB of heap at 50,000 gated pods with passes, against 84 without).
const DefaultEstimateMaxPods = 20000

// newEstimator is the estimator of a manager with opts, recording to m; nil when
// opts.EstimateInterval turns it off.
func newEstimator(opts *Options, settings *simulationSettings, m *metrics) *estimator {
	if opts.EstimateInterval <= 0 {
		return nil
	}
	e := &estimator{learner: estimate.NewLearner(0), arrivals: estimate.NewArrivals(0), interval: opts.EstimateInterval, notices: newEstimateNotices(), record: estimate.NewTrackRecord(time.Now()),
		yield:              pacing.NewYield(clock.RealClock{}),
		simulationSettings: settings, metrics: m}
	e.changed.Store(true)
	return e
}

// connectSimulations gives the estimator and the what-if what they read once the
// manager's caches exist: the pod cache and the world's source; the estimator the
// event recorder and whether the informers synced, the what-if the API server's
// reader. SetupWithManager calls it, after the claims and the dependencies are set up.
func (c *Controller) connectSimulations() {
	pods, _ := c.pods.(podLister)
	source := c.worldSource()
	c.whatIfs.apiReader, c.whatIfs.pods, c.whatIfs.source = c.apiReader, pods, source
	e := c.estimates
	if e == nil {
		return
	}
	e.pods, e.source = pods, source
	e.recorder = c.recorder
	e.synced = c.handlersSynced
}

// EstimatedStart is a gated pod's estimated start as of the estimator's last pass;
// false when the estimator is off, has not run yet, or did not see the pod gated.
func (c *Controller) EstimatedStart(uid types.UID) (estimate.Start, bool) {
	return c.estimates.start(uid)
}

func (e *estimator) start(uid types.UID) (estimate.Start, bool) {
	if e == nil {
		return estimate.Start{}, false
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	s, ok := e.starts[uid]
	return s, ok
}

// handlers are the estimator's informer handlers: pods teach the Learner; any event of
// the objects a world is built from asks for a new pass.
func (e *estimator) handlers() []informerHandler {
	changed := e.changedHandler()
	return []informerHandler{
		{&corev1.Namespace{}, changed},
		{&v1alpha1.Budget{}, changed},
		{&v1alpha1.ClusterBudget{}, changed},
		{&v1alpha1.Flavor{}, changed},
		{&corev1.Pod{}, e.podHandler()},
	}
}

// informerHandler is a handler for the informer of obj's type.
type informerHandler struct {
	obj     client.Object
	handler toolscache.ResourceEventHandler
}

func (e *estimator) changedHandler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { e.changed.Store(true) },
		UpdateFunc: func(_, _ any) { e.changed.Store(true) },
		DeleteFunc: func(any) { e.changed.Store(true) },
	}
}

// podHandler teaches the Learner each pod first seen ended, and Arrivals each pod's
// creation, and asks for a new pass on every pod event.
func (e *estimator) podHandler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if cp, ok := obj.(*cachedPod); ok {
				e.learn(cp, nil)
				e.arrived(cp)
			}
			e.changed.Store(true)
		},
		UpdateFunc: func(old, obj any) {
			was, _ := old.(*cachedPod)
			if cp, ok := obj.(*cachedPod); ok && was != nil {
				e.learn(cp, was)
			}
			e.changed.Store(true)
		},
		DeleteFunc: func(any) { e.changed.Store(true) },
	}
}

// learn observes a pod the first time it is seen ended (old is its previous version,
// nil for a pod seen for the first time): the informer's first list teaches the pods
// that ended before the manager started, an update the pods that end while it runs.
func (e *estimator) learn(cp, old *cachedPod) bool {
	f := cp.factsOf()
	if !f.Ended || (old != nil && old.factsOf().Ended) {
		return false
	}
	v := cp.view
	return e.learner.ObserveFacts(&f, v.AdmittedByKeys(), e.clock.Now())
}

// arrived records a pod's creation in Arrivals, once per pod (its first sight): a pod
// that carries the gate or was admitted through it, at its priority, with its view as
// a gated pod as the template of those to come.
func (e *estimator) arrived(cp *cachedPod) {
	v := cp.at(e.clock.Now(), e.gate)
	if !v.Gated && !v.HasAdmittedBy {
		return
	}
	f := cp.factsOf()
	e.arrivals.Observe(v, &f)
}

// Start runs the estimator's loop on the leader (a manager.Runnable that needs leader
// election, as the admission loop): a pass when something changed, at most one per
// interval, passes one after another.
func (e *estimator) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("estimates")
	ctx = log.IntoContext(ctx, logger)
	if !toolscache.WaitForCacheSync(ctx.Done(), e.synced) {
		return nil
	}
	var last time.Duration // how long the last pass took
	for {
		// The wait runs from the end of a pass, and is at least estimateRest times the
		// pass: a pass over a long queue (seconds of CPU with tens of thousands of gated
		// pods, and a busy family) leaves the manager, and the API server beside it, the
		// rest of the time. Estimates are then older, not the admissions slower.
		if e.changed.Swap(false) {
			began := time.Now()
			if err := e.once(ctx); err != nil {
				logger.Error(err, "Estimating starts")
			}
			last = time.Since(began)
		}
		timer := e.clock.NewTimer(max(e.interval, estimateRest*last))
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C():
		}
	}
}

// yieldOf is the estimator's yield, for admission to signal; nil when the estimator is
// off.
func (e *estimator) yieldOf() *pacing.Yield {
	if e == nil {
		return nil
	}
	return e.yield
}

// NeedLeaderElection: only the leader's estimates are answered.
func (e *estimator) NeedLeaderElection() bool { return true }

// The estimator runs under the manager, on the leader only.
var _ manager.LeaderElectionRunnable = (*estimator)(nil)

// once builds the world from the caches, simulates it and publishes the starts. With
// more pods in the pod cache than EstimateMaxPods it publishes none instead.
func (e *estimator) once(ctx context.Context) error {
	if limit := e.maxPods; limit > 0 && e.pods != nil {
		if n := len(e.pods.List()); n > limit {
			e.publish(nil)
			e.announce(nil, e.clock.Now())
			e.metrics.estimateSkipped.Inc()
			e.metrics.estimatePods.WithLabelValues("gated").Set(0)
			e.metrics.estimatePods.WithLabelValues("running").Set(0)
			log.FromContext(ctx).V(loglevel.Details).Info("Not estimating starts: too many pods", "pods", n, "max", limit)
			return nil
		}
	}
	// Both phases yield to admission between their steps (pacing.Yield.Pace), so their
	// durations include the waits.
	pace := e.yield.Pace(ctx)
	began, now := time.Now(), e.clock.Now()
	w, err := e.world(ctx, now, pace)
	if err != nil {
		return err
	}
	built := time.Since(began)
	starts := estimate.Simulate(w, estimate.Options{Core: e.coreOptions, Done: ctx.Done(), Pace: pace})
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
	e.metrics.estimatePass.WithLabelValues("build").Observe(built.Seconds())
	e.metrics.estimatePass.WithLabelValues("simulate").Observe(simulated.Seconds())
	e.metrics.estimatePods.WithLabelValues("gated").Set(float64(len(w.Waiting)))
	e.metrics.estimatePods.WithLabelValues("running").Set(float64(len(w.Running)))
	log.FromContext(ctx).V(loglevel.Details).Info("Estimated starts", "gated", len(w.Waiting), "running", len(w.Running),
		"build", built, "simulate", simulated)
	return nil
}

// publish swaps in a pass's starts, and keeps the first known estimate of each pod
// still gated, and its first known one at the head of its queue.
func (e *estimator) publish(starts map[types.UID]estimate.Start) {
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

// judged is how a pod's estimates fared against its admission: each one known of its
// first, its first at the head of its queue, and its last.
type judged struct {
	first, head, last     estimate.Start
	hasFirst, hasHead, ok bool
}

// judge returns how the estimates of a pod admitted at fared, once per pod (ok is false
// for a pod that had no known estimate, or was judged already).
func (e *estimator) judge(uid types.UID) judged {
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
	return judged{first: f, head: h, last: s, hasFirst: true, hasHead: hasHead, ok: true}
}

// errorOf is how far from at an estimate's median was, and whether at was within its
// range.
func errorOf(s estimate.Start, at time.Time) (time.Duration, bool) {
	return absDuration(at.Sub(s.Median)), !at.Before(s.Low) && !at.After(s.High)
}

func absDuration(d time.Duration) time.Duration { return max(d, -d) }

// observeError records, for a pod admitted at charged to budgets, how far from at its
// first, head and last estimates were (quotagate_estimate_error_seconds) and whether
// at was within their ranges (quotagate_estimate_within_range_total), under the first
// budget (the most specific); and the first estimate's in that budget's track record.
// A nil estimator (off) records nothing.
func (e *estimator) observeError(uid types.UID, budgets []quota.BudgetKey, at time.Time) {
	if e == nil {
		return
	}
	j := e.judge(uid)
	if !j.ok {
		return
	}
	labels := []string{kindNone, "", ""}
	var key quota.BudgetKey
	if len(budgets) > 0 {
		key = budgets[0]
		labels = labelsOf(key)
	}
	observe := func(which string, s estimate.Start) (time.Duration, bool) {
		d, within := errorOf(s, at)
		l := append(append([]string(nil), labels...), which)
		e.metrics.estimateError.WithLabelValues(l...).Observe(d.Seconds())
		if within {
			e.metrics.estimateWithin.WithLabelValues(l...).Inc()
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
