package charts_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/test/localcluster"
)

// budgetClient is a client for Budgets acting as cfg's identity.
func budgetClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// impersonating returns a client that acts as user, through the cluster admin.
func impersonating(t *testing.T, cluster *localcluster.Cluster, user string) client.Client {
	t.Helper()
	return budgetClient(t, impersonated(cluster, user))
}

func impersonated(cluster *localcluster.Cluster, user string) *rest.Config {
	cfg := cluster.Config()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return cfg
}

// getStatus reads a Budget's status subresource (GET .../budgets/<name>/status) as cfg's
// identity.
func getStatus(ctx context.Context, cfg *rest.Config, namespace, name string) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = dyn.Resource(v1alpha1.GroupVersion.WithResource("budgets")).Namespace(namespace).Get(ctx, name, metav1.GetOptions{}, "status")
	return err
}

// The chart's Budget roles on a real kube-apiserver, with the aggregation done by the real
// kube-controller-manager: users holding the built-in view, edit or admin role on a
// namespace (through a RoleBinding) read its Budgets and their status and nothing else;
// none of them can raise a Budget's hard limits or write its status; budget-admin can.
func TestBudgetRolesOnRealAPIServer(t *testing.T) {
	ctx := t.Context()
	cluster := localcluster.StartForTest(t, localcluster.Options{Nodes: 1})
	cs := kubernetes.NewForConfigOrDie(cluster.Config())
	admin := budgetClient(t, cluster.Config())

	m := mustInstall(t, defaultRelease, defaultNamespace, nil)
	for _, o := range m.all("CustomResourceDefinition") {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatalf("creating CRD %s: %v", o.GetName(), err)
		}
	}
	for _, o := range m.all("ClusterRole") {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatalf("creating ClusterRole %s: %v", o.GetName(), err)
		}
	}

	hard := func(cpu string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse(cpu)}
	}
	for _, ns := range []string{"team-a", "team-b"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The CRD is served a moment after it is created.
	var createErr error
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		createErr = nil
		for _, ns := range []string{"team-a", "team-b"} {
			b := &v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ns}, Spec: v1alpha1.BudgetSpec{Hard: hard("4")}}
			if err := admin.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
				createErr = err
			}
		}
		return createErr == nil, nil
	}); err != nil {
		t.Fatalf("creating the Budgets: %v", createErr)
	}

	bind := func(user, role string) {
		t.Helper()
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		}
		if _, err := cs.RbacV1().RoleBindings("team-a").Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bindCluster := func(user, role string) {
		t.Helper()
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bind("viewer", "view")
	bind("editor", "edit")
	bind("ns-admin", "admin")
	bindCluster("platform", "quotagate-budget-admin")
	bindCluster("auditor", "quotagate-clusterbudget-viewer")
	bindCluster("flavor-reader", "quotagate-flavor-viewer")

	tenants := []string{"viewer", "editor", "ns-admin"}
	// kube-controller-manager folds the budget-viewer rules into view, edit and admin
	// shortly after the ClusterRole is created.
	for _, user := range tenants {
		c := impersonating(t, cluster, user)
		var lastErr error
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			lastErr = c.List(ctx, &v1alpha1.BudgetList{}, client.InNamespace("team-a"))
			return lastErr == nil, nil
		}); err != nil {
			t.Fatalf("%s never could list team-a's Budgets (the aggregation into the built-in role): %v", user, lastErr)
		}
	}

	key := client.ObjectKey{Namespace: "team-a", Name: "team-a"}
	for _, user := range tenants {
		t.Run(user, func(t *testing.T) {
			c := impersonating(t, cluster, user)
			var b v1alpha1.Budget
			if err := c.Get(ctx, key, &b); err != nil {
				t.Fatalf("get team-a/team-a: %v", err)
			}
			var list v1alpha1.BudgetList
			if err := c.List(ctx, &list, client.InNamespace("team-a")); err != nil || len(list.Items) != 1 {
				t.Errorf("list in team-a: %d items, %v; want the one Budget", len(list.Items), err)
			}
			if err := getStatus(ctx, impersonated(cluster, user), "team-a", "team-a"); err != nil {
				t.Errorf("get team-a/team-a/status: %v", err)
			}
			wantForbidden(t, "list Budgets in team-b", c.List(ctx, &v1alpha1.BudgetList{}, client.InNamespace("team-b")))
			wantForbidden(t, "list ClusterBudgets", c.List(ctx, &v1alpha1.ClusterBudgetList{}))
			wantForbidden(t, "list Flavors", c.List(ctx, &v1alpha1.FlavorList{}))

			raised := b.DeepCopy()
			raised.Spec.Hard = hard("400")
			wantForbidden(t, "update spec.hard", c.Update(ctx, raised))
			patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"hard":{"requests.cpu":"400"}}}`))
			wantForbidden(t, "patch spec.hard", c.Patch(ctx, b.DeepCopy(), patch))
			status := b.DeepCopy()
			status.Status.Hard = hard("400")
			wantForbidden(t, "update status", c.Status().Update(ctx, status))
			wantForbidden(t, "patch status", c.Status().Patch(ctx, b.DeepCopy(), client.RawPatch("application/merge-patch+json", []byte(`{"status":{"hard":{"requests.cpu":"400"}}}`))))
			wantForbidden(t, "delete", c.Delete(ctx, b.DeepCopy()))
			wantForbidden(t, "create", c.Create(ctx, &v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "more"}, Spec: v1alpha1.BudgetSpec{Hard: hard("400")}}))
		})
	}
	var after v1alpha1.Budget
	if err := admin.Get(ctx, key, &after); err != nil {
		t.Fatal(err)
	}
	if got := after.Spec.Hard[corev1.ResourceRequestsCPU]; got.Cmp(resource.MustParse("4")) != 0 {
		t.Errorf("team-a's hard requests.cpu is %s after the tenants tried, want 4", got.String())
	}

	t.Run("budget-admin", func(t *testing.T) {
		c := impersonating(t, cluster, "platform")
		var b v1alpha1.Budget
		if err := c.Get(ctx, client.ObjectKey{Namespace: "team-b", Name: "team-b"}, &b); err != nil {
			t.Fatalf("get team-b/team-b: %v", err)
		}
		b.Spec.Hard = hard("8")
		if err := c.Update(ctx, &b); err != nil {
			t.Errorf("update spec.hard: %v", err)
		}
		b.Status.Hard = hard("8")
		if err := c.Status().Update(ctx, &b); err != nil {
			t.Errorf("update status: %v", err)
		}
		cb := &v1alpha1.ClusterBudget{ObjectMeta: metav1.ObjectMeta{Name: "all"}, Spec: v1alpha1.ClusterBudgetSpec{BudgetSpec: v1alpha1.BudgetSpec{Hard: hard("64")}}}
		if err := c.Create(ctx, cb); err != nil {
			t.Errorf("create ClusterBudget: %v", err)
		}
		cb.Status.Hard = hard("64")
		if err := c.Status().Update(ctx, cb); err != nil {
			t.Errorf("update ClusterBudget status: %v", err)
		}
		if err := c.Create(ctx, &v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "batch"}, Spec: v1alpha1.BudgetSpec{Hard: hard("1")}}); err != nil {
			t.Errorf("create Budget: %v", err)
		}
		if err := c.Delete(ctx, &v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "batch"}}); err != nil {
			t.Errorf("delete Budget: %v", err)
		}
		if err := c.Create(ctx, spotFlavor()); err != nil {
			t.Errorf("create Flavor: %v", err)
		}
	})

	t.Run("flavor-viewer", func(t *testing.T) {
		c := impersonating(t, cluster, "flavor-reader")
		var list v1alpha1.FlavorList
		if err := c.List(ctx, &list); err != nil || len(list.Items) != 1 {
			t.Errorf("list Flavors: %d items, %v; want the one", len(list.Items), err)
		}
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"tolerations":[]}}`))
		wantForbidden(t, "patch a Flavor", c.Patch(ctx, spotFlavor(), patch))
		wantForbidden(t, "create a Flavor", c.Create(ctx, &v1alpha1.Flavor{ObjectMeta: metav1.ObjectMeta{Name: "mine"}, Spec: v1alpha1.FlavorSpec{NodeLabels: map[string]string{"pool": "mine"}}}))
		wantForbidden(t, "list ClusterBudgets", c.List(ctx, &v1alpha1.ClusterBudgetList{}))
	})

	t.Run("clusterbudget-viewer", func(t *testing.T) {
		c := impersonating(t, cluster, "auditor")
		var list v1alpha1.ClusterBudgetList
		if err := c.List(ctx, &list); err != nil || len(list.Items) != 1 {
			t.Errorf("list ClusterBudgets: %d items, %v; want the one", len(list.Items), err)
		}
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"hard":{"requests.cpu":"1000"}}}`))
		wantForbidden(t, "patch a ClusterBudget", c.Patch(ctx, &v1alpha1.ClusterBudget{ObjectMeta: metav1.ObjectMeta{Name: "all"}}, patch))
		wantForbidden(t, "list Budgets in team-a", c.List(ctx, &v1alpha1.BudgetList{}, client.InNamespace("team-a")))
	})
}

// spotFlavor is the Flavor budget-admin creates and flavor-viewer reads.
func spotFlavor() *v1alpha1.Flavor {
	return &v1alpha1.Flavor{ObjectMeta: metav1.ObjectMeta{Name: "spot"}, Spec: v1alpha1.FlavorSpec{NodeLabels: map[string]string{"pool": "spot"}}}
}

// wantForbidden fails unless err is the API server's 403 for an RBAC denial.
func wantForbidden(t *testing.T, what string, err error) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Errorf("%s: %v, want forbidden", what, err)
		return
	}
	if !strings.Contains(err.Error(), "cannot") {
		t.Errorf("%s: %v, want RBAC's \"cannot ...\" denial", what, fmt.Sprint(err))
	}
}
