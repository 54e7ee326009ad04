package app

import (
	"context"
	"encoding/base64"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/pkg/visibility"
	"github.com/quotagate/quotagate/test/localcluster"
	"github.com/quotagate/quotagate/test/pki"
)

// visibilityService is the Service the test's APIService names.
const visibilityService = "quotagate-visibility"

// TestQueueOnRealAPIServer serves the teams world's queues with the manager's
// visibility server behind a real kube-apiserver's aggregation layer, and runs
// kubectl quotagate queue as three users: a tenant of team-a, a user who may list
// every Budget but read only team-a's queue, and the cluster admin.
func TestQueueOnRealAPIServer(t *testing.T) {
	dir := t.TempDir()
	flags, caPEM := aggregationCerts(t, dir)
	cluster := localcluster.StartForTest(t, localcluster.Options{Nodes: 1, ExtraArgs: map[string][]string{localcluster.KubeAPIServer: flags}})
	cfg := cluster.Config()
	root, err := localcluster.RepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	if err := testbed.InstallCRDs(cfg, root); err != nil {
		t.Fatal(err)
	}
	admin, err := client.New(cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}

	w := teamsWorld(t)
	port := testbed.FreePort(t)
	srv, err := visibility.New(visibility.Options{BindAddress: net.IPv4(127, 0, 0, 1), Port: port, CertDir: filepath.Join(dir, "certs"), Kubeconfig: cluster.KubeconfigPath()},
		w.core.Reader(), alwaysLeading{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srvCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(srvCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("visibility server: %v", err)
		}
	})

	create(t, admin,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: systemNamespace}},
		namespace("team-a", true), namespace("team-b", true),
		budget("team-a", "team-a", "requests.cpu=4,pods=10", "org"),
		budget("team-b", "team-b", "requests.cpu=4", "org"),
		clusterBudget("org", "requests.cpu=8", nil),
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, Name: visibilityService},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost",
				Ports: []corev1.ServicePort{{Name: "visibility", Port: int32(port)}}},
		},
		// A tenant of team-a: its budgets and their queues.
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "budget-queues"},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"budgets"}, Verbs: []string{"get", "list"}},
				{APIGroups: []string{visv1.GroupName}, Resources: []string{"budgets/pendingpods"}, Verbs: []string{"get"}},
			},
		},
		roleBinding("team-a", "budget-queues", "tenant"),
		roleBinding("team-a", "budget-queues", "lister"),
		// The lister may also list every Budget and ClusterBudget.
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "budget-lister"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"budgets", "clusterbudgets"}, Verbs: []string{"list"}}},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "budget-lister"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "budget-lister"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "lister"}},
		},
	)
	registerAPIService(t, cfg, port, caPEM)

	as := func(user string, args ...string) []string {
		base := []string{"--kubeconfig", cluster.KubeconfigPath()}
		if user != "" {
			base = append(base, "--as", user)
		}
		return append(base, args...)
	}

	t.Run("a tenant reads its namespace's queues", func(t *testing.T) {
		var out, errOut string
		testbed.Poll(t, pollTimeout, "the tenant to read team-a's queues", func(context.Context) (bool, error) {
			var err error
			out, errOut, err = runReal(t, as("tenant", "queue", "-n", "team-a", "-o", "name")...)
			return err == nil, testbed.NotYet(err)
		})
		if diff := cmp.Diff("pod/huge\npod/train-1\npod/train-3\n", out); diff != "" || errOut != "" {
			t.Errorf("queue -n team-a -o name (-want +got):\n%s\nstderr: %s", diff, errOut)
		}
		out, _, err := runReal(t, as("tenant", "queue", "team-a", "-n", "team-a", "-o", "wide")...)
		if err != nil || !strings.HasPrefix(out, "Budget team-a/team-a: Open, BestEffortFIFO, 3 gated\nPOSITION   POD              PRIORITY   REQUESTS   WAITING") ||
			!strings.Contains(out, "team-a-train-1   InsufficientQuota    -     requests.cpu: 2 requested, 0 free in Budget team-a/team-a; position 2 of 3\n") {
			t.Errorf("queue team-a -o wide: %v\n%s", err, out)
		}
		t.Logf("kubectl quotagate queue team-a -n team-a -o wide (as tenant):\n%s", out)
	})

	t.Run("a tenant may not use -A nor read another namespace's queue", func(t *testing.T) {
		_, _, err := runReal(t, as("tenant", "queue", "-A")...)
		if err == nil || !strings.Contains(err.Error(), `listing budgets in every namespace (-A needs list on budgets.quotagate.io cluster-wide`) ||
			!strings.Contains(err.Error(), `User "tenant" cannot list resource "budgets" in API group "quotagate.io" at the cluster scope`) {
			t.Errorf("queue -A as the tenant: %v", err)
		}
		_, _, err = runReal(t, as("tenant", "queue", "team-b/team-b")...)
		if err == nil || !strings.Contains(err.Error(), "you may not see Budget team-b/team-b's queue") ||
			!strings.Contains(err.Error(), `User "tenant" cannot get resource "budgets/pendingpods" in API group "visibility.quotagate.io"`) {
			t.Errorf("queue team-b/team-b as the tenant: %v", err)
		}
	})

	t.Run("-A skips the queues a user may not read", func(t *testing.T) {
		out, errOut, err := runReal(t, as("lister", "queue", "-A", "-o", "name")...)
		if err != nil {
			t.Fatalf("queue -A as the lister: %v\n%s", err, errOut)
		}
		if diff := cmp.Diff("team-a/pod/huge\nteam-a/pod/train-1\nteam-a/pod/train-3\n", out); diff != "" {
			t.Errorf("queue -A -o name as the lister (-want +got):\n%s", diff)
		}
		for _, want := range []string{"Note: skipped Budget team-b/team-b: you may not see", "Note: skipped ClusterBudget org: you may not see"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("queue -A as the lister: stderr lacks %q:\n%s", want, errOut)
			}
		}
	})

	t.Run("the admin reads every queue as a List", func(t *testing.T) {
		out, errOut, err := runReal(t, as("", "queue", "-A", "-o", "json")...)
		if err != nil {
			t.Fatalf("queue -A -o json: %v\n%s", err, errOut)
		}
		var list unstructured.UnstructuredList
		if err := list.UnmarshalJSON([]byte(out)); err != nil {
			t.Fatalf("decoding: %v\n%s", err, out)
		}
		var got []string
		for _, it := range list.Items {
			items, _, _ := unstructured.NestedSlice(it.Object, "items")
			got = append(got, it.GetKind()+" "+it.GetNamespace()+"/"+it.GetName()+" "+strings.Repeat("*", len(items)))
		}
		want := []string{"PendingPodList team-a/team-a ***", "PendingPodList team-b/team-b *", "PendingPodList /org ****"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("queue -A -o json as admin (-want +got):\n%s", diff)
		}
	})
}

