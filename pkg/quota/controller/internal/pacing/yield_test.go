package pacing

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/clock"
)

// yieldTestClock is a fake Clock: time moves only when the test works (work) or
// the yield sleeps (each timer fires at once, its duration later). It records every
// sleep; then, when set, calls onSleep with how many sleeps there were. A clock with
// stuck set never fires its timers: only the context ends a sleep.
type yieldTestClock struct {
	now     time.Time
	slept   []time.Duration
	onSleep func(n int)
	stuck   bool
}

func (f *yieldTestClock) Now() time.Time { return f.now }

func (f *yieldTestClock) work(d time.Duration) { f.now = f.now.Add(d) }

func (f *yieldTestClock) NewTimer(d time.Duration) clock.Timer {
	f.slept = append(f.slept, d)
	if f.onSleep != nil {
		f.onSleep(len(f.slept))
	}
	c := make(chan time.Time, 1)
	if !f.stuck {
		f.now = f.now.Add(d)
		c <- f.now
	}
	return yieldTestTimer{c}
}

func (f *yieldTestClock) sleptInAll() time.Duration {
	var sum time.Duration
	for _, d := range f.slept {
		sum += d
	}
	return sum
}

type yieldTestTimer struct{ c chan time.Time }

func (t yieldTestTimer) C() <-chan time.Time        { return t.c }
func (t yieldTestTimer) Stop() bool                 { return true }
func (t yieldTestTimer) Reset(_ time.Duration) bool { return true }

func newYieldTest() (*Yield, *yieldTestClock) {
	fc := &yieldTestClock{now: time.Date(2026, 12, 5, 21, 0, 0, 0, time.UTC)}
	return NewYield(fc), fc
}

// TestPassWaitsWhileAnUngateIsInFlight: a pass's step waits while an admission is in
// the ungate workers' hands, looking again every yieldPoll, and goes on as soon as the
// worker is done; with nothing in flight it does not wait at all.
func TestPassWaitsWhileAnUngateIsInFlight(t *testing.T) {
	y, fc := newYieldTest()
	step := y.Pace(t.Context())
	step()
	if len(fc.slept) != 0 {
		t.Fatalf("with no admission under way and no work, a step slept %v", fc.slept)
	}
	y.HandedOut()
	fc.onSleep = func(n int) {
		if n == 40 {
			y.UngateDone() // the patch returned during the 40th look
		}
	}
	step()
	if got, want := fc.sleptInAll(), 40*yieldPoll; got != want || len(fc.slept) != 40 {
		t.Errorf("a step with an ungate in flight for 40 looks slept %s in %d sleeps, want %s in 40", got, len(fc.slept), want)
	}
	fc.slept, fc.onSleep = nil, nil
	step()
	if len(fc.slept) != 0 {
		t.Errorf("once the ungate is done, a step slept %v", fc.slept)
	}
}

// TestPassWaitsOutAnAdmissionPass: a step right after an admission pass waits until
// yieldWindow has passed since it, and one after the window does not wait.
func TestPassWaitsOutAnAdmissionPass(t *testing.T) {
	y, fc := newYieldTest()
	step := y.Pace(t.Context())
	fc.work(time.Millisecond) // 1 ms of work, which owes less than minYieldSleep
	y.AdmissionPass()
	step()
	if got := fc.sleptInAll(); got != yieldWindow {
		t.Errorf("a step right after an admission pass slept %s (%v), want the window, %s", got, fc.slept, yieldWindow)
	}
	fc.slept = nil
	y.AdmissionPass()
	fc.work(yieldWindow)       // an admission pass as long ago as the window
	step = y.Pace(t.Context()) // and an estimator pass that starts now, with no work yet
	step()
	if len(fc.slept) != 0 {
		t.Errorf("a step the window after an admission pass slept %v", fc.slept)
	}
}

