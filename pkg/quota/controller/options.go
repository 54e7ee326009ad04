package controller

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// Options configure the controller.
type Options struct {
	// Gate is the scheduling gate quotagate owns.
	Gate string
	// Workers is how many ungate patches may be in flight at once.
	Workers int
	// HoldUncovered keeps gated the pods of opted-in namespaces that no budget covers
	// (true by default: no pod of an opted-in namespace runs without passing a
	// budget's queue); false admits them at once, charged nowhere.
	HoldUncovered bool
	// WatchSecrets lets pods wait for Secrets (quotagate.io/wait-for: secret/NAME): the
	// manager then watches the metadata of every Secret, which RBAC can grant only as
	// list and watch on Secrets, their data included. Off by default: a pod that waits
	// for a Secret is told so (dependencyIndex).
	WatchSecrets bool
	// FlushInterval is how often inadmissible pods are re-evaluated without an event.
	FlushInterval time.Duration
	// LendHold is how long the quota a lender's ended pod frees is kept for the
	// lender's next pods before budgets under the same parent may borrow it (0: lent at
	// once; quota.WithLendHold).
	LendHold time.Duration
	// PriorityCeiling is the highest priority pods are ranked by in admission order and
	// preemption: a pod's spec.priority above it counts as it (quota.WithPriorityCeiling).
	PriorityCeiling int32
	// PreemptionCooldown is how long a pod must have waited before pods are evicted to
	// make room for it (0: at once, and no backoff), and PreemptionMaxBackoff how far
	// it grows in a namespace whose preemptors vanish, doubling for each
	// (quota.WithPreemptionCooldown; docs/budgets.md, "Preemption cooldown").
	PreemptionCooldown   time.Duration
	PreemptionMaxBackoff time.Duration
	// UsageWriteInterval is how often a budget with hours (spec.usageLimits) and running
	// pods has its status.usage written: what its pods used survives a restart up to
	// then (quota.WithUsageWriteInterval; docs/budgets.md, "Hour budgets").
	UsageWriteInterval time.Duration
	// UngateTimeout bounds one ungate patch and the fresh read that settles a failed
	// one. Keep it below the leader election's lease duration minus its renew
	// deadline, so that a leader that lost its lease has no attempt left in flight
	// when the next one takes over.
	UngateTimeout time.Duration
	// PodAdmittedEvents emits an Admitted event on every pod the manager ungates: a
	// second API write per admission. Off by default: each budget gets one Admitted
	// event per AdmittedEventInterval that sums up its admissions instead.
	PodAdmittedEvents bool
	// AdmittedEventInterval is the least time between two Admitted events of one
	// budget.
	AdmittedEventInterval time.Duration
	// WaitingEventsPerBudget: only the first this many gated pods of each budget's
	// queue, in admission order, get a Waiting event when their reason changes (the
	// pods behind them get theirs when they reach the head). 0 sends none.
	WaitingEventsPerBudget int
	// Clock is where the controller reads the time and waits (tests inject a fake one).
	Clock clock.Clock
	// Recorder, when set, takes the controller's events instead of the manager's
	// recorder (the benchmark drops them this way, to measure what they cost).
	Recorder recorder.EventRecorder
	// EstimateInterval is the least time between two passes of the estimator, which
	// estimates when each gated pod starts (the estimator); 0 turns it off.
	EstimateInterval time.Duration
	// EstimateMaxPods is the most pods (gated and holding quota) the estimator simulates:
	// with more, it skips its passes and gated pods have no estimate (a pass costs about
	// 1 s of CPU and 170 MB of allocations at 10,000 gated pods). 0 means no bound.
	EstimateMaxPods int
	// SimulationCPU is the share of one CPU that what-ifs (the visibility API's
	// podsimulations, SimulatePods) take together at most, so that a tenant's what-ifs
	// cannot starve the admission loop: each simulation waits at its steps for its part.
	// 0 means no bound.
	SimulationCPU float64
	// Registerer gets the manager's metrics (the binary passes controller-runtime's
	// metrics.Registry); nil keeps them in a registry of their own that nothing serves.
	Registerer prometheus.Registerer
}

