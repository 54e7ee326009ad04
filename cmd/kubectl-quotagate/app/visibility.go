package app

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
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

// pendingPodsPath is the visibility API's path for key's queue.
func pendingPodsPath(key quota.BudgetKey) string {
	if key.IsCluster() {
		return "/apis/" + visv1.GroupName + "/v1alpha1/clusterbudgets/" + key.Name + "/pendingpods"
	}
	return "/apis/" + visv1.GroupName + "/v1alpha1/namespaces/" + key.Namespace + "/budgets/" + key.Name + "/pendingpods"
}

// visibilityQueues reads queues from visibility.quotagate.io through the API server,
// with the user's own credentials, a page of visv1.DefaultLimit pods at a time, and
// joins the pages into one list (offset 0, total as the last page says).
func visibilityQueues(rc rest.Interface) queueSource {
	return func(ctx context.Context, key quota.BudgetKey) (*visv1.PendingPodList, error) {
		path := pendingPodsPath(key)
		var all *visv1.PendingPodList
		for offset := 0; ; {
			res := rc.Get().AbsPath(path).
				Param("limit", strconv.Itoa(visv1.DefaultLimit)).Param("offset", strconv.Itoa(offset)).
				Do(ctx)
			// Error, unlike DoRaw, keeps the message of the Status the API answers.
			if err := res.Error(); err != nil {
				return nil, explainVisibilityError(key, path, err)
			}
			body, err := res.Raw()
			if err != nil {
				return nil, explainVisibilityError(key, path, err)
			}
			var page visv1.PendingPodList
			if err := json.Unmarshal(body, &page); err != nil {
				return nil, fmt.Errorf("reading %s: %w", path, err)
			}
			if all == nil {
				all = &page
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
	kind := "Budget"
	if bq.Budget.IsCluster() {
		kind = "ClusterBudget"
	}
	list := &visv1.PendingPodList{
		TypeMeta:   metav1.TypeMeta{APIVersion: visv1.GroupVersion.String(), Kind: visv1.KindPendingPodList},
		ObjectMeta: metav1.ObjectMeta{Namespace: bq.Budget.Namespace, Name: bq.Budget.Name},
		BudgetKind: kind,
		State:      string(bq.State),
		Strategy:   string(bq.Strategy),
		Total:      int64(len(bq.Pods)),
		Items:      make([]visv1.PendingPod, 0, len(bq.Pods)),
	}
	for _, p := range bq.Pods {
		list.Items = append(list.Items, visibility.PendingPodOf(p, now))
	}
	return list
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
