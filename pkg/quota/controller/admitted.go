package controller

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// Admitted events are per budget, not per pod: an event is an API write, and one per
// admitted pod doubled the cost of every admission. The status writer writes, at most
// once per AdmittedEventInterval for each budget, one Normal event on the Budget (or
// ClusterBudget) that sums up its admissions since the last one:
//
//	Admitted 37 pods in the last 8.2s; longest wait 2.1s
//
// Each pod's own record is its admitted-at and admitted-by annotations, written by the
// ungate patch itself, and quotagate_pod_wait_seconds. Options.PodAdmittedEvents brings
// back one event per pod for those who want them.

// admittedTally is what a budget admitted since its last Admitted event.
type admittedTally struct {
	pods    int
	longest time.Duration
	first   time.Time // the first admission counted
	last    time.Time // when the last event was emitted
}

// admittedTallies are, per budget, the admissions since its last Admitted event: the
// ungate workers add to them, the status writer takes those that are due.
type admittedTallies struct {
	// interval is the least time between two Admitted events of one budget.
	interval time.Duration
	mu       sync.Mutex
	byBudget map[quota.BudgetKey]*admittedTally
}

func newAdmittedTallies(interval time.Duration) *admittedTallies {
	return &admittedTallies{interval: interval, byBudget: map[quota.BudgetKey]*admittedTally{}}
}

// add counts one admission in the tally of every budget it was charged to.
func (ts *admittedTallies) add(budgets []quota.BudgetKey, wait time.Duration, now time.Time) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, key := range budgets {
		t := ts.byBudget[key]
		if t == nil {
			t = &admittedTally{}
			ts.byBudget[key] = t
		}
		if t.pods == 0 {
			t.first = now
		}
		t.pods++
		t.longest = max(t.longest, wait)
	}
}

// admittedEvent is one budget's Admitted event, ready to emit.
type admittedEvent struct {
	key     quota.BudgetKey
	message string
}

// due takes the tallies whose budget's last event is at least an interval old, and
// forgets budgets that admitted nothing for an interval (their next admission is
// announced at once).
func (ts *admittedTallies) due(now time.Time) []admittedEvent {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var due []admittedEvent
	for key, t := range ts.byBudget {
		if now.Sub(t.last) < ts.interval {
			continue
		}
		if t.pods == 0 {
			delete(ts.byBudget, key)
			continue
		}
		pods := "pods"
		if t.pods == 1 {
			pods = "pod"
		}
		due = append(due, admittedEvent{key: key, message: fmt.Sprintf("Admitted %d %s in the last %s; longest wait %s",
			t.pods, pods, roundWait(now.Sub(t.first)), roundWait(t.longest))})
		t.pods, t.longest, t.last = 0, 0, now
	}
	slices.SortFunc(due, func(a, b admittedEvent) int {
		return cmp.Or(strings.Compare(a.key.Namespace, b.key.Namespace), strings.Compare(a.key.Name, b.key.Name))
	})
	return due
}

// next is how long after now the next Admitted event is due, at most limit.
func (ts *admittedTallies) next(now time.Time, limit time.Duration) time.Duration {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, t := range ts.byBudget {
		if t.pods > 0 {
			limit = min(limit, max(t.last.Add(ts.interval).Sub(now), 0))
		}
	}
	return limit
}

// tracked is how many budgets have a tally.
func (ts *admittedTallies) tracked() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.byBudget)
}

// announceAdmitted writes the Admitted events that are due. It runs in the status
// writer, off the path of the ungate patches.
//
// They are written directly, not through the event recorder: the recorder folds events
// with the same reason on the same object into a series that keeps the first note and
// counts the rest, and these notes are what matters. One event per budget per interval
// needs no folding.
func (w *statusWriter) announceAdmitted(ctx context.Context) {
	logger := log.FromContext(ctx)
	for _, ev := range w.tallies.due(w.clock.Now()) {
		if err := w.writeAdmittedEvent(ctx, ev); err != nil && ctx.Err() == nil {
			logger.Error(err, "Writing an Admitted event failed", "budget", ev.key.String())
		}
	}
}

func (w *statusWriter) writeAdmittedEvent(ctx context.Context, ev admittedEvent) error {
	var obj client.Object = &v1alpha1.Budget{}
	kind, ns := "Budget", ev.key.Namespace
	if ev.key.IsCluster() {
		obj, kind, ns = &v1alpha1.ClusterBudget{}, "ClusterBudget", metav1.NamespaceDefault
	}
	if err := w.reader.Get(ctx, client.ObjectKey{Namespace: ev.key.Namespace, Name: ev.key.Name}, obj); err != nil {
		return client.IgnoreNotFound(err) // deleted since: nobody reads its events any more
	}
	now := w.clock.Now()
	e := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s.%x", ev.key.Name, now.UnixNano())},
		EventTime:  metav1.NewMicroTime(now),
		Regarding: corev1.ObjectReference{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: kind,
			Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID(), ResourceVersion: obj.GetResourceVersion(),
		},
		ReportingController: eventSource,
		ReportingInstance:   reportingInstance(),
		Action:              "Ungate",
		Reason:              "Admitted",
		Type:                corev1.EventTypeNormal,
		Note:                ev.message,
	}
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	if err := w.client.Create(ctx, e); err != nil {
		return fmt.Errorf("creating event %s/%s: %w", ns, e.Name, err)
	}
	return nil
}

// eventSource is the name the manager's events are reported under.
const eventSource = "quotagate-manager"

// reportingInstance names this replica in its events, as the event recorder does.
func reportingInstance() string {
	if h, err := os.Hostname(); err == nil && h != "" {
		return eventSource + "-" + h
	}
	return eventSource
}

// roundWait rounds a duration for an event's message: milliseconds below a second,
// tenths of a second above.
func roundWait(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}
