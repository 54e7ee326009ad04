package app

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/visibility"
)

// podStatusSource reads where one gated pod waits.
type podStatusSource func(ctx context.Context, namespace, name string) (*visv1.PendingPodStatus, error)

// podStatusFromFlags returns env.podStatus for the plugin: the visibility API read with
// the kubeconfig's credentials, or nil (why reads the snapshot) with --manager-url.
func podStatusFromFlags(flags *genericclioptions.ConfigFlags, mf *ManagerFlags) func() (podStatusSource, error) {
	return func() (podStatusSource, error) {
		if mf.URL != "" {
			return nil, nil
		}
		cs, err := clientsetFromFlags(flags)
		if err != nil {
			return nil, err
		}
		return visibilityPodStatus(cs.CoreV1().RESTClient()), nil
	}
}

// visibilityPodStatus reads a pod's PendingPodStatus from visibility.quotagate.io through
// the API server, with the user's own credentials.
func visibilityPodStatus(rc rest.Interface) podStatusSource {
	return visibility.NewClient(rc).PodStatus
}

// errNotHeld is a podStatusSource's answer for a pod the manager holds no gated pod by
// that name for.
var errNotHeld = errors.New("the manager holds this pod in no queue: it has not seen the pod yet, or is admitting it right now")

// readPodStatus asks the visibility API where pod waits. It returns errNotHeld when the
// manager holds no such gated pod, and otherwise an error that says in a sentence what
// the refusal means.
func readPodStatus(ctx context.Context, read podStatusSource, pod *corev1.Pod) (*visv1.PendingPodStatus, error) {
	st, err := read(ctx, pod.Namespace, pod.Name)
	var status apierrors.APIStatus
	switch {
	case err == nil && st.UID != "" && pod.UID != "" && st.UID != pod.UID:
		// The manager holds an older pod of that name, not this one.
		return nil, errNotHeld
	case err == nil:
		return st, nil
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("you may not see where pod %s/%s waits: it needs get on pendingpods in %s in namespace %s (the view role has it when the chart aggregates it): %w",
			pod.Namespace, pod.Name, visv1.GroupName, pod.Namespace, err)
	case apierrors.IsNotFound(err) && errors.As(err, &status) && status.Status().Details != nil && status.Status().Details.Group == visv1.GroupName:
		// The manager's own 404: it holds no gated pod by that name.
		return nil, errNotHeld
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("the visibility API is not installed (kubectl get apiservice v1alpha1.%s; the chart's visibility.enabled): %w", visv1.GroupName, err)
	case apierrors.IsServiceUnavailable(err):
		return nil, fmt.Errorf("the visibility API is unavailable (kubectl get apiservice v1alpha1.%s shows why): %w", visv1.GroupName, err)
	}
	return nil, fmt.Errorf("reading %s: %w", visibility.PodStatusPath(pod.Namespace, pod.Name), err)
}

// placesOf converts the API's places to why's, ordered by budget as the snapshot path
// orders them.
func placesOf(st *visv1.PendingPodStatus) []podPlace {
	var places []podPlace
	for _, b := range st.Budgets {
		places = append(places, podPlace{
			Budget:   quota.BudgetKey{Namespace: b.Namespace, Name: b.Name},
			Position: int(b.Position),
			Of:       int(b.Total),
			Queue:    quota.Queue(b.Queue),
		})
	}
	slices.SortFunc(places, func(a, b podPlace) int { return a.Budget.Compare(b.Budget) })
	return places
}

// podStatusReader returns the visibility API's reader, or nil when why reads the
// snapshot instead (--manager-url, or tests that give no reader).
func (e *env) podStatusReader() (podStatusSource, error) {
	if e.podStatus == nil {
		return nil, nil
	}
	return e.podStatus()
}

// explainFromVisibility fills in why a gated pod waits, and where, from the visibility
// API. A refusal or an unavailable API is a note, not an error: the pod's own state is
// known already, and its events carry the latest reason.
func explainFromVisibility(ctx context.Context, read podStatusSource, pod *corev1.Pod, res *whyResult) {
	st, err := readPodStatus(ctx, read, pod)
	switch {
	case errors.Is(err, errNotHeld):
		res.Notes = append(res.Notes, err.Error())
	case err != nil:
		res.Notes = append(res.Notes, err.Error(),
			fmt.Sprintf("the latest reason is in the pod's events: kubectl events -n %s --for pod/%s", pod.Namespace, pod.Name))
	default:
		res.Reason = &quota.Reason{Code: quota.ReasonCode(st.ReasonCode), Message: st.Reason}
		res.Budgets = placesOf(st)
		res.EstimatedStart = st.EstimatedStart
		res.EstimateRecord = st.EstimateRecord
	}
}
