package visibility

import (
	"context"
	"fmt"
	"net/http"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
)

// AccessReviewer asks the API server whether a user may do something: a
// SubjectAccessReview.
type AccessReviewer interface {
	Allowed(ctx context.Context, u user.Info, attrs authorizationv1.ResourceAttributes) (allowed bool, reason string, err error)
}

// SubjectAccessReviewer is the AccessReviewer of an API server's client.
type SubjectAccessReviewer struct {
	Client authorizationclient.SubjectAccessReviewInterface
}

var _ AccessReviewer = SubjectAccessReviewer{}

// Allowed creates a SubjectAccessReview for u.
func (s SubjectAccessReviewer) Allowed(ctx context.Context, u user.Info, attrs authorizationv1.ResourceAttributes) (bool, string, error) {
	extra := make(map[string]authorizationv1.ExtraValue, len(u.GetExtra()))
	for k, v := range u.GetExtra() {
		extra[k] = v
	}
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		ResourceAttributes: &attrs, User: u.GetName(), Groups: u.GetGroups(), UID: u.GetUID(), Extra: extra,
	}}
	got, err := s.Client.Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("creating a SubjectAccessReview: %w", err)
	}
	return got.Status.Allowed && !got.Status.Denied, got.Status.Reason, nil
}

// simulationAccess lets a podsimulations create through to next only for a user who
// may create pods in its namespace: a simulation tells what the cluster would do with
// pods, and the generic server has authorized create podsimulations only. It runs
// before leaderOnly, where the user is the one kube-apiserver authenticated. A request
// a standby forwarded comes as the standby (which checked its user before forwarding),
// so the leader lets it through when its sender may create podsimulations/forwarded,
// which only the manager's ClusterRole grants; a user who sets the forwarded header
// himself is refused there. Other requests pass untouched.
func simulationAccess(rev AccessReviewer, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ns, named, ok := podSimulationsPath(r.URL.Path)
		if !ok || named || r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		u, ok := genericrequest.UserFrom(r.Context())
		if !ok {
			writeError(w, apierrors.NewForbidden(podSimulationsResource, "", fmt.Errorf("the request carries no authenticated user")))
			return
		}
		attrs := authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods"}
		what := fmt.Sprintf("create pods in namespace %q: a pod simulation answers only users who may create the pods it simulates", ns)
		if r.Header.Get(forwardedHeader) != "" {
			attrs = authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Group: visv1.GroupName, Resource: visv1.ResourcePodSimulations, Subresource: "forwarded"}
			what = "forward pod simulations: only the manager's replicas may"
		}
		allowed, reason, err := rev.Allowed(r.Context(), u, attrs)
		if err != nil {
			writeError(w, apierrors.NewInternalError(err))
			return
		}
		if !allowed {
			msg := fmt.Sprintf("user %q may not %s", u.GetName(), what)
			if reason != "" {
				msg += " (" + reason + ")"
			}
			err := apierrors.NewForbidden(podSimulationsResource, "", fmt.Errorf("%s", msg))
			err.ErrStatus.Message = msg
			writeError(w, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}
