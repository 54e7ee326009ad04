package visibility

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// GroupVersionPath is the path prefix of the API.
const GroupVersionPath = "/apis/" + visv1.GroupName + "/v1alpha1"

// pendingPods serves the pendingpods subresources of q. It expects the request to be
// authenticated and authorized already (the generic API server's filters do both).
type pendingPods struct {
	queues    quota.Reader
	clock     clock.PassiveClock
	estimates Estimates // nil: no estimates
}

// request is what a pendingpods path names.
type request struct {
	budget        quota.BudgetKey
	offset, limit int
}

// parse reads a pendingpods path and its query. The path is one of
// /namespaces/NS/budgets/NAME/pendingpods and /clusterbudgets/NAME/pendingpods under
// GroupVersionPath.
func parse(r *http.Request) (request, error) {
	rest, ok := strings.CutPrefix(r.URL.Path, GroupVersionPath+"/")
	if !ok {
		return request{}, apierrors.NewNotFound(schema.GroupResource{Group: visv1.GroupName}, r.URL.Path)
	}
	parts := strings.Split(strings.TrimSuffix(rest, "/"), "/")
	var req request
	switch {
	case len(parts) == 5 && parts[0] == "namespaces" && parts[2] == visv1.ResourceBudgets && parts[4] == visv1.SubresourcePendingPods:
		req.budget = quota.BudgetKey{Namespace: parts[1], Name: parts[3]}
	case len(parts) == 3 && parts[0] == visv1.ResourceClusterBudgets && parts[2] == visv1.SubresourcePendingPods:
		req.budget = quota.BudgetKey{Name: parts[1]}
	default:
		return request{}, apierrors.NewNotFound(schema.GroupResource{Group: visv1.GroupName}, rest)
	}
	if req.budget.Name == "" || (parts[0] == "namespaces" && req.budget.Namespace == "") {
		return request{}, apierrors.NewBadRequest("the path names no budget")
	}
	var err error
	if req.limit, err = intParam(r, "limit", visv1.DefaultLimit); err != nil {
		return request{}, err
	}
	if req.offset, err = intParam(r, "offset", 0); err != nil {
		return request{}, err
	}
	if req.limit == 0 {
		req.limit = visv1.DefaultLimit
	}
	req.limit = min(req.limit, visv1.MaxLimit)
	return req, nil
}

func intParam(r *http.Request, name string, def int) (int, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("%s must be a whole number, not %q", name, s))
	}
	return n, nil
}

func (h pendingPods) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, apierrors.NewMethodNotSupported(schema.GroupResource{Group: visv1.GroupName, Resource: "pendingpods"}, r.Method))
		return
	}
	req, err := parse(r)
	if err != nil {
		writeError(w, err)
		return
	}
	page, ok := h.queues.Page(req.budget, req.offset, req.limit)
	if !ok {
		writeError(w, notFound(req.budget))
		return
	}
	list := NewPendingPodList(page, req.offset, h.clock.Now())
	for i := range list.Items {
		list.Items[i].EstimatedStart = estimatedStart(h.estimates, types.UID(list.Items[i].UID))
	}
	writeJSON(w, http.StatusOK, list)
}

// notFound is the answer for a budget the core does not hold: it does not exist, or
// the manager has not seen it yet.
func notFound(key quota.BudgetKey) error {
	if key.IsCluster() {
		return apierrors.NewNotFound(schema.GroupResource{Group: "quotagate.io", Resource: visv1.ResourceClusterBudgets}, key.Name)
	}
	return apierrors.NewNotFound(schema.GroupResource{Group: "quotagate.io", Resource: visv1.ResourceBudgets}, key.Namespace+"/"+key.Name)
}

// NewPendingPodList is a page of the core as the API answers it at now: offset is the
// position the page was asked from (a page of a whole queue, as the plugin builds from
// the manager's snapshot, has offset 0 and Total len(page.Pods)). It is the one place
// the core's queue becomes the API's type, so every reader prints alike.
func NewPendingPodList(page quota.BudgetPage, offset int, now time.Time) *visv1.PendingPodList {
	kind := "Budget"
	if page.Budget.IsCluster() {
		kind = "ClusterBudget"
	}
	list := &visv1.PendingPodList{
		TypeMeta:   metav1.TypeMeta{APIVersion: visv1.GroupVersion.String(), Kind: visv1.KindPendingPodList},
		ObjectMeta: metav1.ObjectMeta{Namespace: page.Budget.Namespace, Name: page.Budget.Name},
		BudgetKind: kind,
		State:      string(page.State),
		Strategy:   string(page.Strategy),
		Total:      int64(page.Total),
		Offset:     int64(min(offset, page.Total)),
		Items:      make([]visv1.PendingPod, 0, len(page.Pods)),
	}
	for _, p := range page.Pods {
		list.Items = append(list.Items, PendingPodOf(p, now))
	}
	return list
}

// writeError writes err as a metav1.Status, as kube-apiserver does, so that kubectl
// shows its message.
func writeError(w http.ResponseWriter, err error) {
	status := apierrors.APIStatus(nil)
	if s, ok := err.(apierrors.APIStatus); ok {
		status = s
	} else {
		status = apierrors.NewInternalError(err)
	}
	st := status.Status()
	st.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
	writeJSON(w, int(st.Code), &st)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// PendingPodOf is the API's view of a queued pod at time now.
func PendingPodOf(p quota.QueuedPod, now time.Time) visv1.PendingPod {
	item := visv1.PendingPod{
		Namespace:         p.Pod.Namespace,
		Name:              p.Pod.Name,
		UID:               string(p.Pod.UID),
		Position:          int64(p.Position),
		Priority:          p.Priority,
		Group:             p.Group,
		Requests:          p.Requests,
		CreationTimestamp: metav1.NewTime(p.Created),
		WaitingSeconds:    int64(max(0, now.Sub(p.Created)/time.Second)),
		Queue:             string(p.Queue),
		ReasonCode:        string(p.Reason.Code),
		Reason:            p.Reason.Message,
	}
	if p.RetryAt != nil {
		t := metav1.NewTime(*p.RetryAt)
		item.RetryAt = &t
	}
	return item
}
