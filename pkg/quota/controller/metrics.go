package controller

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quotagate/quotagate/internal/promreg"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/quota/controller/internal/estimator"
)

// The label values of quotagate_queue_moves_total for a pod entering a budget's queues
// (from) and leaving them, admitted, deleted or no longer covered (to).
const (
	moveIncoming = "incoming"
	moveRemoved  = "removed"
)

// The kind label of the per-budget series; uncovered pods are observed under kindNone.
const (
	kindBudget        = "Budget"
	kindClusterBudget = "ClusterBudget"
	kindNone          = "None"
)

// budgetLabels are the labels naming one budget, kube-state-metrics style: a
// ClusterBudget has namespace="".
var budgetLabels = []string{"kind", "namespace", "name"}

// waitBuckets go from 50ms to a day: a healthy queue admits in well under a second, a
// full budget holds pods for hours.
var waitBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600,
	1800, 3600, 7200, 14400, 28800, 57600, 86400}

// passBuckets go from 1ms to 2 minutes: a pass over a few hundred pods takes
// milliseconds, one over 20,000 (the default --estimate-max-pods) seconds.
var passBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}

// metrics are the manager's Prometheus metrics, named after kube-scheduler's queue
// metrics. It is a quota.Observer. Per-budget series are dropped when the budget is.
//
// Every replica keeps them (a standby's core is fed by the informers too, so its queue
// depths are right the moment it is elected), but only a leading replica exports them:
// gate collects nothing while no controller of the process leads. Two replicas scraped
// side by side then give one copy of each series, and a dashboard's sum is not doubled
// (docs/metrics.md).
type metrics struct {
	gate *leaderOnly

	incomingPods   *prometheus.CounterVec
	queueDepth     *prometheus.GaugeVec
	queueMoves     *prometheus.CounterVec
	podWait        *prometheus.HistogramVec
	estimateError  *prometheus.HistogramVec
	estimateWithin *prometheus.CounterVec
	// The estimator's passes: how long each phase took, how many pods the last one
	// saw, and how many were skipped over EstimateMaxPods.
	estimatePass    *prometheus.HistogramVec
	estimatePods    *prometheus.GaugeVec
	estimateSkipped prometheus.Counter
	admissions      *prometheus.CounterVec
	budgetHard      *prometheus.GaugeVec
	budgetUsed      *prometheus.GaugeVec
	flavorHard      *prometheus.GaugeVec
	flavorUsed      *prometheus.GaugeVec
	budgetPending   *prometheus.GaugeVec
	budgetState     *prometheus.GaugeVec
	budgetReady     *prometheus.GaugeVec
	windowsOpen     *prometheus.GaugeVec
	hoursUsed       *prometheus.GaugeVec
	hoursReserved   *prometheus.GaugeVec
	hoursLimit      *prometheus.GaugeVec
	hoursReset      *prometheus.GaugeVec
	usageShare      *prometheus.GaugeVec
	gatedPods       *prometheus.GaugeVec
	admittedPods    *prometheus.GaugeVec
	neverFitPods    *prometheus.GaugeVec
	ungateErrors    *prometheus.CounterVec

	preemptions        *prometheus.CounterVec
	preemptionsBlocked *prometheus.CounterVec

	// depths and moves are the series Moved updates, looked up once: it runs for every
	// queue move, and a lookup by label values hashes them all. forgetBudget drops a
	// budget's (its series leave the vector, so a kept one would count for nobody).
	seriesMu sync.Mutex
	// hoursSeen is, per budget (its labels joined), the period and resources its hour
	// series were last published with (hoursMu), so that only series that are gone are
	// dropped: a scrape never sees a budget without them.
	hoursMu   sync.Mutex
	hoursSeen map[string]hoursSeries
	depths    map[depthKey]prometheus.Gauge
	moves     map[[2]string]prometheus.Counter
	// gatedByReason counts the gated pods by why they wait (setReasons).
	gatedByReason *prometheus.GaugeVec
}

