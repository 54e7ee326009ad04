package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/quotagate/quotagate/pkg/quota"
)

// The manager's metrics, named after kube-scheduler's queue metrics. They are served by
// controller-runtime's metrics server (registry crmetrics.Registry).
var (
	incomingPods = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "quotagate_queue_incoming_pods_total",
		Help: "Gated pods added to a budget's admission queues, by the queue they entered.",
	}, []string{"queue"})
	queueDepth = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quotagate_queue_depth",
		Help: "Gated pods in each queue of each budget.",
	}, []string{"budget", "queue"})
	queueMoves = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "quotagate_queue_moves_total",
		Help: "Pods moved between admission queues; to=\"\" is a pod leaving the queues (admitted or gone).",
	}, []string{"from", "to"})
	podWait = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "quotagate_pod_wait_seconds",
		Help:    "Time from a pod's creation to the removal of its gate.",
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 20),
	})
	budgetHard = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quotagate_budget_hard",
		Help: "A budget's hard limit per resource.",
	}, []string{"budget", "resource"})
	budgetUsed = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quotagate_budget_used",
		Help: "Requests of the admitted, non-terminal pods charged to a budget, per resource.",
	}, []string{"budget", "resource"})
	budgetPending = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quotagate_budget_pending",
		Help: "Requests of the pods gated on a budget, per resource.",
	}, []string{"budget", "resource"})
	ungateErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "quotagate_ungate_errors_total",
		Help: "Failed ungate patches, by reason.",
	}, []string{"reason"})
)

func init() {
	crmetrics.Registry.MustRegister(incomingPods, queueDepth, queueMoves, podWait,
		budgetHard, budgetUsed, budgetPending, ungateErrors)
}

// metrics feeds the queue metrics from the core's moves. It is a quota.Observer.
type metrics struct {
	podWait      prometheus.Observer
	ungateErrors *prometheus.CounterVec
}

var _ quota.Observer = (*metrics)(nil)

func newMetrics() *metrics {
	return &metrics{podWait: podWait, ungateErrors: ungateErrors}
}

// Moved is called by the core, under its lock, for every queue move.
func (m *metrics) Moved(budget quota.BudgetKey, from, to quota.Queue) {
	b := budget.String()
	if from == "" {
		incomingPods.WithLabelValues(string(to)).Inc()
	} else {
		queueDepth.WithLabelValues(b, string(from)).Dec()
	}
	if to != "" {
		queueDepth.WithLabelValues(b, string(to)).Inc()
	}
	queueMoves.WithLabelValues(string(from), string(to)).Inc()
}

// setBudget publishes a budget's hard, used and pending amounts.
func setBudget(key quota.BudgetKey, st quota.BudgetStatus) {
	b := key.String()
	for name, q := range st.Hard {
		budgetHard.WithLabelValues(b, string(name)).Set(q.AsApproximateFloat64())
	}
	for name := range st.Hard {
		used := st.Used[name]
		pending := st.Pending[name]
		budgetUsed.WithLabelValues(b, string(name)).Set(used.AsApproximateFloat64())
		budgetPending.WithLabelValues(b, string(name)).Set(pending.AsApproximateFloat64())
	}
}

// forgetBudget drops a deleted budget's series.
func forgetBudget(key quota.BudgetKey) {
	l := prometheus.Labels{"budget": key.String()}
	budgetHard.DeletePartialMatch(l)
	budgetUsed.DeletePartialMatch(l)
	budgetPending.DeletePartialMatch(l)
	queueDepth.DeletePartialMatch(l)
}
