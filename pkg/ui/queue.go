package ui

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/visibility"
)

// queuePage reads one page of a budget's queue, in admission order, from the
// visibility API through the API server with the user's credentials: the manager
// copies only that page, so a queue of 10,000 pods costs the page no more than one of
// 100.
type queuePage func(ctx context.Context, kind, ns, name string, offset, limit int) (*visv1.PendingPodList, error)

// visibilityPages reads pages with rc, a REST client of the user's rest config.
func visibilityPages(rc rest.Interface) queuePage {
	c := visibility.NewClient(rc)
	return func(ctx context.Context, kind, ns, name string, offset, limit int) (*visv1.PendingPodList, error) {
		key := quota.BudgetKey{Namespace: ns, Name: name}
		if kind == "ClusterBudget" {
			key = quota.BudgetKey{Name: name}
		}
		return c.PendingPods(ctx, key, offset, limit)
	}
}

// explainQueueError says what a refused queue read means, as the plugin's queue does.
func explainQueueError(kind, ns string, err error) string {
	switch {
	case apierrors.IsForbidden(err) && kind == "ClusterBudget":
		return fmt.Sprintf("You may not see this ClusterBudget's queue: it needs get on clusterbudgets/pendingpods in %s (the chart's <release>-clusterqueue-viewer ClusterRole). The API server said: %v", visv1.GroupName, err)
	case apierrors.IsForbidden(err):
		return fmt.Sprintf("You may not see this Budget's queue: it needs get on budgets/pendingpods in %s in namespace %s (the view role has it when the chart aggregates it). The API server said: %v", visv1.GroupName, ns, err)
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("The manager has no queue for this budget: it has not seen it yet, or the visibility API is not installed (kubectl get apiservice v1alpha1.%s): %v", visv1.GroupName, err)
	case apierrors.IsServiceUnavailable(err):
		return fmt.Sprintf("The visibility API is unavailable (kubectl get apiservice v1alpha1.%s shows why): %v", visv1.GroupName, err)
	}
	return fmt.Sprintf("Reading the queue failed: %v", err)
}
