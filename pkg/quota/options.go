package quota

import (
	"time"

	"k8s.io/utils/clock"
)

// Observer is told about queue moves, for metrics. It is called with the
// AdmissionQueue's lock held, so it must be quick and must not call back into it.
type Observer interface {
	// Moved reports that a pod moved between queues of one budget. from is "" when
	// the pod enters the budget's queues (incoming), to is "" when it leaves them
	// (admitted, deleted, no longer covered). A pod covered by two budgets moves in
	// both.
	Moved(budget BudgetKey, from, to Queue)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(budget BudgetKey, from, to Queue)

// Moved calls f.
func (f ObserverFunc) Moved(budget BudgetKey, from, to Queue) { f(budget, from, to) }

var _ Observer = ObserverFunc(nil)

type options struct {
	clock          clock.PassiveClock
	holdUncovered  bool
	observer       Observer
	initialBackoff time.Duration
	maxBackoff     time.Duration
	flushInterval  time.Duration
	lendHold       time.Duration
	// preemptionCooldown and preemptionMaxBackoff: WithPreemptionCooldown.
	preemptionCooldown   time.Duration
	preemptionMaxBackoff time.Duration
	// priorityCeiling: priorities above it count as it (WithPriorityCeiling).
	priorityCeiling int32
	// usageWriteInterval: WithUsageWriteInterval.
	usageWriteInterval time.Duration
}

// Option configures an AdmissionQueue.
type Option func(*options)

// WithClock injects the clock (tests use k8s.io/utils/clock/testing).
func WithClock(c clock.PassiveClock) Option { return func(o *options) { o.clock = c } }

// WithHoldUncovered(false) admits at once the gated pods of opted-in namespaces that
// no budget covers (reason NoBudget), charged nowhere. By default (true) they are held
// with reason Uncovered until a budget covers them or their namespace opts out: no pod
// of an opted-in namespace runs without passing a budget's queue.
func WithHoldUncovered(hold bool) Option { return func(o *options) { o.holdUncovered = hold } }

// WithObserver reports queue moves to obs.
func WithObserver(obs Observer) Option { return func(o *options) { o.observer = obs } }

// WithBackoff sets the first and the longest backoff after a failed ungate.
func WithBackoff(initial, maxBackoff time.Duration) Option {
	return func(o *options) { o.initialBackoff, o.maxBackoff = initial, maxBackoff }
}

// WithFlushInterval sets how often every inadmissible pod is evaluated again.
func WithFlushInterval(d time.Duration) Option { return func(o *options) { o.flushInterval = d } }

// WithLendHold sets how long the quota a lender's pod frees is kept for the lender's
// next pods before siblings may borrow it (families.useHolds); 0 lends it at once.
func WithLendHold(d time.Duration) Option { return func(o *options) { o.lendHold = d } }

// WithPreemptionCooldown sets how long a pod must have waited before pods are evicted
// to make room for it (counted from when the core first saw it gated), and how far
// that cooldown may grow in a namespace whose preemptors vanish: it doubles for each
// one, up to maxBackoff (preemptions.cooldownOf). A cooldown of 0 turns both off; a
// maxBackoff below the cooldown counts as the cooldown (no doubling). The defaults are
// DefaultPreemptionCooldown and DefaultPreemptionMaxBackoff.
func WithPreemptionCooldown(cooldown, maxBackoff time.Duration) Option {
	return func(o *options) { o.preemptionCooldown, o.preemptionMaxBackoff = cooldown, maxBackoff }
}

// WithPriorityCeiling sets the highest priority pods are ranked by: a pod's
// spec.priority above it counts as the ceiling, for admission order and for preemption
// (which pods are of lower priority, which go first). Its default is
// DefaultPriorityCeiling.
func WithPriorityCeiling(p int32) Option { return func(o *options) { o.priorityCeiling = p } }

// backoff is the wait before retry number attempts (1 for the first failure): the
// initial backoff, doubling, at most the longest.
func (o *options) backoff(attempts int) time.Duration {
	d := o.initialBackoff
	for i := 1; i < attempts && d < o.maxBackoff; i++ {
		d *= 2
	}
	return min(d, o.maxBackoff)
}

// WithUsageWriteInterval sets how often a budget with hours (spec.usageLimits) and
// running pods has its status written, so that what its pods used survives a restart
// up to then (DefaultUsageWriteInterval; at least a second).
func WithUsageWriteInterval(d time.Duration) Option {
	return func(o *options) { o.usageWriteInterval = max(d, time.Second) }
}
