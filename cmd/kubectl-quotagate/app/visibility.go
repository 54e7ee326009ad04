package app

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/visibility"
)

// queueSource reads one budget's whole queue, in admission order, as the visibility
// API answers it: one PendingPodList with every page's pods.
type queueSource func(ctx context.Context, key quota.BudgetKey) (*visv1.PendingPodList, error)

// visibilityQueues reads queues from visibility.quotagate.io through the API server,
// with the user's own credentials, a page of visv1.DefaultLimit pods at a time, and
// joins the pages into one list (offset 0, total as the last page says).
func visibilityQueues(rc rest.Interface) queueSource {
	c := visibility.NewClient(rc)
	return func(ctx context.Context, key quota.BudgetKey) (*visv1.PendingPodList, error) {
		var all *visv1.PendingPodList
		for offset := 0; ; {
			page, err := c.PendingPods(ctx, key, offset, visv1.DefaultLimit)
			if err != nil {
				return nil, explainVisibilityError(key, visibility.PendingPodsPath(key), err)
			}
			if all == nil {
				all = page
				if all.Items == nil {
					all.Items = []visv1.PendingPod{}
				}
			} else {
				all.Items = append(all.Items, page.Items...)
				all.Total = page.Total
			}
			offset += len(page.Items)
			if len(page.Items) == 0 || int64(offset) >= page.Total {
				all.TypeMeta = metav1.TypeMeta{APIVersion: visv1.GroupVersion.String(), Kind: visv1.KindPendingPodList}
				return all, nil
			}
		}
	}
}

// pendingPodList is a budget's queue from the manager's snapshot as the visibility
// API would answer it at now, so that both sources print alike.
func pendingPodList(bq quota.BudgetQueue, now time.Time) *visv1.PendingPodList {
	whole := quota.BudgetPage{Budget: bq.Budget, State: bq.State, Strategy: bq.Strategy, Total: len(bq.Pods), Pods: bq.Pods}
	return visibility.NewPendingPodList(whole, 0, now)
}

// budgetKeyOf is the budget a PendingPodList names.
func budgetKeyOf(l *visv1.PendingPodList) quota.BudgetKey {
	return quota.BudgetKey{Namespace: l.Namespace, Name: l.Name}
}

// explainVisibilityError says what a refusal means for the user.
func explainVisibilityError(key quota.BudgetKey, path string, err error) error {
	switch {
	case apierrors.IsForbidden(err) && key.IsCluster():
		return fmt.Errorf("you may not see %s's queue: it needs get on clusterbudgets/pendingpods in %s (the chart's <release>-clusterqueue-viewer ClusterRole): %w", key.Describe(), visv1.GroupName, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("you may not see %s's queue: it needs get on budgets/pendingpods in %s in namespace %s (the view role has it when the chart aggregates it): %w", key.Describe(), visv1.GroupName, key.Namespace, err)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("the manager has no queue for %s: no such budget, the manager has not seen it yet, or the visibility API is not installed (kubectl get apiservice v1alpha1.%s): %w", key.Describe(), visv1.GroupName, err)
	}
	return fmt.Errorf("reading %s: %w", path, err)
}
