package quota

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/quotagate/quotagate/api/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestBackoffTiming: 100 ms, doubling, at most 10 s; NextWakeup says when.
func TestBackoffTiming(t *testing.T) {
	q, clk := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=1").Obj())
	q.UpsertPod(makePod("p").Req("cpu=1").Pod())
	var waits []time.Duration
	for range 9 {
		adm := q.Admit()
		if len(adm) != 1 {
			t.Fatalf("after %v: admitted %d, want 1", waits, len(adm))
		}
		q.Done("p", Unknown, "")
		next, ok := q.NextWakeup()
		if !ok {
			t.Fatalf("no wakeup during backoff")
		}
		waits = append(waits, next.Sub(clk.Now()))
		clk.Step(next.Sub(clk.Now()) - time.Millisecond)
		if got := admitNames(q); len(got) != 0 {
			t.Fatalf("admitted %v before the backoff ended", got)
		}
		clk.Step(time.Millisecond)
	}
	want := []time.Duration{
		100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1600 * time.Millisecond, 3200 * time.Millisecond, 6400 * time.Millisecond, 10 * time.Second, 10 * time.Second,
	}
	if diff := cmp.Diff(want, waits); diff != "" {
		t.Errorf("backoffs (-want +got):\n%s", diff)
	}
	// A success resets the backoff.
	q.Admit()
	q.Done("p", Ungated, "")
	if _, ok := q.NextWakeup(); ok {
		t.Errorf("a wakeup is due with nothing waiting")
	}
}

// TestPeriodicFlush: inadmissible pods are evaluated again after the flush interval
// even without an event.
func TestPeriodicFlush(t *testing.T) {
	var moves int
	q, clk := newTestQueue(WithObserver(ObserverFunc(func(_ BudgetKey, from, to Queue) {
		if from == QueueInadmissible && to == QueueActive {
			moves++
		}
	})))
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=1").Obj())
	q.UpsertPod(makePod("running").Req("cpu=1").Ungated().Pod())
	q.UpsertPod(makePod("p").Req("cpu=1").Pod())
	q.Admit()
	next, ok := q.NextWakeup()
	if want := t0.Add(DefaultFlushInterval); !ok || !next.Equal(want) {
		t.Fatalf("NextWakeup = %v, %v; want %v", next, ok, want)
	}
	clk.Step(DefaultFlushInterval - time.Second)
	q.Admit()
	if moves != 0 {
		t.Fatalf("flushed %d pods early", moves)
	}
	clk.Step(time.Second)
	q.Admit()
	if moves != 1 {
		t.Errorf("flushed %d pods, want 1", moves)
	}
	r, _ := q.Reader().WaitReason("p")
	if r.Code != CodeInsufficient {
		t.Errorf("after the flush the pod waits with %q, want %q", r.Code, CodeInsufficient)
	}
}

// TestStuckTerminatingPodStopsCounting: a pod past its deletion grace period is no
// longer charged, even with no further update (ResourceQuota's rule).
func TestStuckTerminatingPodStopsCounting(t *testing.T) {
	q, clk := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=1").Obj())
	grace := int64(30)
	stuck := makePod("stuck").Req("cpu=1").Ungated().Obj()
	now := metav1.NewTime(t0)
	stuck.DeletionTimestamp, stuck.DeletionGracePeriodSeconds = &now, &grace
	q.UpsertPod(NewPod(stuck, v1alpha1.SchedulingGate, clk.Now()))
	q.UpsertPod(makePod("p").Req("cpu=1").Pod())
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v while the terminating pod counts", got)
	}
	next, ok := q.NextWakeup()
	if want := t0.Add(30 * time.Second); !ok || !next.Equal(want) {
		t.Fatalf("NextWakeup = %v, %v; want %v", next, ok, want)
	}
	clk.Step(30*time.Second + time.Millisecond)
	if diff := cmp.Diff([]string{"p"}, admitNames(q)); diff != "" {
		t.Errorf("admitted (-want +got):\n%s", diff)
	}
}