type depthKey struct {
	budget quota.BudgetKey
	queue  string
}

var _ quota.Observer = (*metrics)(nil)

func perBudget(extra ...string) []string {
	return append(append([]string{}, budgetLabels...), extra...)
}

func gauge(name, help string, labels []string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
}

// newMetrics creates the manager's metrics and registers them with reg (the binary
// passes controller-runtime's metrics.Registry). Metrics already registered there by
// another controller are reused, so two controllers in one process share their series.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		incomingPods: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quotagate_queue_incoming_pods_total",
			Help: "Gated pods added to a budget's admission queues, by the queue they entered.",
		}, []string{"queue"}),
		queueDepth: gauge("quotagate_queue_depth", "Gated pods in each queue of each budget.", perBudget("queue")),
		queueMoves: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quotagate_queue_moves_total",
			Help: "Pods moved between admission queues; from=\"incoming\" is a pod entering a budget's queues, to=\"removed\" one leaving them (admitted, deleted or no longer covered).",
		}, []string{"from", "to"}),
		podWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "quotagate_pod_wait_seconds",
			Help:    "Time from when the manager first saw a pod gated (its creationTimestamp for pods already gated at startup) to the removal of its gate, per budget charged (kind=\"None\" for pods no budget covers).",
			Buckets: waitBuckets,
		}, budgetLabels),
		estimateError: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "quotagate_estimate_error_seconds",
			Help:    "How far from its admission a pod's estimated start (its median) was, in either direction, under the first budget it was charged to (kind=\"None\" for none): its first known estimate (estimate=\"first\"), its first known one while it was first in its budget's queue (estimate=\"head\") and its last (estimate=\"last\"). Pods that never had a known estimate are not counted.",
			Buckets: waitBuckets,
		}, perBudget("estimate")),
		estimateWithin: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quotagate_estimate_within_range_total",
			Help: "Pods admitted within the range (low to high) of their estimated start, with the labels of quotagate_estimate_error_seconds: divided by that histogram's count, the share of admissions the ranges held (they claim 80%).",
		}, perBudget("estimate")),
		estimatePass: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "quotagate_estimate_pass_duration_seconds",
			Help:    "How long each phase of an estimator pass took, its yields to admission included: building the world from the caches (phase=\"build\") and simulating it (phase=\"simulate\").",
			Buckets: passBuckets,
		}, []string{"phase"}),
		estimatePods: gauge("quotagate_estimate_pods", "Pods in the estimator's last pass: gated (state=\"gated\", each given a start) and holding quota (state=\"running\"); 0 after a skipped pass.", []string{"state"}),
		estimateSkipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "quotagate_estimate_passes_skipped_total",
			Help: "Estimator passes skipped because the pod cache held more pods than --estimate-max-pods; gated pods have no estimate after one.",
		}),
		admissions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quotagate_budget_admissions_total",
			Help: "Pods ungated while charged to a budget (kind=\"None\" for pods no budget covers).",
		}, budgetLabels),
		budgetHard:    gauge("quotagate_budget_hard", "A budget's hard limit per resource.", perBudget("resource")),
		budgetUsed:    gauge("quotagate_budget_used", "Requests of the admitted, non-terminal pods charged to a budget, per resource.", perBudget("resource")),
		flavorHard:    gauge("quotagate_budget_flavor_hard", "A budget's hard limit per flavor (spec.flavors) and resource.", perBudget("flavor", "resource")),
		flavorUsed:    gauge("quotagate_budget_flavor_used", "Requests of the admitted, non-terminal pods charged to a budget on a flavor, per resource.", perBudget("flavor", "resource")),
		budgetPending: gauge("quotagate_budget_pending", "Requests of the pods gated on a budget, per resource.", perBudget("resource")),
		budgetState:   gauge("quotagate_budget_state", "1 for a budget's effective state (Open, Closing, Closed), 0 for the others.", perBudget("state")),
		budgetReady:   gauge("quotagate_budget_ready", "1 when a budget's Ready condition is True, 0 when it has a problem (invalid spec, missing parent, cycle).", budgetLabels),
		windowsOpen:   gauge("quotagate_budget_windows_open", "BudgetWindows or ClusterBudgetWindows open on a budget now, changing the spec it is enforced with.", budgetLabels),
		hoursUsed:     gauge("quotagate_budget_hours_used", "Resource-hours a budget's pods used of its usageLimits.hours in the period counted (decayed, for a halfLife), per resource.", perBudget("resource", "period")),
		hoursReserved: gauge("quotagate_budget_hours_reserved", "Resource-hours a budget's running pods may still use up to their maximum runtime, per resource.", perBudget("resource")),
		hoursLimit:    gauge("quotagate_budget_hours_limit", "A budget's usageLimits.hours per resource: the resource-hours its pods may use in a period.", perBudget("resource")),
		hoursReset:    gauge("quotagate_budget_hours_reset_timestamp_seconds", "When a budget's calendar period of hours ends and what was used is forgotten (unix seconds).", budgetLabels),
		usageShare:    gauge("quotagate_budget_fair_sharing_usage_share", "What a budget's own past use adds to its fair share under a parent with fairSharing.usageHalfLife: its pods' decayed resource-hours over the family's lendable quota times usageHalfLife/ln 2, divided by its weight.", budgetLabels),
		gatedPods:     gauge("quotagate_budget_gated_pods", "Gated pods a budget covers.", budgetLabels),
		admittedPods:  gauge("quotagate_budget_admitted_pods", "Admitted, non-terminal pods charged to a budget.", budgetLabels),
		gatedByReason: gauge("quotagate_gated_pods_by_reason", "Gated pods the manager holds, by the reason code of why they wait (as the plugin's why and the pods' quotagate.io/Admitted condition give it): InsufficientQuota, StartLater, WaitingForDependency, PodGroupPending, ...", []string{"reason"}),
		neverFitPods:  gauge("quotagate_budget_never_fit_pods", "Gated pods that can never be admitted while hard stays as it is: they request more than it, or leave unset a cpu or memory value it tracks (ResourceQuota's rule).", budgetLabels),
		ungateErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quotagate_ungate_errors_total",
			Help: "Failed ungate patches, by reason.",
		}, []string{"reason"}),
		preemptions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quotagate_preemptions_total",
			Help: "Pods evicted to make room for a gated pod, by reason: Reclaim (quota lent to a sibling taken back), WithinBudget (a pod of lower priority), or WindowEnd (a budget brought back within its hard after a window ended with endPolicy Reclaim).",
		}, []string{"reason"}),
		depths: map[depthKey]prometheus.Gauge{},
		moves:  map[[2]string]prometheus.Counter{},
		preemptionsBlocked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quotagate_preemption_attempts_failed_total",
			Help: "Evictions of preemption victims refused (a PodDisruptionBudget) or failed, each retried later, by reason.",
		}, []string{"reason"}),
	}
	m.gate = &leaderOnly{metrics: m, collectors: []prometheus.Collector{
		m.incomingPods, m.queueMoves, m.admissions, m.ungateErrors, m.preemptions, m.preemptionsBlocked,
		m.queueDepth, m.budgetHard, m.budgetUsed, m.flavorHard, m.flavorUsed, m.budgetPending, m.budgetState, m.budgetReady,
		m.windowsOpen, m.hoursUsed, m.hoursReserved, m.hoursLimit, m.hoursReset, m.usageShare,
		m.gatedPods, m.admittedPods, m.neverFitPods, m.gatedByReason, m.podWait, m.estimateError,
		m.estimateWithin, m.estimatePass, m.estimatePods, m.estimateSkipped,
	}}
	gate, err := promreg.Register(reg, m.gate)
	if err != nil {
		return nil, fmt.Errorf("registering manager metrics: %w", err)
	}
	return gate.metrics, nil
}