// DefaultOptions returns the defaults: enough workers that the API server, not the
// manager, limits how fast pods are released.
func DefaultOptions() Options {
	return Options{
		Gate:            v1alpha1.SchedulingGate,
		Workers:         32,
		HoldUncovered:   true,
		FlushInterval:   quota.DefaultFlushInterval,
		LendHold:        quota.DefaultLendHold,
		UngateTimeout:   DefaultUngateTimeout,
		PriorityCeiling: quota.DefaultPriorityCeiling,
		Clock:           clock.RealClock{},

		PreemptionCooldown:   quota.DefaultPreemptionCooldown,
		PreemptionMaxBackoff: quota.DefaultPreemptionMaxBackoff,

		EstimateInterval:       DefaultEstimateInterval,
		EstimateMaxPods:        DefaultEstimateMaxPods,
		SimulationCPU:          DefaultSimulationCPU,
		AdmittedEventInterval:  DefaultAdmittedEventInterval,
		WaitingEventsPerBudget: DefaultWaitingEventsPerBudget,
		UsageWriteInterval:     quota.DefaultUsageWriteInterval,
	}
}

// DefaultSimulationCPU: what-ifs take at most half a CPU together, beside the
// estimator's quarter, so that on a manager of two CPUs admissions keep more than one.
const DefaultSimulationCPU = 0.5

// DefaultAdmittedEventInterval bounds the Admitted events of one budget to one every
// ten seconds.
const DefaultAdmittedEventInterval = 10 * time.Second

// DefaultWaitingEventsPerBudget: the head of a queue, as far as `kubectl describe pod`
// users look, without one event per pod of a queue of thousands.
const DefaultWaitingEventsPerBudget = 20

// DefaultUngateTimeout is below the default lease duration (15 s) minus the renew
// deadline (10 s).
const DefaultUngateTimeout = 4 * time.Second

// complete checks the options and fills in the defaults of those left zero.
func (o *Options) complete() error {
	if o.Workers < 1 {
		return fmt.Errorf("workers must be at least 1, got %d", o.Workers)
	}
	if o.Gate == "" {
		return errors.New("the gate name must not be empty")
	}
	if o.LendHold < 0 {
		return fmt.Errorf("the lend hold must not be negative, got %s", o.LendHold)
	}
	if o.PreemptionCooldown < 0 {
		return fmt.Errorf("the preemption cooldown must not be negative, got %s", o.PreemptionCooldown)
	}
	if o.PreemptionCooldown > 0 && o.PreemptionMaxBackoff < o.PreemptionCooldown {
		return fmt.Errorf("the preemption backoff's most (%s) must not be below the cooldown (%s)", o.PreemptionMaxBackoff, o.PreemptionCooldown)
	}
	if o.PriorityCeiling == 0 {
		o.PriorityCeiling = quota.DefaultPriorityCeiling
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = quota.DefaultFlushInterval
	}
	if o.EstimateInterval < 0 {
		return fmt.Errorf("the estimate interval must not be negative, got %s", o.EstimateInterval)
	}
	if o.EstimateMaxPods < 0 {
		return fmt.Errorf("the estimator's most pods must not be negative, got %d", o.EstimateMaxPods)
	}
	if o.SimulationCPU < 0 {
		return fmt.Errorf("the share of a CPU for what-ifs must not be negative, got %g", o.SimulationCPU)
	}
	if o.UngateTimeout <= 0 {
		o.UngateTimeout = DefaultUngateTimeout
	}
	if o.AdmittedEventInterval <= 0 {
		o.AdmittedEventInterval = DefaultAdmittedEventInterval
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	return nil
}

// coreOptions are the options that decide what the core admits: the real core's and
// every simulation's (the estimator's) alike.
func (o Options) coreOptions() []quota.Option {
	return []quota.Option{
		quota.WithHoldUncovered(o.HoldUncovered),
		quota.WithLendHold(o.LendHold),
		quota.WithPriorityCeiling(o.PriorityCeiling),
		quota.WithPreemptionCooldown(o.PreemptionCooldown, o.PreemptionMaxBackoff),
		quota.WithUsageWriteInterval(cmp.Or(o.UsageWriteInterval, quota.DefaultUsageWriteInterval)),
	}
}
