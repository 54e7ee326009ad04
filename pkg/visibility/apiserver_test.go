package visibility

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/quotagate/quotagate/internal/testbed"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/test/localcluster"
	"github.com/quotagate/quotagate/test/pki"
)

const serviceName, serviceNamespace = "quotagate-visibility", "quotagate-system"

// servingCert writes the visibility server's serving certificate into dir/certs and
// returns the CA that signed it. (The local control plane sets up the aggregation layer's
// front proxy itself, as kubeadm does.)
func servingCert(t *testing.T, dir string) []byte {
	t.Helper()
	now := time.Now()
	nb, na := now.Add(-time.Hour), now.Add(24*time.Hour)
	servingCA, err := pki.NewCA("visibility-ca", nb, na)
	if err != nil {
		t.Fatal(err)
	}
	serving, err := servingCA.Issue(pki.Spec{CommonName: serviceName, DNSNames: []string{serviceName + "." + serviceNamespace + ".svc"}, Server: true, NotBefore: nb, NotAfter: na})
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"tls.crt": serving.CertPEM, "tls.key": serving.KeyPEM, "ca.crt": servingCA.CertPEM} {
		if err := os.MkdirAll(filepath.Join(dir, "certs"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "certs", name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return servingCA.CertPEM
}

// register creates the Service (ExternalName localhost: the aggregator dials it, as a
// cluster without kube-proxy has no ClusterIP to reach) and the APIService, and waits
// until the aggregator finds the API available.
func register(ctx context.Context, t *testing.T, cfg *rest.Config, port int, caPEM []byte) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(cfg)
	for _, ns := range []string{serviceNamespace, "team-a", "team-b"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: serviceNamespace, Name: serviceName},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost",
			Ports: []corev1.ServicePort{{Name: "visibility", Port: int32(port)}}},
	}
	if _, err := cs.CoreV1().Services(serviceNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	apiservices := dynamic.NewForConfigOrDie(cfg).Resource(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"})
	name := "v1alpha1." + visv1.GroupName
	apisvc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"group": visv1.GroupName, "version": "v1alpha1", "groupPriorityMinimum": int64(100), "versionPriority": int64(100),
			"caBundle": base64.StdEncoding.EncodeToString(caPEM),
			"service":  map[string]any{"namespace": serviceNamespace, "name": serviceName, "port": int64(port)},
		},
	}}
	if _, err := apiservices.Create(ctx, apisvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := apiservices.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Available" {
				last = fmt.Sprint(m["reason"], ": ", m["message"])
				return m["status"] == "True", nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the APIService never became available (%s): %v", last, err)
	}
}