// leaderOnly exports collectors while at least one controller of the process leads:
// controllers that share a registry share one leaderOnly (promreg), and so one count.
type leaderOnly struct {
	metrics    *metrics
	collectors []prometheus.Collector
	leaders    atomic.Int32
}

// lead marks one more controller of the process as leading; the returned func undoes it.
func (g *leaderOnly) lead() (done func()) {
	g.leaders.Add(1)
	var once sync.Once
	return func() { once.Do(func() { g.leaders.Add(-1) }) }
}

// Unwrap returns the collectors it gates, for tools that list what the manager registers.
func (g *leaderOnly) Unwrap() []prometheus.Collector { return g.collectors }

func (g *leaderOnly) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range g.collectors {
		c.Describe(ch)
	}
}

func (g *leaderOnly) Collect(ch chan<- prometheus.Metric) {
	if g.leaders.Load() <= 0 {
		return
	}
	for _, c := range g.collectors {
		c.Collect(ch)
	}
}

// labelsOf names a budget: kind, namespace ("" for a ClusterBudget), name.
func labelsOf(key quota.BudgetKey) []string {
	if key.IsCluster() {
		return []string{kindClusterBudget, "", key.Name}
	}
	return []string{kindBudget, key.Namespace, key.Name}
}

// estimatorMetrics are the estimator's series (estimator.Metrics).
func (m *metrics) estimatorMetrics() *estimator.Metrics {
	return &estimator.Metrics{Error: m.estimateError, Within: m.estimateWithin, Pass: m.estimatePass, Pods: m.estimatePods,
		Skipped: m.estimateSkipped, Labels: labelsOf, NoBudget: []string{kindNone, "", ""}}
}

