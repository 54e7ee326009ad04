package admission_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/gates"
)

// placementGuardName is the policy and binding in config/policy/placement_guard.yaml.
const placementGuardName = "quotagate-placement-guard"

// testPlacementGuard adds tolerations to pods at each step of their life, as the tenant
// (the built-in edit role), with the shipped placement guard in force. A pod admitted on
// a flavor whose nodes are all taken stays Pending, unbound; a toleration added then could
// let kube-scheduler put it on another flavor's nodes, where it is not charged. So an
// admitted pod's tolerations may not change until it is bound: before admission they
// change freely (the manager's own ungate patch adds its flavor's), and once bound too.
func testPlacementGuard(t *testing.T, e *env) {
	ctx := t.Context()
	e.applyShippedPolicy(t, "placement_guard.yaml")
	tenant := e.tenantClient(t)
	manager := e.managerClient(t)
	tenantUser := "system:serviceaccount:" + e.gated + ":tenant"
	admin, err := e.client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("who the cluster admin is: %v", err)
	}

	// The flavor the manager puts pods on: nodes labelled pool=gpu (there are none, so
	// its pods stay Pending) tainted gpu=true:NoSchedule. The tenant would rather reach
	// the nodes of another flavor, tainted example.com/spot.
	flavorLabels := map[string]string{"example.com/pool": "gpu"}
	flavorToleration := corev1.Toleration{Key: "example.com/gpu", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}
	spot := corev1.Toleration{Key: "example.com/spot", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	const spotText = "example.com/spot:NoSchedule"

	create := func(t *testing.T, name string, nodeSelector map[string]string) *corev1.Pod {
		t.Helper()
		pod := podtest.New(name).Obj()
		pod.Spec.NodeSelector = nodeSelector
		created, err := tenant.CoreV1().Pods(e.gated).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating pod %s: %v", name, err)
		}
		if !gates.HasGate(created, v1alpha1.SchedulingGate) {
			t.Fatalf("pod %s was not gated: %v", name, gateNames(created))
		}
		return created
	}
	// admit sends the manager's ungate patch, with the flavor's labels and toleration
	// when onFlavor.
	admit := func(t *testing.T, pod *corev1.Pod, onFlavor bool) *corev1.Pod {
		t.Helper()
		var labels map[string]string
		var tolerations []corev1.Toleration
		if onFlavor {
			labels, tolerations = flavorLabels, []corev1.Toleration{flavorToleration}
		}
		patch, ok, err := gates.UngatePatchOnFlavor(pod, v1alpha1.SchedulingGate, nil, labels, tolerations)
		if err != nil || !ok {
			t.Fatalf("UngatePatchOnFlavor(%s) = %v, %v; want a patch", pod.Name, ok, err)
		}
		got, err := manager.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("the manager's ungate patch of %s: %v", pod.Name, err)
		}
		return got
	}
	// tolerate adds tol to the pod's tolerations, as c, without reading the pod again:
	// kubectl patch --type=json.
	tolerate := func(ctx context.Context, c kubernetes.Interface, pod *corev1.Pod, tol corev1.Toleration, dryRun bool) error {
		value, err := json.Marshal(tol)
		if err != nil {
			return err
		}
		patch := `[{"op":"add","path":"/spec/tolerations/-","value":` + string(value) + `}]`
		if len(pod.Spec.Tolerations) == 0 {
			patch = `[{"op":"add","path":"/spec/tolerations","value":[` + string(value) + `]}]`
		}
		opts := metav1.PatchOptions{}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		_, err = c.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.JSONPatchType, []byte(patch), opts)
		return err
	}
	tolerations := func(t *testing.T, pod *corev1.Pod) []corev1.Toleration {
		t.Helper()
		got, err := e.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got.Spec.Tolerations
	}
	wantRefusal := func(pod *corev1.Pod, user string) []string {
		return []string{
			"ValidatingAdmissionPolicy '" + placementGuardName + "'",
			"pod " + pod.Name + " in namespace " + pod.Namespace + " (quotagate.io/enabled=true) counts against its budgets and is not bound to a node yet",
			"this update by " + user + " adds " + spotText,
			"create a new pod, which waits in its budget queue",
		}
	}

	// An admitted pod that kube-scheduler cannot place: its own nodeSelector asks for the
	// flavor's nodes.
	admitted := admit(t, create(t, "placement-admitted", flavorLabels), false)
	// The API server loads the policy asynchronously.
	testbed.Poll(t, waitTimeout, "the placement guard to take effect", func(ctx context.Context) (bool, error) {
		err := tolerate(ctx, tenant, admitted, spot, true)
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), placementGuardName), nil
	})

	for name, tc := range map[string]struct {
		client kubernetes.Interface
		user   string
	}{
		"the tenant":          {tenant, tenantUser},
		"a cluster admin too": {e.client, admin.Status.UserInfo.Username},
	} {
		t.Run("a toleration added to an admitted pod that is not scheduled yet is refused: "+name, func(t *testing.T) {
			err := tolerate(ctx, tc.client, admitted, spot, false)
			want := wantRefusal(admitted, tc.user)
			if !apierrors.IsForbidden(err) || !containsAll(err.Error(), want...) {
				t.Errorf("patch = %v, want 403 containing %q", err, want)
			}
			if diff := cmp.Diff(admitted.Spec.Tolerations, tolerations(t, admitted)); diff != "" {
				t.Errorf("tolerations after the refusal (-before +after):\n%s", diff)
			}
		})
	}

	t.Run("other updates of an admitted pod that is not scheduled yet pass", func(t *testing.T) {
		patch := `{"metadata":{"labels":{"app":"web"},"annotations":{"example.com/note":"waiting for a gpu node"}}}`
		got, err := tenant.CoreV1().Pods(e.gated).Patch(ctx, admitted.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("the tenant labelling and annotating the pod: %v", err)
		}
		if got.Labels["app"] != "web" || got.Annotations["example.com/note"] == "" {
			t.Errorf("labels %v, annotations %v; want app=web and the note", got.Labels, got.Annotations)
		}
	})

	t.Run("a gated pod's tolerations change, the manager's ungate patch adds its flavor's, then none may be added", func(t *testing.T) {
		gated := create(t, "placement-gated", nil)
		if err := tolerate(ctx, tenant, gated, spot, false); err != nil {
			t.Fatalf("the tenant adding a toleration to a gated pod: %v", err)
		}
		before, err := e.client.CoreV1().Pods(e.gated).Get(ctx, gated.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(before.Spec.Tolerations, spot) {
			t.Errorf("the gated pod's tolerations %v lack the one the tenant added", before.Spec.Tolerations)
		}
		ungated := admit(t, before, true)
		want := append(append([]corev1.Toleration(nil), before.Spec.Tolerations...), flavorToleration)
		if diff := cmp.Diff(want, ungated.Spec.Tolerations); diff != "" {
			t.Errorf("tolerations after the manager's ungate patch (-want +got):\n%s", diff)
		}
		if gates.HasGate(ungated, v1alpha1.SchedulingGate) || ungated.Spec.NodeName != "" {
			t.Errorf("after the ungate patch: gates %v, nodeName %q; want ungated and unbound", gateNames(ungated), ungated.Spec.NodeName)
		}
		other := corev1.Toleration{Key: "example.com/other", Operator: corev1.TolerationOpExists}
		err = tolerate(ctx, tenant, ungated, other, false)
		if want := []string{placementGuardName, "adds example.com/other. "}; !apierrors.IsForbidden(err) || !containsAll(err.Error(), want...) {
			t.Errorf("patch = %v, want 403 containing %q", err, want)
		}
	})

	t.Run("a pod bound to a node may add tolerations", func(t *testing.T) {
		bound := admit(t, create(t, "placement-bound", nil), false)
		testbed.Poll(t, waitTimeout, "kube-scheduler to bind the admitted pod", func(ctx context.Context) (bool, error) {
			got, err := e.client.CoreV1().Pods(e.gated).Get(ctx, bound.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			bound = got
			return got.Spec.NodeName != "", nil
		})
		if err := tolerate(ctx, tenant, bound, spot, false); err != nil {
			t.Fatalf("the tenant adding a toleration to a bound pod: %v", err)
		}
		want := append(append([]corev1.Toleration(nil), bound.Spec.Tolerations...), spot)
		if diff := cmp.Diff(want, tolerations(t, bound)); diff != "" {
			t.Errorf("tolerations (-want +got):\n%s", diff)
		}
	})

	t.Run("the manager's identity may add a toleration to an admitted pod", func(t *testing.T) {
		if err := tolerate(ctx, manager, admitted, spot, false); err != nil {
			t.Fatalf("the manager adding a toleration: %v", err)
		}
	})

	t.Run("a pod in a namespace that is not opted in may add tolerations", func(t *testing.T) {
		pod := podtest.New("placement-elsewhere").Obj()
		pod.Spec.NodeSelector = flavorLabels
		created, err := e.client.CoreV1().Pods(e.plain).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating pod: %v", err)
		}
		if err := tolerate(ctx, e.client, created, spot, false); err != nil {
			t.Errorf("adding a toleration in %s: %v", e.plain, err)
		}
	})
}