type alwaysLeading struct{}

func (alwaysLeading) Leading() bool { return true }

func roleBinding(ns, clusterRole, user string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: clusterRole + "-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
}

// aggregationCerts writes the aggregation layer's front-proxy CA and client
// certificate, and the visibility server's serving certificate (in dir/certs), and
// returns kube-apiserver's flags and the serving CA.
func aggregationCerts(t *testing.T, dir string) ([]string, []byte) {
	t.Helper()
	now := time.Now()
	nb, na := now.Add(-time.Hour), now.Add(24*time.Hour)
	front, err := pki.NewCA("front-proxy-ca", nb, na)
	if err != nil {
		t.Fatal(err)
	}
	proxyClient, err := front.Issue(pki.Spec{CommonName: "front-proxy-client", NotBefore: nb, NotAfter: na})
	if err != nil {
		t.Fatal(err)
	}
	servingCA, err := pki.NewCA("visibility-ca", nb, na)
	if err != nil {
		t.Fatal(err)
	}
	serving, err := servingCA.Issue(pki.Spec{CommonName: visibilityService, DNSNames: []string{visibilityService + "." + systemNamespace + ".svc"}, Server: true, NotBefore: nb, NotAfter: na})
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"front-proxy-ca.crt": front.CertPEM, "front-proxy-client.crt": proxyClient.CertPEM, "front-proxy-client.key": proxyClient.KeyPEM,
		"certs/tls.crt": serving.CertPEM, "certs/tls.key": serving.KeyPEM, "certs/ca.crt": servingCA.CertPEM,
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return []string{
		"--requestheader-client-ca-file=" + filepath.Join(dir, "front-proxy-ca.crt"),
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + filepath.Join(dir, "front-proxy-client.crt"),
		"--proxy-client-key-file=" + filepath.Join(dir, "front-proxy-client.key"),
	}, servingCA.CertPEM
}

// registerAPIService creates the APIService of visibility.quotagate.io for the
// visibility Service and waits until the aggregator finds it available.
func registerAPIService(t *testing.T, cfg *rest.Config, port int, caPEM []byte) {
	t.Helper()
	apiservices := dynamic.NewForConfigOrDie(cfg).Resource(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"})
	name := "v1alpha1." + visv1.GroupName
	apisvc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"group": visv1.GroupName, "version": "v1alpha1", "groupPriorityMinimum": int64(100), "versionPriority": int64(100),
			"caBundle": base64.StdEncoding.EncodeToString(caPEM),
			"service":  map[string]any{"namespace": systemNamespace, "name": visibilityService, "port": int64(port)},
		},
	}}
	if _, err := apiservices.Create(t.Context(), apisvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testbed.Poll(t, pollTimeout, "the APIService to become available", func(context.Context) (bool, error) {
		got, err := apiservices.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, testbed.NotYet(err)
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] == "Available" {
				return m["status"] == "True", nil
			}
		}
		return false, nil
	})
}
