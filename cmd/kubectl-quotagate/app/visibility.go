package app

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/quotagate/quotagate/api/v1alpha1"
	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// queueSource reads one budget's whole queue, in admission order.
type queueSource func(ctx context.Context, key quota.BudgetKey) (quota.BudgetQueue, error)

// pendingPodsPath is the visibility API's path for key's queue.
func pendingPodsPath(key quota.BudgetKey) string {
	if key.IsCluster() {
		return "/apis/" + visv1.GroupName + "/v1alpha1/clusterbudgets/" + key.Name + "/pendingpods"
	}
	return "/apis/" + visv1.GroupName + "/v1alpha1/namespaces/" + key.Namespace + "/budgets/" + key.Name + "/pendingpods"
}

// visibilityQueues reads queues from visibility.quotagate.io through the API server,
// with the user's own credentials, a page of visv1.DefaultLimit pods at a time.
func visibilityQueues(rc rest.Interface) queueSource {
	return func(ctx context.Context, key quota.BudgetKey) (quota.BudgetQueue, error) {
		path := pendingPodsPath(key)
		var bq quota.BudgetQueue
		for offset := 0; ; {
			body, err := rc.Get().AbsPath(path).
				Param("limit", strconv.Itoa(visv1.DefaultLimit)).Param("offset", strconv.Itoa(offset)).
				DoRaw(ctx)
			if err != nil {
				return bq, explainVisibilityError(key, path, err)
			}
			var list visv1.PendingPodList
			if err := json.Unmarshal(body, &list); err != nil {
				return bq, fmt.Errorf("reading %s: %w", path, err)
			}
			if offset == 0 {
				bq = quota.BudgetQueue{Budget: key, State: v1alpha1.BudgetState(list.State), Strategy: v1alpha1.QueueingStrategy(list.Strategy), Pods: []quota.QueuedPod{}}
			}
			for _, p := range list.Items {
				bq.Pods = append(bq.Pods, fromPendingPod(p))
			}
			offset += len(list.Items)
			if len(list.Items) == 0 || int64(offset) >= list.Total {
				return bq, nil
			}
		}
	}
}

func fromPendingPod(p visv1.PendingPod) quota.QueuedPod {
	qp := quota.QueuedPod{
		Position: int(p.Position),
		Pod:      quota.PodRef{UID: types.UID(p.UID), Namespace: p.Namespace, Name: p.Name},
		Group:    p.Group,
		Priority: p.Priority,
		Requests: corev1.ResourceList(p.Requests),
		Created:  p.CreationTimestamp.Time,
		Queue:    quota.Queue(p.Queue),
		Reason:   quota.Reason{Code: quota.ReasonCode(p.ReasonCode), Message: p.Reason},
	}
	if p.RetryAt != nil {
		t := p.RetryAt.Time
		qp.RetryAt = &t
	}
	return qp
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
