package app

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// noQueueError says that the manager's snapshot holds no queue for a budget.
type noQueueError struct{ key quota.BudgetKey }

func (e *noQueueError) Error() string {
	return fmt.Sprintf("the manager has no queue for %s: no such budget, or the manager has not seen it yet", e.key.Describe())
}

// queueReader returns the reader of budgets' queues: the visibility API, or, with
// --manager-url (and in tests that give no visibility reader), the manager's snapshot,
// read once for every budget the command shows, with the estimated starts it carries.
func (e *env) queueReader(ctx context.Context) (queueSource, error) {
	if e.queues != nil {
		read, err := e.queues()
		if err != nil {
			return nil, err
		}
		if read != nil {
			return read, nil
		}
	}
	src, err := e.snapshots()
	if err != nil {
		return nil, err
	}
	if src == nil {
		return nil, errors.New("no source of queues: neither the visibility API nor a manager (--manager-url) was given")
	}
	snap, err := src.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	view, now := newSnapshotView(snap), e.now()
	return func(_ context.Context, key quota.BudgetKey) (*visv1.PendingPodList, error) {
		bq, ok := view.byBudget[key]
		if !ok {
			return nil, &noQueueError{key: key}
		}
		l := pendingPodList(bq, now)
		for i := range l.Items {
			l.Items[i].EstimatedStart = view.starts[types.UID(l.Items[i].UID)]
		}
		return l, nil
	}, nil
}

// readQueues reads the queues of the Budgets of namespace ns, or with ns "" of every
// Budget and every ClusterBudget, as the user may list them. A queue the user may not
// read, or that the manager does not hold yet, is skipped with a note; so are
// ClusterBudgets when the user may not list them. Listing Budgets is the one thing that
// must work: without it there is nothing to show.
func readQueues(ctx context.Context, c client.Client, read queueSource, ns string) ([]*visv1.PendingPodList, []string, error) {
	var budgets v1alpha1.BudgetList
	if err := c.List(ctx, &budgets, client.InNamespace(ns)); err != nil {
		if apierrors.IsForbidden(err) && ns == "" {
			return nil, nil, fmt.Errorf("listing budgets in every namespace (-A needs list on budgets.quotagate.io cluster-wide; without -A, queue shows the queues of one namespace's budgets): %w", err)
		}
		return nil, nil, fmt.Errorf("listing budgets: %w", err)
	}
	var keys []quota.BudgetKey
	for _, b := range budgets.Items {
		keys = append(keys, quota.BudgetKey{Namespace: b.Namespace, Name: b.Name})
	}
	var notes []string
	if ns == "" {
		var cbs v1alpha1.ClusterBudgetList
		switch err := c.List(ctx, &cbs); {
		case apierrors.IsForbidden(err):
			notes = append(notes, "ClusterBudgets' queues are not shown: you may not list ClusterBudgets")
		case err != nil:
			return nil, nil, fmt.Errorf("listing clusterbudgets: %w", err)
		}
		for _, b := range cbs.Items {
			keys = append(keys, quota.BudgetKey{Name: b.Name})
		}
	}
	slices.SortFunc(keys, quota.BudgetKey.Compare)
	lists := make([]*visv1.PendingPodList, 0, len(keys))
	for _, key := range keys {
		l, err := read(ctx, key)
		var noQueue *noQueueError
		switch {
		case apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || errors.As(err, &noQueue):
			notes = append(notes, fmt.Sprintf("skipped %s: %v", key.Describe(), err))
		case err != nil:
			return nil, nil, err
		default:
			lists = append(lists, l)
		}
	}
	return lists, notes, nil
}

// queueQuery is which queues queue shows: budget's, or without it those of namespace
// ns's Budgets (every Budget and ClusterBudget for ns ""), with only the pods whose
// labels selector matches.
type queueQuery struct {
	budget   *quota.BudgetKey
	ns       string
	selector labels.Selector
}

// read reads the queues of the query, with the pods the selector matches.
func (q queueQuery) read(ctx context.Context, e *env, c client.Client, read queueSource) ([]*visv1.PendingPodList, []string, error) {
	var lists []*visv1.PendingPodList
	var notes []string
	if q.budget != nil {
		l, err := read(ctx, *q.budget)
		if err != nil {
			return nil, nil, err
		}
		lists = []*visv1.PendingPodList{l}
	} else {
		var err error
		if lists, notes, err = readQueues(ctx, c, read, q.ns); err != nil {
			return nil, nil, err
		}
	}
	more, err := keepSelected(ctx, c, q.selector, lists)
	return lists, append(notes, more...), err
}

// keepSelected drops from the lists the pods whose labels sel does not match, reading
// the labels of each namespace's matching pods with the user's credentials. The pods of
// a namespace where the user may not list pods are dropped, with a note. Positions and
// totals stay those of the whole queue.
func keepSelected(ctx context.Context, c client.Client, sel labels.Selector, lists []*visv1.PendingPodList) ([]string, error) {
	if sel == nil || sel.Empty() {
		return nil, nil
	}
	matching := map[string]map[string]bool{} // namespace -> names of matching pods
	var notes []string
	for _, l := range lists {
		for _, p := range l.Items {
			if _, done := matching[p.Namespace]; done {
				continue
			}
			var pods corev1.PodList
			err := c.List(ctx, &pods, client.InNamespace(p.Namespace), client.MatchingLabelsSelector{Selector: sel})
			switch {
			case apierrors.IsForbidden(err):
				notes = append(notes, fmt.Sprintf("the gated pods of namespace %s are not shown: -l needs list on pods there: %v", p.Namespace, err))
			case err != nil:
				return nil, fmt.Errorf("listing pods of namespace %s with -l: %w", p.Namespace, err)
			}
			names := map[string]bool{}
			for _, pod := range pods.Items {
				names[pod.Name] = true
			}
			matching[p.Namespace] = names
		}
	}
	for _, l := range lists {
		l.Items = slices.DeleteFunc(l.Items, func(p visv1.PendingPod) bool { return !matching[p.Namespace][p.Name] })
	}
	return notes, nil
}