// Moved is called by the core, under its lock, for every queue move.
func (m *metrics) Moved(budget quota.BudgetKey, from, to quota.Queue) {
	moveFrom, moveTo := string(from), string(to)
	m.seriesMu.Lock()
	defer m.seriesMu.Unlock()
	if from == "" {
		moveFrom = moveIncoming
		m.incomingPods.WithLabelValues(string(to)).Inc()
	} else {
		m.depth(budget, moveFrom).Dec()
	}
	if to == "" {
		moveTo = moveRemoved
	} else {
		m.depth(budget, moveTo).Inc()
	}
	k := [2]string{moveFrom, moveTo}
	c, ok := m.moves[k]
	if !ok {
		c = m.queueMoves.WithLabelValues(moveFrom, moveTo)
		m.moves[k] = c
	}
	c.Inc()
}

// depth is the queue depth series of a budget's queue (seriesMu held).
func (m *metrics) depth(budget quota.BudgetKey, queue string) prometheus.Gauge {
	k := depthKey{budget, queue}
	g, ok := m.depths[k]
	if !ok {
		g = m.queueDepth.WithLabelValues(append(labelsOf(budget), queue)...)
		m.depths[k] = g
	}
	return g
}

// admitted records one ungated pod: an admission and its wait in every budget it is
// charged to, or under kind="None" when no budget covers it.
func (m *metrics) admitted(budgets []quota.BudgetKey, wait time.Duration) {
	if len(budgets) == 0 {
		m.admissions.WithLabelValues(kindNone, "", "").Inc()
		m.podWait.WithLabelValues(kindNone, "", "").Observe(wait.Seconds())
		return
	}
	for _, key := range budgets {
		b := labelsOf(key)
		m.admissions.WithLabelValues(b...).Inc()
		m.podWait.WithLabelValues(b...).Observe(wait.Seconds())
	}
}

