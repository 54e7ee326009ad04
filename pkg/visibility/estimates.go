package visibility

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/quota"
)

// Estimates answers a gated pod's estimated start: the manager's estimator
// (controller.Controller). An answer of false leaves estimatedStart out: the estimator
// is off, or has not estimated the pod yet.
type Estimates interface {
	EstimatedStart(uid types.UID) (estimate.Start, bool)
}

// EstimateRecords is an Estimates that keeps each budget's track record
// (controller.Controller): a pod's status then carries its budget's.
type EstimateRecords interface {
	EstimateRecord(budget quota.BudgetKey) (estimate.Record, bool)
}

// estimateRecord is the API's view of the track record of the budget of places,
// nil when e keeps none or has none for it.
func estimateRecord(e Estimates, places []quota.PodPlace) *visv1.EstimateRecord {
	r, ok := e.(EstimateRecords)
	if !ok || len(places) == 0 {
		return nil
	}
	rec, ok := r.EstimateRecord(places[0].Budget)
	if !ok {
		return nil
	}
	return &visv1.EstimateRecord{
		BudgetKind: rec.Budget.Kind(), Namespace: rec.Budget.Namespace, Name: rec.Budget.Name,
		Pods: int64(rec.Pods), MedianErrorSeconds: rec.MedianError.Seconds(), WithinRange: int64(rec.Within),
		Since: metav1.NewTime(rec.Since),
	}
}

// HandlerOption configures NewHandler.
type HandlerOption func(*handlerOptions)

type handlerOptions struct {
	estimates        Estimates
	simulator        Simulator
	simulationLimits *SimulationLimits
}

// WithEstimates has the handler add each gated pod's estimated start from e (nil: none).
func WithEstimates(e Estimates) HandlerOption {
	return func(o *handlerOptions) { o.estimates = e }
}

// estimatedStart is the API's view of uid's estimate, nil when there is none.
func estimatedStart(e Estimates, uid types.UID) *visv1.EstimatedStart {
	if e == nil || uid == "" {
		return nil
	}
	s, ok := e.EstimatedStart(uid)
	if !ok {
		return nil
	}
	return EstimatedStartOf(s)
}

// EstimatedStartOf converts an estimate to the API's type. Like Start, it names no pod.
//
// The API's times are whole seconds (metav1.Time is written in RFC 3339). The median
// is rounded to the nearest second, not cut (which made every estimate half a second
// early on average, a fifth of the error at the head of a queue). The range is widened
// to whole seconds, its low cut down and its high raised, so that the range shown holds
// the range estimated: rounded, a range of two seconds at the head of a queue lost up
// to a second of what it claims to hold. A range of one instant (a deadline, a declared
// duration) stays one, at the median.
func EstimatedStartOf(s estimate.Start) *visv1.EstimatedStart {
	out := &visv1.EstimatedStart{Ends: int64(s.Ends), Samples: int64(s.Samples), Basis: s.Basis}
	if !s.Known {
		out.Unknown, out.Message = string(s.Unknown), s.Reason
		return out
	}
	at := func(t time.Time) *metav1.Time { m := metav1.NewTime(t); return &m }
	// high is raised to the next whole second: a time already whole stays.
	median, low, high := s.Median.Round(time.Second), s.Low.Truncate(time.Second), s.High.Add(time.Second-1).Truncate(time.Second)
	if s.Low.Equal(s.High) {
		low, high = median, median
	}
	out.Median, out.Low, out.High = at(median), at(low), at(high)
	return out
}
