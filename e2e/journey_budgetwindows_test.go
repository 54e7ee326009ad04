//go:build e2e

package e2e

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// testTenantCannotOpenWindows: a tenant holding the built-in edit role in its namespace
// reads its Budgets and their BudgetWindows (the chart aggregates read into edit), and
// cannot create a window that raises its own Budget, nor a ClusterBudgetWindow, nor
// change the Budget: a window is an administrator's object, as a Budget is.
func testTenantCannotOpenWindows(t *testing.T, e env, _ *podWatcher) {
	ctx := t.Context()
	const name = "windows-tenant"
	_, err := e.cs.RbacV1().RoleBindings(teamNS).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: teamNS, Name: name + "-edit"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: teamNS, Name: name}},
	}, metav1.CreateOptions{})
	fatalIf(t, err, "binding the tenant to edit")
	cfg, err := e.cluster.ServiceAccountConfig(ctx, teamNS, name, 0)
	fatalIf(t, err, "a token for the tenant")
	tenant, err := client.New(cfg, client.Options{Scheme: e.c.Scheme()})
	fatalIf(t, err, "building the tenant's client")

	// The binding, and the aggregation into edit, take a moment to reach the authorizer.
	waitFor(t, "the tenant to read its namespace's BudgetWindows", 30*time.Second, func() (bool, string) {
		var list v1alpha1.BudgetWindowList
		err := tenant.List(ctx, &list, client.InNamespace(teamNS))
		return err == nil, fmt.Sprint(err)
	})

	raise := &v1alpha1.BudgetWindow{
		ObjectMeta: metav1.ObjectMeta{Namespace: teamNS, Name: "mine"},
		Spec: v1alpha1.BudgetWindowSpec{
			BudgetName: "team-a",
			Start:      &metav1.Time{Time: time.Now().Add(-time.Minute)},
			End:        &metav1.Time{Time: time.Now().Add(time.Hour)},
			Hard:       corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("1000")},
		},
	}
	if err := tenant.Create(ctx, raise); !apierrors.IsForbidden(err) {
		t.Errorf("the tenant creating a BudgetWindow that raises its Budget: %v, want 403 Forbidden", err)
	}
	cluster := &v1alpha1.ClusterBudgetWindow{
		ObjectMeta: metav1.ObjectMeta{Name: "mine"},
		Spec:       raise.Spec,
	}
	if err := tenant.Create(ctx, cluster); !apierrors.IsForbidden(err) {
		t.Errorf("the tenant creating a ClusterBudgetWindow: %v, want 403 Forbidden", err)
	}
	var b v1alpha1.Budget
	fatalIf(t, tenant.Get(ctx, client.ObjectKey{Namespace: teamNS, Name: "team-a"}, &b), "the tenant reading its Budget")
	b.Spec.State = v1alpha1.StateOpen
	if err := tenant.Update(ctx, &b); !apierrors.IsForbidden(err) {
		t.Errorf("the tenant updating its Budget: %v, want 403 Forbidden", err)
	}
	// Nothing the tenant tried exists.
	var windows v1alpha1.BudgetWindowList
	fatalIf(t, e.c.List(ctx, &windows, client.InNamespace(teamNS)), "listing BudgetWindows")
	if len(windows.Items) != 0 {
		t.Errorf("team-a has %d BudgetWindows after the tenant's attempts, want none", len(windows.Items))
	}
}
