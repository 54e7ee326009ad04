//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// testGuard: a user with RBAC to patch pods still cannot remove quotagate's gate; the
// gate guard (a ValidatingAdmissionPolicy) answers 403 with a message saying who may.
func testGuard(t *testing.T, e env, _ *podWatcher) {
	ctx := t.Context()
	fatalIf(t, e.c.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: teamNS, Name: "pod-editor"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "patch", "update"}}},
	}), "creating Role")
	fatalIf(t, e.c.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: teamNS, Name: "dev-edits-pods"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-editor"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: teamNS, Name: "dev"}},
	}), "creating RoleBinding")
	devCfg, err := e.cluster.ServiceAccountConfig(ctx, teamNS, "dev", 0)
	fatalIf(t, err, "getting dev's credentials")
	dev, err := kubernetes.NewForConfig(devCfg)
	fatalIf(t, err, "building dev's client")

	pod := listPods(t, e, teamNS)[0]
	removeGate := []byte(`[{"op":"test","path":"/spec/schedulingGates/0/name","value":"` + v1alpha1.SchedulingGate + `"},{"op":"remove","path":"/spec/schedulingGates/0"}]`)
	// The Role takes a moment to reach the authorizer's cache: poll until the answer is
	// the guard's, not RBAC's.
	var last error
	waitFor(t, "the gate guard to deny dev", 30*time.Second, func() (bool, string) {
		_, last = dev.CoreV1().Pods(teamNS).Patch(ctx, pod.Name, types.JSONPatchType, removeGate, metav1.PatchOptions{})
		return last != nil && strings.Contains(last.Error(), "ValidatingAdmissionPolicy"), fmt.Sprint(last)
	})
	if !apierrors.IsForbidden(last) {
		t.Errorf("removing the gate as dev: got %v, want 403 Forbidden", last)
	}
	for _, want := range []string{"may only be removed by", e.inst.ManagerUsername(), "system:serviceaccount:" + teamNS + ":dev"} {
		if !strings.Contains(last.Error(), want) {
			t.Errorf("denial message %q does not contain %q", last.Error(), want)
		}
	}
	// Other updates of the same pod go through: the guard only blocks removing the gate.
	if _, err := dev.CoreV1().Pods(teamNS).Patch(ctx, pod.Name, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"reviewed":"true"}}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("labelling a gated pod as dev: %v", err)
	}
	got, err := e.cs.CoreV1().Pods(teamNS).Get(ctx, pod.Name, metav1.GetOptions{})
	fatalIf(t, err, "reading pod")
	if !hasGate(got) {
		t.Errorf("pod %s lost its gate", pod.Name)
	}
}