// setBudget publishes a budget's state, readiness, pod counts and hard, used and
// pending amounts.
func (m *metrics) setBudget(key quota.BudgetKey, st quota.BudgetStatus) {
	b := labelsOf(key)
	for name, q := range st.Hard {
		r := append(b, string(name))
		used, pending := st.Used[name], st.Pending[name]
		m.budgetHard.WithLabelValues(r...).Set(q.AsApproximateFloat64())
		m.budgetUsed.WithLabelValues(r...).Set(used.AsApproximateFloat64())
		m.budgetPending.WithLabelValues(r...).Set(pending.AsApproximateFloat64())
	}
	// A flavor or resource the budget no longer holds drops its series.
	m.flavorHard.DeletePartialMatch(prometheus.Labels{"kind": b[0], "namespace": b[1], "name": b[2]})
	m.flavorUsed.DeletePartialMatch(prometheus.Labels{"kind": b[0], "namespace": b[1], "name": b[2]})
	for _, f := range st.Flavors {
		for name, q := range f.Hard {
			r := append(b, f.Name, string(name))
			used := f.Used[name]
			m.flavorHard.WithLabelValues(r...).Set(q.AsApproximateFloat64())
			m.flavorUsed.WithLabelValues(r...).Set(used.AsApproximateFloat64())
		}
	}
	for _, s := range []v1alpha1.BudgetState{v1alpha1.StateOpen, v1alpha1.StateClosing, v1alpha1.StateClosed} {
		m.budgetState.WithLabelValues(append(b, string(s))...).Set(boolFloat(st.State == s))
	}
	m.budgetReady.WithLabelValues(b...).Set(boolFloat(st.Problem == nil))
	m.gatedPods.WithLabelValues(b...).Set(float64(st.GatedPods))
	m.admittedPods.WithLabelValues(b...).Set(float64(st.AdmittedPods))
	m.neverFitPods.WithLabelValues(b...).Set(float64(len(st.NeverFit)))
	m.setHours(b, st.Usage)
	if st.FairSharing != nil {
		m.usageShare.WithLabelValues(b...).Set(st.FairSharing.Share)
	} else {
		m.usageShare.DeleteLabelValues(b...)
	}
}

// setWindows publishes how many windows are open on a budget.
func (m *metrics) setWindows(key quota.BudgetKey, open int) {
	m.windowsOpen.WithLabelValues(labelsOf(key)...).Set(float64(open))
}

// setReasons publishes how many gated pods wait for each reason (quota.Reads.
// WaitingByCode); a reason no pod waits for any more drops its series.
func (m *metrics) setReasons(counts map[quota.ReasonCode]int) {
	m.gatedByReason.Reset()
	for code, n := range counts {
		m.gatedByReason.WithLabelValues(string(code)).Set(float64(n))
	}
}

// forgetBudget drops every series of a deleted budget.
func (m *metrics) forgetBudget(key quota.BudgetKey) {
	m.seriesMu.Lock()
	defer m.seriesMu.Unlock()
	for k := range m.depths {
		if k.budget == key {
			delete(m.depths, k)
		}
	}
	b := labelsOf(key)
	l := prometheus.Labels{"kind": b[0], "namespace": b[1], "name": b[2]}
	for _, v := range []*prometheus.GaugeVec{m.queueDepth, m.budgetHard, m.budgetUsed, m.flavorHard, m.flavorUsed, m.budgetPending,
		m.budgetState, m.budgetReady, m.windowsOpen, m.hoursUsed, m.hoursReserved, m.hoursLimit, m.hoursReset, m.usageShare,
		m.gatedPods, m.admittedPods, m.neverFitPods} {
		v.DeletePartialMatch(l)
	}
	m.hoursMu.Lock()
	delete(m.hoursSeen, strings.Join(b, "/"))
	m.hoursMu.Unlock()
	m.admissions.DeletePartialMatch(l)
	m.podWait.DeletePartialMatch(l)
	m.estimateError.DeletePartialMatch(l)
	m.estimateWithin.DeletePartialMatch(l)
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
