package visibility

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// NewHandler serves every path under GroupVersionPath from queues: one pod's
// PendingPodStatus (/namespaces/NS/pendingpods/NAME) and the pendingpods subresources
// of budgets, each pod with its estimated start when WithEstimates gives a source, and
// the what-if (POST /namespaces/NS/podsimulations) when WithSimulator gives one. It
// neither authenticates nor authorizes: New serves it behind delegated authentication
// and authorization, and only on the leader; tests serve it bare.
func NewHandler(queues quota.Reader, clk clock.PassiveClock, opts ...HandlerOption) http.Handler {
	var o handlerOptions
	for _, opt := range opts {
		opt(&o)
	}
	pods := pendingPods{queues: queues, clock: clk, estimates: o.estimates}
	status := podStatus{queues: queues, clock: clk, estimates: o.estimates}
	sims := newPodSimulations(o.simulator, o.simulationLimits)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ns, named, ok := podSimulationsPath(r.URL.Path); ok {
			sims.serve(w, r, ns, named)
			return
		}
		if ns, name, ok := podStatusPath(r.URL.Path); ok {
			status.serve(w, r, ns, name)
			return
		}
		pods.ServeHTTP(w, r)
	})
}

// podStatusPath reads GroupVersionPath/namespaces/NS/pendingpods/NAME.
func podStatusPath(path string) (namespace, name string, ok bool) {
	rest, ok := strings.CutPrefix(path, GroupVersionPath+"/namespaces/")
	if !ok {
		return "", "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || parts[1] != visv1.ResourcePendingPods || parts[0] == "" || parts[2] == "" {
		return "", "", false
	}
	return parts[0], parts[2], true
}

// podStatus serves one gated pod's place in every budget that holds it. It expects the
// request to be authenticated and authorized already (get on pendingpods in the pod's
// namespace).
type podStatus struct {
	queues    quota.Reader
	clock     clock.PassiveClock
	estimates Estimates // nil: no estimates
}

var pendingPodsResource = schema.GroupResource{Group: visv1.GroupName, Resource: visv1.ResourcePendingPods}

func (h podStatus) serve(w http.ResponseWriter, r *http.Request, namespace, name string) {
	if r.Method != http.MethodGet {
		writeError(w, apierrors.NewMethodNotSupported(pendingPodsResource, r.Method))
		return
	}
	wait, ok := h.queues.PodWaitByName(namespace, name)
	if !ok {
		err := apierrors.NewNotFound(pendingPodsResource, name)
		err.ErrStatus.Message = fmt.Sprintf("the manager holds no gated pod %s/%s: it is not gated by quotagate, does not exist, or the manager has not seen it yet", namespace, name)
		writeError(w, err)
		return
	}
	st := toPodStatus(wait, h.clock.Now())
	st.EstimatedStart = estimatedStart(h.estimates, wait.Pod.UID)
	st.EstimateRecord = estimateRecord(h.estimates, wait.Places)
	writeJSON(w, http.StatusOK, st)
}

// toPodStatus converts the core's answer to the API's type.
func toPodStatus(wait quota.PodWait, now time.Time) *visv1.PendingPodStatus {
	st := &visv1.PendingPodStatus{
		TypeMeta: metav1.TypeMeta{APIVersion: visv1.GroupVersion.String(), Kind: visv1.KindPendingPodStatus},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:         wait.Pod.Namespace,
			Name:              wait.Pod.Name,
			UID:               wait.Pod.UID,
			CreationTimestamp: metav1.NewTime(wait.Created),
		},
		Priority:       wait.Priority,
		Group:          wait.Group,
		Requests:       wait.Requests,
		WaitingSeconds: int64(max(0, now.Sub(wait.Created)/time.Second)),
		ReasonCode:     string(wait.Reason.Code),
		Reason:         wait.Reason.Message,
		Held:           wait.Held,
		Budgets:        make([]visv1.BudgetPlace, 0, len(wait.Places)),
	}
	if wait.RetryAt != nil {
		t := metav1.NewTime(*wait.RetryAt)
		st.RetryAt = &t
	}
	for _, p := range wait.Places {
		kind := "Budget"
		if p.Budget.IsCluster() {
			kind = "ClusterBudget"
		}
		st.Budgets = append(st.Budgets, visv1.BudgetPlace{
			BudgetKind: kind,
			Namespace:  p.Budget.Namespace,
			Name:       p.Budget.Name,
			Position:   int64(p.Position),
			Total:      int64(p.Total),
			Queue:      string(p.Queue),
		})
	}
	return st
}
