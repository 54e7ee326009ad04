package pacing

import (
	"context"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// The estimator yields the CPU to admission (Yield). A pass simulates the queues for
// tens of milliseconds of CPU to seconds (docs/benchmarks-onoff.md, figure 8), on the
// same cores as the manager's informers, the API server and etcd, which an admission
// waits for. So between the steps of a pass (estimate.Options.Pace, and every few
// hundred pods of the world it builds) the estimator:
//
//   - waits while an admission is under way: an admission handed to the ungate workers
//     and not done, or an admission pass that ran less than yieldWindow ago (the
//     admission path tells it with atomics only, never a lock, so it never waits for
//     the estimator);
//   - pays back its work: each millisecond it worked since its last step costs
//     1/CPUShare - 1 milliseconds of sleep (a token budget), so that while a
//     pass runs it takes about a quarter of one CPU.
//
// Neither waits more than maxYieldWait at one step, so a pass always ends, however busy
// admission is; and the pass's context ends any wait at once.

const (
	// CPUShare is the share of one CPU an estimator pass takes while it runs.
	CPUShare = 0.25
	// yieldWindow is how long after an admission pass the estimator still waits: the
	// ungate patches it hands out, and the informer events that follow, come within it.
	yieldWindow = 5 * time.Millisecond
	// yieldPoll is how often a waiting estimator looks at admission again.
	yieldPoll = time.Millisecond
	// minYieldSleep is the least sleep owed that the estimator sleeps off; less is carried
	// to the next step, so that a step does not sleep for a timer's slack.
	minYieldSleep = 4 * time.Millisecond
	// maxYieldWait is the most the estimator waits at one step, for admission and its
	// budget together. The sleep it still owes then is carried, up to maxYieldWait.
	maxYieldWait = time.Second
)

// Clock is what the yield reads the time from and waits on: the real clock, or a
// test's. It is not the controller's Clock: a budget of CPU is real time, and a pass
// must not wait on a test's fake time that nobody moves.
type Clock interface {
	Now() time.Time
	NewTimer(time.Duration) clock.Timer
}

// Yield is the estimator's side of the yield, and what admission tells it.
// Admission's methods are nil-safe (no estimator, nothing to tell) and lock nothing.
type Yield struct {
	clock Clock
	base  time.Time // lastPass counts from here
	// inflight counts the admissions handed to the ungate workers and not done.
	inflight atomic.Int64
	// lastPass is when the admission loop last ran a pass, as nanoseconds after base;
	// 0 for never.
	lastPass atomic.Int64

	share  float64
	window time.Duration
}

// NewYield is the yield of an estimator that reads the time from c.
func NewYield(c Clock) *Yield {
	return &Yield{clock: c, base: c.Now(), share: CPUShare, window: yieldWindow}
}

// AdmissionPass records that the admission loop ran a pass now.
func (y *Yield) AdmissionPass() {
	if y == nil {
		return
	}
	// 1 at least: 0 means no pass yet.
	y.lastPass.Store(max(int64(y.clock.Now().Sub(y.base)), 1))
}

// HandedOut records an admission handed to the ungate workers; UngateDone must follow.
func (y *Yield) HandedOut() {
	if y != nil {
		y.inflight.Add(1)
	}
}

// UngateDone records that an ungate worker is done with an admission.
func (y *Yield) UngateDone() {
	if y != nil {
		y.inflight.Add(-1)
	}
}

// admitting reports whether admission is under way at now: an admission in the
// workers' hands, or a pass less than the window ago.
func (y *Yield) admitting(now time.Time) bool {
	if y.inflight.Load() > 0 {
		return true
	}
	last := y.lastPass.Load()
	return last > 0 && now.Sub(y.base)-time.Duration(last) < y.window
}

// Pace returns the step of one pass, whose context is ctx: called on the pass's
// goroutine between its steps, it counts the time since the step before as work, and
// waits (wait). The time before the first step counts from here.
func (y *Yield) Pace(ctx context.Context) func() {
	if y == nil {
		return nil
	}
	last, owed := y.clock.Now(), time.Duration(0)
	return func() {
		now := y.clock.Now()
		owed += time.Duration(float64(now.Sub(last)) * (1/y.share - 1))
		owed = y.wait(ctx, owed)
		last = y.clock.Now() // waiting is not work
	}
}

// wait waits while admission is under way, and until the sleep owed is paid when it is
// at least minYieldSleep; at most maxYieldWait in all, less when ctx ends. Any time
// waited pays for the sleep owed; it returns what is still owed (at most maxYieldWait).
func (y *Yield) wait(ctx context.Context, owed time.Duration) time.Duration {
	began := y.clock.Now()
	for {
		now := y.clock.Now()
		waited := now.Sub(began)
		left := owed - waited
		if waited >= maxYieldWait || ctx.Err() != nil {
			return min(max(left, 0), maxYieldWait)
		}
		var d time.Duration
		switch {
		case y.admitting(now):
			d = yieldPoll
		case left >= minYieldSleep:
			d = left
		default:
			return max(left, 0)
		}
		if !y.sleep(ctx, min(d, maxYieldWait-waited)) {
			return min(max(owed-y.clock.Now().Sub(began), 0), maxYieldWait)
		}
	}
}

// sleep waits d; false when ctx ended first.
func (y *Yield) sleep(ctx context.Context, d time.Duration) bool {
	t := y.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// EveryN returns a step that calls pace at every n-th call; nil for a nil pace.
func EveryN(n int, pace func()) func() {
	if pace == nil {
		return nil
	}
	i := 0
	return func() {
		if i++; i%n == 0 {
			pace()
		}
	}
}