// roles are the chart's visibility roles (charts/quotagate/templates/budget-rbac.yaml).
func roles(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	for _, r := range []*rbacv1.ClusterRole{
		{
			ObjectMeta: metav1.ObjectMeta{Name: "quotagate-queue-viewer", Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{visv1.GroupName}, Resources: []string{"budgets/pendingpods", "pendingpods"}, Verbs: []string{"get"}}},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "quotagate-pod-simulator", Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-edit": "true", "rbac.authorization.k8s.io/aggregate-to-admin": "true"}},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{visv1.GroupName}, Resources: []string{visv1.ResourcePodSimulations}, Verbs: []string{"create"}}},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "quotagate-clusterqueue-viewer"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{visv1.GroupName}, Resources: []string{"budgets/pendingpods", "clusterbudgets/pendingpods", "pendingpods"}, Verbs: []string{"get"}}},
		},
	} {
		if _, err := cs.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bind := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "tenant-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "team-a", Name: "tenant"}},
	}
	if _, err := cs.RbacV1().RoleBindings("team-a").Create(ctx, bind, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func as(cfg *rest.Config, user string, groups ...string) kubernetes.Interface {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
	return kubernetes.NewForConfigOrDie(c)
}

func get(ctx context.Context, cs kubernetes.Interface, path string, params map[string]string) (*visv1.PendingPodList, error) {
	req := cs.CoreV1().RESTClient().Get().AbsPath(path)
	for k, v := range params {
		req = req.Param(k, v)
	}
	body, err := req.DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	var list visv1.PendingPodList
	return &list, json.Unmarshal(body, &list)
}

func getPodStatus(ctx context.Context, cs kubernetes.Interface, namespace, name string) (*visv1.PendingPodStatus, error) {
	body, err := cs.CoreV1().RESTClient().Get().AbsPath(GroupVersionPath, "namespaces", namespace, "pendingpods", name).DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	var st visv1.PendingPodStatus
	return &st, json.Unmarshal(body, &st)
}

// podStatusOnRealAPIServer: discovery lists pendingpods (get only), and a tenant with
// view in team-a reads a team-a pod's place in its Budget and in a ClusterBudget, and
// gets 404 for a pod the manager does not hold.
func podStatusOnRealAPIServer(ctx context.Context, t *testing.T, tenant kubernetes.Interface) {
	t.Helper()
	list, err := tenant.Discovery().ServerResourcesForGroupVersion(visv1.GroupVersion.String())
	if err != nil {
		t.Fatalf("discovery of %s: %v", visv1.GroupVersion, err)
	}
	var verbs []string
	for _, r := range list.APIResources {
		if r.Name == visv1.ResourcePendingPods {
			verbs = r.Verbs
			if !r.Namespaced || r.Kind != visv1.KindPendingPodStatus {
				t.Errorf("discovery lists pendingpods as namespaced %v, kind %q", r.Namespaced, r.Kind)
			}
		}
	}
	if diff := cmp.Diff([]string{"get"}, verbs); diff != "" {
		t.Errorf("discovery's verbs of pendingpods (-want +got):\n%s", diff)
	}
	st, err := getPodStatus(ctx, tenant, "team-a", "train-0")
	if err != nil {
		t.Fatalf("a tenant with view in team-a reads train-0's status: %v", err)
	}
	want := []visv1.BudgetPlace{
		{BudgetKind: "Budget", Namespace: "team-a", Name: "gpu", Position: 2, Total: 5, Queue: "backoff"},
		{BudgetKind: "ClusterBudget", Name: "org", Position: 7, Total: 40, Queue: "backoff"},
	}
	if diff := cmp.Diff(want, st.Budgets); diff != "" || st.Kind != visv1.KindPendingPodStatus || st.Reason == "" {
		t.Errorf("train-0's status: kind %q, reason %q, places (-want +got):\n%s", st.Kind, st.Reason, diff)
	}
	if _, err := getPodStatus(ctx, tenant, "team-a", "web"); !apierrors.IsNotFound(err) {
		t.Errorf("a pod the manager does not hold: got %v, want 404 NotFound", err)
	}
}

// TestVisibilityOnRealAPIServer serves the API through a real kube-apiserver's
// aggregation layer and checks that ordinary RBAC decides who sees which queue. The
// server starts before its certificate exists, as a manager does whose own rotator
// writes it (certManager.enabled=false), and serves once the files appear.
func TestVisibilityOnRealAPIServer(t *testing.T) {
	dir := t.TempDir()
	cluster := localcluster.StartForTest(t, localcluster.Options{Nodes: 1})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	port := testbed.FreePort(t)
	waits := podWaits(time.Now())
	waits["team-b/batch-0"] = quota.PodWait{Pod: quota.PodRef{Namespace: "team-b", Name: "batch-0"}, Created: time.Now()}
	queues := fakeQueues{created: time.Now(), waits: waits, n: map[quota.BudgetKey]int{
		{Namespace: "team-a", Name: "gpu"}: 5, {Namespace: "team-b", Name: "gpu"}: 2, {Name: "org"}: 3,
	}}
	srv, err := New(Options{BindAddress: net.IPv4(127, 0, 0, 1), Port: port, CertDir: filepath.Join(dir, "certs"), Kubeconfig: cluster.KubeconfigPath()}, queues, leading(true), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.certPoll = 50 * time.Millisecond
	served := make(chan error, 1)
	go func() { served <- srv.Start(ctx) }()
	select {
	case err := <-served:
		t.Fatalf("the server stopped while waiting for its certificate: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	caPEM := servingCert(t, dir)
	cfg := cluster.Config()
	register(ctx, t, cfg, port, caPEM)
	roles(ctx, t, kubernetes.NewForConfigOrDie(cfg))

	tenant := as(cfg, "system:serviceaccount:team-a:tenant", "system:serviceaccounts", "system:serviceaccounts:team-a")
	nobody := as(cfg, "nobody")
	admin := as(cfg, "platform-admin")
	teamA := GroupVersionPath + "/namespaces/team-a/budgets/gpu/pendingpods"
	teamB := GroupVersionPath + "/namespaces/team-b/budgets/gpu/pendingpods"
	org := GroupVersionPath + "/clusterbudgets/org/pendingpods"

	// kube-controller-manager aggregates the chart's queue-viewer role into view shortly
	// after it is created; until then the tenant is refused, as a user would be.
	var list *visv1.PendingPodList
	var getErr error
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, getErr = get(ctx, tenant, teamA, nil)
		return getErr == nil, nil
	})
	if err != nil {
		t.Fatalf("a tenant with view in team-a reads team-a's queue: %v", getErr)
	}
	if list.Total != 5 || len(list.Items) != 5 || list.Items[0].Reason == "" {
		t.Errorf("team-a's queue: total %d, %d items", list.Total, len(list.Items))
	}
	page, err := get(ctx, tenant, teamA, map[string]string{"limit": "2", "offset": "1"})
	if err != nil {
		t.Fatal(err)
	}
	var positions []int64
	for _, p := range page.Items {
		positions = append(positions, p.Position)
	}
	if diff := cmp.Diff([]int64{2, 3}, positions); diff != "" {
		t.Errorf("page limit=2 offset=1 (-want +got):\n%s", diff)
	}
	podStatusOnRealAPIServer(ctx, t, tenant)
	for what, call := range map[string]func() error{
		"the tenant reads a pod's status in team-b": func() error {
			_, err := getPodStatus(ctx, tenant, "team-b", "batch-0")
			return err
		},
		"a user with no rights reads a pod's status in team-a": func() error {
			_, err := getPodStatus(ctx, nobody, "team-a", "train-0")
			return err
		},
		"the tenant reads team-b's queue":                                 func() error { _, err := get(ctx, tenant, teamB, nil); return err },
		"the tenant reads a ClusterBudget's queue":                        func() error { _, err := get(ctx, tenant, org, nil); return err },
		"a user with no rights reads team-a's queue":                      func() error { _, err := get(ctx, nobody, teamA, nil); return err },
		"an admin without the cluster role reads a ClusterBudget's queue": func() error { _, err := get(ctx, admin, org, nil); return err },
	} {
		if err := call(); !apierrors.IsForbidden(err) {
			t.Errorf("%s: got %v, want 403 Forbidden", what, err)
		}
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "platform-admin-queues"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "quotagate-clusterqueue-viewer"},
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "platform-admin"}},
	}
	if _, err := kubernetes.NewForConfigOrDie(cfg).RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The server caches a denial for ten seconds (DelegatingAuthorizationOptions).
	err = wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := get(ctx, admin, org, nil)
		return err == nil && list.Total == 3 && list.BudgetKind == "ClusterBudget", nil
	})
	if err != nil {
		t.Errorf("the cluster role does not let an admin read a ClusterBudget's queue: %v", err)
	}
}
