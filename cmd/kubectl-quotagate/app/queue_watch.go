package app

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/pkg/gates"
	"github.com/quotagate/quotagate/pkg/quota"
)

// queue -w re-reads a queue when its budget changes. The queues are served by the
// visibility API, which has no watch; the budget's status does change whenever a pod
// joins or leaves its queue or is admitted, and whenever its usage changes (which is
// what the reasons' amounts say), so a watch on the budget is the trigger. A pod
// moving between the active and backoff queues alone does not change the status: it
// shows with the next change.

// budgetTrigger watches the budgets whose queues queue -w shows.
type budgetTrigger struct {
	budgets, clusterBudgets watch.Interface
}

func (t *budgetTrigger) stop() {
	for _, w := range []watch.Interface{t.budgets, t.clusterBudgets} {
		if w != nil {
			w.Stop()
		}
	}
}

// watchQueueBudgets lists, then watches from that list, the budgets of the query: the
// one named, or the Budgets of the namespace, or every Budget and ClusterBudget.
func watchQueueBudgets(ctx context.Context, c client.WithWatch, q queueQuery) (*budgetTrigger, error) {
	t := &budgetTrigger{}
	var opts []client.ListOption
	if q.budget != nil {
		opts = append(opts, client.MatchingFields{"metadata.name": q.budget.Name})
	}
	if q.budget == nil || !q.budget.IsCluster() {
		ns := q.ns
		if q.budget != nil {
			ns = q.budget.Namespace
		}
		var list v1alpha1.BudgetList
		opts := append(opts, client.InNamespace(ns))
		if err := c.List(ctx, &list, opts...); err != nil {
			return nil, fmt.Errorf("listing budgets to watch (-w needs list and watch on budgets.quotagate.io): %w", err)
		}
		w, err := watchFrom(ctx, c, &v1alpha1.BudgetList{}, list.ResourceVersion, opts...)
		if err != nil {
			return nil, err
		}
		t.budgets = w
	}
	if (q.budget == nil && q.ns == "") || (q.budget != nil && q.budget.IsCluster()) {
		var list v1alpha1.ClusterBudgetList
		err := c.List(ctx, &list, opts...)
		switch {
		case apierrors.IsForbidden(err) && q.budget == nil:
			return t, nil // readQueues says that ClusterBudgets are not shown
		case err != nil:
			t.stop()
			return nil, fmt.Errorf("listing clusterbudgets to watch (-w needs list and watch on clusterbudgets.quotagate.io): %w", err)
		}
		w, err := watchFrom(ctx, c, &v1alpha1.ClusterBudgetList{}, list.ResourceVersion, opts...)
		if err != nil {
			t.stop()
			return nil, err
		}
		t.clusterBudgets = w
	}
	return t, nil
}

// watchQueues prints, each time a watched budget changes, the rows of its queue that
// changed since they were last printed (position, queue, reason, priority, requests,
// group or retry time; not the waiting time alone), and a row for each pod that left
// it; with -o, the budget's whole PendingPodList when it changed. A budget's queue is
// read again, through the visibility API or a new snapshot, each time.
func watchQueues(ctx context.Context, e *env, c client.WithWatch, out *outputFlags, p printers.ResourcePrinter, q queueQuery, lists []*visv1.PendingPodList, t *budgetTrigger) error {
	last := map[quota.BudgetKey]*visv1.PendingPodList{}
	for _, l := range lists {
		last[budgetKeyOf(l)] = l
	}
	rowsOnly := *out
	rowsOnly.noHeaders = true
	withBudget := q.budget == nil
	w := e.streams.Out
	for {
		ev, ok, err := nextEvent(ctx, t.budgets, t.clusterBudgets)
		if !ok || err != nil {
			return err
		}
		obj, ok := ev.Object.(client.Object)
		if !ok {
			continue
		}
		key := quota.BudgetKey{Namespace: obj.GetNamespace(), Name: obj.GetName()}
		if ev.Type == watch.Deleted {
			delete(last, key)
			continue
		}
		// A new reader each time: the snapshot's is the snapshot read when it was made.
		read, err := e.queueReader(ctx)
		if err != nil {
			return err
		}
		l, err := read(ctx, key)
		var noQueue *noQueueError
		switch {
		case apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || errors.As(err, &noQueue):
			if q.budget != nil {
				return err
			}
			continue // as readQueues skips it
		case err != nil:
			return err
		}
		notes, err := keepSelected(ctx, c, q.selector, []*visv1.PendingPodList{l})
		if err != nil {
			return err
		}
		before := last[key]
		last[key] = l
		if p != nil {
			if before == nil || !sameQueue(before, l) {
				if err := printQueue(w, out, p, l, e.now()); err != nil {
					return err
				}
			}
			writeNotes(e.streams.ErrOut, notes)
			continue
		}
		changed := changedPods(ctx, c, before, l)
		if len(changed.Items) > 0 {
			if err := rowsOnly.printTable(w, queueColumns(withBudget), queueRows(changed, out.wide(), withBudget, e.now())); err != nil {
				return err
			}
		}
		writeNotes(e.streams.ErrOut, notes)
	}
}

// changedPods is a list of the pods of now whose place, reason or requests differ from
// before (or that were not in it), then the pods of before that left, each with
// position 0 and, as reason, what became of it.
func changedPods(ctx context.Context, c client.Client, before, now *visv1.PendingPodList) *visv1.PendingPodList {
	out := now.DeepCopy()
	out.Items = nil
	was := map[string]visv1.PendingPod{}
	if before != nil {
		for _, p := range before.Items {
			was[p.Namespace+"/"+p.Name] = p
		}
	}
	for _, p := range now.Items {
		id := p.Namespace + "/" + p.Name
		if old, ok := was[id]; !ok || !samePlace(old, p) {
			out.Items = append(out.Items, p)
		}
		delete(was, id)
	}
	if before != nil {
		for _, p := range before.Items {
			if _, left := was[p.Namespace+"/"+p.Name]; left {
				p.Position, p.Queue, p.RetryAt, p.ReasonCode, p.EstimatedStart = 0, "-", nil, "", nil
				p.CreationTimestamp = metav1.Time{}
				p.Reason = whatBecameOf(ctx, c, p)
				out.Items = append(out.Items, p)
			}
		}
	}
	return out
}

// whatBecameOf says what became of a pod that left a queue, as far as the user may
// read it.
func whatBecameOf(ctx context.Context, c client.Client, p visv1.PendingPod) string {
	var pod corev1.Pod
	err := c.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Name}, &pod)
	switch {
	case apierrors.IsNotFound(err) || (err == nil && p.UID != "" && string(pod.UID) != p.UID):
		return "deleted"
	case err == nil && !gates.HasGate(&pod, v1alpha1.SchedulingGate):
		return "admitted"
	}
	return "no longer in this queue"
}

// samePlace reports whether a pod shows the same in a queue's rows, its waiting time
// aside.
func samePlace(a, b visv1.PendingPod) bool {
	a.WaitingSeconds, b.WaitingSeconds = 0, 0
	return reflect.DeepEqual(a, b)
}

// sameQueue reports whether two reads of a queue hold the same pods in the same
// places, waiting times aside.
func sameQueue(a, b *visv1.PendingPodList) bool {
	if len(a.Items) != len(b.Items) || a.State != b.State || a.Total != b.Total {
		return false
	}
	for i := range a.Items {
		if !samePlace(a.Items[i], b.Items[i]) {
			return false
		}
	}
	return true
}
