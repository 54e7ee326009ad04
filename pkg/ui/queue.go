package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
)

// queuePage reads one page of a budget's queue, in admission order, from the
// visibility API through the API server with the user's credentials: the manager
// copies only that page, so a queue of 10,000 pods costs the page no more than one of
// 100.
type queuePage func(ctx context.Context, kind, ns, name string, offset, limit int) (*visv1.PendingPodList, error)

// visibilityPages reads pages with rc, a REST client of the user's rest config.
func visibilityPages(rc rest.Interface) queuePage {
	return func(ctx context.Context, kind, ns, name string, offset, limit int) (*visv1.PendingPodList, error) {
		path := "/apis/" + visv1.GroupName + "/v1alpha1/namespaces/" + ns + "/" + visv1.ResourceBudgets + "/" + name + "/" + visv1.SubresourcePendingPods
		if kind == "ClusterBudget" {
			path = "/apis/" + visv1.GroupName + "/v1alpha1/" + visv1.ResourceClusterBudgets + "/" + name + "/" + visv1.SubresourcePendingPods
		}
		res := rc.Get().AbsPath(path).Param("limit", strconv.Itoa(limit)).Param("offset", strconv.Itoa(offset)).Do(ctx)
		if err := res.Error(); err != nil {
			return nil, err
		}
		body, err := res.Raw()
		if err != nil {
			return nil, err
		}
		var page visv1.PendingPodList
		if err := json.Unmarshal(body, &page); err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		return &page, nil
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