// TestPassSleepsInProportionToItsWork: each step sleeps off 1/CPUShare - 1 times
// the work since the step before (3 times for a quarter of a CPU), carrying what is
// below minYieldSleep to the next step; over a pass, the estimator works a quarter of
// the time it runs.
func TestPassSleepsInProportionToItsWork(t *testing.T) {
	y, fc := newYieldTest()
	step := y.Pace(t.Context())
	fc.work(10 * time.Millisecond)
	step()
	if diff := cmp.Diff([]time.Duration{30 * time.Millisecond}, fc.slept); diff != "" {
		t.Errorf("10 ms of work, then a step: sleeps (-want +got):\n%s", diff)
	}
	fc.slept = nil
	fc.work(time.Millisecond)
	step()
	if len(fc.slept) != 0 {
		t.Errorf("1 ms of work (3 ms owed, below %s) slept %v, want it carried", minYieldSleep, fc.slept)
	}
	fc.work(time.Millisecond)
	step()
	if diff := cmp.Diff([]time.Duration{6 * time.Millisecond}, fc.slept); diff != "" {
		t.Errorf("1 ms more, then a step: sleeps (-want +got):\n%s", diff)
	}

	// A pass of 1,000 steps of 0.7 ms each.
	y, fc = newYieldTest()
	step = y.Pace(t.Context())
	began := fc.Now()
	const steps, each = 1000, 700 * time.Microsecond
	for range steps {
		fc.work(each)
		step()
	}
	took := fc.Now().Sub(began)
	share := float64(steps*each) / float64(took)
	if share < 0.24 || share > 0.26 {
		t.Errorf("a pass of %s of work took %s: it worked %.3f of the time, want %.2f", steps*each, took, share, CPUShare)
	}
	if got, want := fc.sleptInAll(), 3*steps*each; want-got > minYieldSleep || got > want {
		t.Errorf("a pass of %s of work slept %s, want %s (less what is carried, under %s)", steps*each, got, want, minYieldSleep)
	}
}

// TestPassWaitsAtMostASecondAStep: however busy admission is, or however much sleep is
// owed, a step waits maxYieldWait at most, so a pass always ends; what is still owed is
// carried, at most maxYieldWait of it.
func TestPassWaitsAtMostASecondAStep(t *testing.T) {
	y, fc := newYieldTest()
	step := y.Pace(t.Context())
	y.HandedOut() // an ungate that never ends
	step()
	if got := fc.sleptInAll(); got != maxYieldWait {
		t.Errorf("a step with an ungate in flight for ever slept %s, want %s", got, maxYieldWait)
	}
	y.UngateDone()

	fc.slept = nil
	fc.work(2 * time.Second) // 6 s owed
	step()
	if got := fc.sleptInAll(); got != maxYieldWait {
		t.Errorf("a step owing 6 s slept %s, want %s", got, maxYieldWait)
	}
	fc.slept = nil
	step()
	if got := fc.sleptInAll(); got != maxYieldWait {
		t.Errorf("the next step slept %s, want the %s carried", got, maxYieldWait)
	}
	fc.slept = nil
	step()
	if len(fc.slept) != 0 {
		t.Errorf("a step after the carried sleep was paid slept %v", fc.slept)
	}
}

// TestPassStopsWaitingWhenItsContextEnds: a pass whose context ended (the manager
// stops, or loses the lead) does not wait for admission or its budget, and a wait
// under way ends with the context.
func TestPassStopsWaitingWhenItsContextEnds(t *testing.T) {
	y, fc := newYieldTest()
	ctx, cancel := context.WithCancel(t.Context())
	step := y.Pace(ctx)
	y.HandedOut()
	fc.stuck = true // no timer fires: only the context ends a sleep
	fc.onSleep = func(int) { cancel() }
	done := make(chan struct{})
	go func() {
		defer close(done)
		step()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a step waiting for an ungate did not end with its context")
	}
	if len(fc.slept) != 1 {
		t.Errorf("the step slept %d times, want 1, ended by the context", len(fc.slept))
	}
	fc.slept = nil
	fc.work(time.Second)
	step()
	if len(fc.slept) != 0 {
		t.Errorf("a step of a pass whose context ended slept %v", fc.slept)
	}
}

// TestNilYield: with the estimator off there is no Yield: admission's signals do
// nothing and a pass has no pace. EveryN of no pace is no step; of one, it calls it at
// every n-th step.
func TestNilYield(t *testing.T) {
	var y *Yield
	y.AdmissionPass()
	y.HandedOut()
	y.UngateDone()
	if y.Pace(t.Context()) != nil {
		t.Error("a nil yield returned a pace")
	}
	if EveryN(256, nil) != nil {
		t.Error("EveryN of no pace is a step")
	}
	calls := 0
	step := EveryN(3, func() { calls++ })
	for range 10 {
		step()
	}
	if calls != 3 {
		t.Errorf("EveryN(3) called its pace %d times in 10 steps, want 3", calls)
	}
}
