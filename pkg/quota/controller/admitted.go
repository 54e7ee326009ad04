package controller

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// Admitted events are per budget, not per pod: an event is an API write, and one per
// admitted pod doubled the cost of every admission. The status writer emits, at most
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

// tally counts one admission in the tally of every budget it was charged to.
func (c *Controller) tally(budgets []quota.BudgetKey, wait time.Duration, now time.Time) {
	c.talliesMu.Lock()
	defer c.talliesMu.Unlock()
	for _, key := range budgets {
		t := c.tallies[key]
		if t == nil {
			t = &admittedTally{}
			c.tallies[key] = t
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

// dueAdmittedEvents takes the tallies whose budget's last event is at least an interval
// old, and forgets budgets that admitted nothing for an interval (their next admission
// is announced at once).
func (c *Controller) dueAdmittedEvents(now time.Time) []admittedEvent {
	c.talliesMu.Lock()
	defer c.talliesMu.Unlock()
	var due []admittedEvent
	for key, t := range c.tallies {
		if now.Sub(t.last) < c.opts.AdmittedEventInterval {
			continue
		}
		if t.pods == 0 {
			delete(c.tallies, key)
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

// announceAdmitted emits the Admitted events that are due. It runs in the status
// writer, off the path of the ungate patches.
func (c *Controller) announceAdmitted(ctx context.Context) {
	for _, ev := range c.dueAdmittedEvents(c.opts.Clock.Now()) {
		var obj client.Object = &v1alpha1.Budget{}
		if ev.key.IsCluster() {
			obj = &v1alpha1.ClusterBudget{}
		}
		if err := c.reader.Get(ctx, client.ObjectKey{Namespace: ev.key.Namespace, Name: ev.key.Name}, obj); err != nil {
			continue // deleted since: nobody reads its events any more
		}
		c.recorder.Eventf(obj, nil, corev1.EventTypeNormal, "Admitted", "Ungate", "%s", ev.message)
	}
}

// roundWait rounds a duration for an event's message: milliseconds below a second,
// tenths of a second above.
func roundWait(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}
