package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"

	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/gates"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/test/localcluster"
)

const (
	systemNamespace = "quotagate-system"
	pollTimeout     = 2 * time.Minute
)

// TestSnapshotOnAPIServer runs a manager in-process against a real kube-apiserver, with
// the metrics endpoint secured as the chart runs it (HTTPS, TokenReview and
// SubjectAccessReview), and checks who may read /debug/queues, then runs the plugin
// against it, directly and through the API server's service proxy.
func TestSnapshotOnAPIServer(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	cluster := localcluster.StartForTest(t, localcluster.Options{Nodes: 1})
	ctx := t.Context()
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

	// The manager's ClusterRole from its RBAC markers, and the chart's /debug/queues reader
	// role, as shipped in config/rbac.
	managerRole := readClusterRole(t, filepath.Join(root, "config", "rbac", "role.yaml"))
	readerRole := readClusterRole(t, filepath.Join(root, "config", "rbac", "debug_queues_role.yaml"))
	metricsOnly := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-only"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}
	create(t, admin,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: systemNamespace}},
		managerRole, readerRole, metricsOnly,
		clusterRoleBinding("quotagate-manager", managerRole.Name, "quotagate-manager"),
		clusterRoleBinding("snapshot-reader", readerRole.Name, "reader"),
		clusterRoleBinding("metrics-only", metricsOnly.Name, "metrics-only"),
	)
	token := func(sa string) string {
		c, err := cluster.ServiceAccountConfig(ctx, systemNamespace, sa, time.Hour)
		if err != nil {
			t.Fatalf("getting a token for %s: %v", sa, err)
		}
		return c.BearerToken
	}
	managerCfg, err := cluster.ServiceAccountConfig(ctx, systemNamespace, "quotagate-manager", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	readerToken, nobodyToken, metricsOnlyToken := token("reader"), token("nobody"), token("metrics-only")

	port := testbed.FreePort(t)
	startManager(t, managerCfg, secureMetrics(fmt.Sprintf("0.0.0.0:%d", port)))
	base := fmt.Sprintf("https://127.0.0.1:%d", port)

	// One pod runs, one waits: Budget team-a has room for one CPU.
	teamA := namespace("team-a", true)
	create(t, admin, teamA, budget("team-a", "team-a", "requests.cpu=1", ""))
	createPod(t, admin, apiPod("first", "1"))
	testbed.Poll(t, pollTimeout, "pod first to be admitted", func(context.Context) (bool, error) {
		var p corev1.Pod
		err := admin.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "first"}, &p)
		return err == nil && !gates.HasGate(&p, v1alpha1.SchedulingGate), testbed.NotYet(err)
	})
	createPod(t, admin, apiPod("second", "1"))
	testbed.Poll(t, pollTimeout, "pod second to wait for room", func(context.Context) (bool, error) {
		code, body := get(t, base+debugQueuesPath, readerToken)
		return code == http.StatusOK && strings.Contains(body, string(quota.CodeInsufficient)), nil
	})

	t.Run("who may read /debug/queues", func(t *testing.T) {
		tests := map[string]struct {
			token string
			want  int
		}{
			"no token": {want: http.StatusUnauthorized},
			// controller-runtime's filter answers 500 "Authentication failed" when the
			// TokenReview carries an error, as it does for a token that is no JWT.
			"a token the API server cannot parse":           {token: "not-a-token", want: http.StatusInternalServerError},
			"a ServiceAccount without RBAC":                 {token: nobodyToken, want: http.StatusForbidden},
			"a ServiceAccount allowed only /metrics":        {token: metricsOnlyToken, want: http.StatusForbidden},
			"a ServiceAccount bound to debug-queues-reader": {token: readerToken, want: http.StatusOK},
		}
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				code, body := get(t, base+debugQueuesPath, tc.token)
				if code != tc.want {
					t.Fatalf("GET /debug/queues: HTTP %d, want %d; body: %s", code, tc.want, body)
				}
				if code != http.StatusOK {
					return
				}
				var snap quota.Snapshot
				if err := json.Unmarshal([]byte(body), &snap); err != nil {
					t.Fatalf("the body is not a snapshot: %v\n%s", err, body)
				}
			})
		}
		// Authorization is per path: the metrics-only token reads /metrics.
		if code, body := get(t, base+"/metrics", metricsOnlyToken); code != http.StatusOK {
			t.Errorf("GET /metrics with the metrics-only token: HTTP %d: %s", code, body)
		}
	})

	kubeconfig := cluster.KubeconfigPath()
	direct := []string{"--kubeconfig", kubeconfig, "--manager-url", base, "--manager-token", readerToken, "--manager-insecure-skip-tls-verify"}

	t.Run("queue from the manager", func(t *testing.T) {
		out, errOut, err := runReal(t, append(direct, "queue", "team-a/team-a", "-o", "json")...)
		if err != nil {
			t.Fatalf("queue: %v\n%s", err, errOut)
		}
		var list visv1.PendingPodList
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatalf("decoding: %v\n%s", err, out)
		}
		var got []string
		for _, p := range list.Items {
			got = append(got, fmt.Sprintf("%d %s/%s %s %s", p.Position, p.Namespace, p.Name, p.Queue, p.Reason))
		}
		want := []string{"1 team-a/second inadmissible requests.cpu: 1 requested, 0 free in Budget team-a/team-a; position 1 of 1"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("queue (-want +got):\n%s", diff)
		}
	})

	t.Run("why, waiting and admitted", func(t *testing.T) {
		out, errOut, err := runReal(t, append(direct, "why", "second", "-n", "team-a")...)
		if err != nil {
			t.Fatalf("why: %v\n%s", err, errOut)
		}
		t.Logf("kubectl quotagate why second -n team-a:\n%s", out)
		lines := strings.Split(out, "\n")
		if len(lines) < 2 || lines[1] != "Reason: requests.cpu: 1 requested, 0 free in Budget team-a/team-a; position 1 of 1" {
			t.Errorf("why second:\n%s", out)
		}
		out, _, err = runReal(t, append(direct, "why", "team-a/first", "-o", "json")...)
		if err != nil {
			t.Fatalf("why: %v", err)
		}
		var res whyResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("decoding: %v\n%s", err, out)
		}
		if diff := cmp.Diff([]string{"team-a/team-a"}, res.AdmittedBy); res.State != podAdmitted || diff != "" {
			t.Errorf("why first: state %s, admitted by (-want +got):\n%s", res.State, diff)
		}
	})

	t.Run("budgets and close through the API", func(t *testing.T) {
		// The manager writes status shortly after it admits.
		var out string
		testbed.Poll(t, pollTimeout, "budgets to show one admitted and one gated pod", func(context.Context) (bool, error) {
			var err error
			out, _, err = runReal(t, append(direct, "budgets", "-n", "team-a")...)
			return err == nil && strings.Contains(out, "Budget team-a/team-a   Open    1          1") && strings.Contains(out, "requests.cpu   1/1"), testbed.NotYet(err)
		})
		t.Logf("kubectl quotagate budgets -n team-a:\n%s", out)
		if _, errOut, err := runReal(t, append(direct, "close", "team-a", "-n", "team-a")...); err != nil {
			t.Fatalf("close: %v\n%s", err, errOut)
		}
		testbed.Poll(t, pollTimeout, "Budget team-a/team-a to report Closing", func(context.Context) (bool, error) {
			var b v1alpha1.Budget
			err := admin.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "team-a"}, &b)
			return err == nil && b.Status.State == v1alpha1.StateClosing, testbed.NotYet(err)
		})
		out, _, err = runReal(t, append(direct, "why", "team-a/second")...)
		if err != nil || !strings.Contains(out, "Reason: Budget team-a/team-a is Closing\n") {
			t.Errorf("why after close: %v\n%s", err, out)
		}
		if _, errOut, err := runReal(t, append(direct, "open", "budget/team-a", "-n", "team-a")...); err != nil {
			t.Fatalf("open: %v\n%s", err, errOut)
		}
	})

	// The API server's service proxy authenticates the caller and then drops the
	// Authorization header before it forwards the request, so a manager that checks
	// tokens sees none: the plugin says so, and budgets still works from the API.
	t.Run("through the service proxy the manager sees no token", func(t *testing.T) {
		ip := hostIP(t)
		create(t, admin,
			&corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "quotagate-manager-metrics", Namespace: systemNamespace},
				Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{
					Name: "https-metrics", Port: 8080, TargetPort: intstr.FromInt32(int32(port)), Protocol: corev1.ProtocolTCP,
				}}},
			},
		)
		// The proxy only forwards to endpoints that are pods with the endpoint's IP: a
		// stand-in pod, held unscheduled by a gate of its own, claims this machine's IP.
		standIn := podtest.New("quotagate-manager").NS(systemNamespace).
			Gates("test.quotagate.io/stand-in").Container("manager", "quotagate/manager").Obj()
		createPod(t, admin, standIn)
		testbed.Poll(t, pollTimeout, "the stand-in pod to claim "+ip, func(context.Context) (bool, error) {
			var p corev1.Pod
			if err := admin.Get(ctx, client.ObjectKeyFromObject(standIn), &p); err != nil {
				return false, testbed.NotYet(err)
			}
			p.Status.PodIP, p.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
			err := admin.Status().Update(ctx, &p)
			return err == nil, testbed.NotYet(err)
		})
		create(t, admin, &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{
				Name: "quotagate-manager-metrics-test", Namespace: systemNamespace,
				Labels: map[string]string{discoveryv1.LabelServiceName: "quotagate-manager-metrics"},
			},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{{
				Addresses: []string{ip},
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: systemNamespace, Name: standIn.Name},
			}},
			Ports: []discoveryv1.EndpointPort{{Name: ptr.To("https-metrics"), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
		})
		// queue reads the visibility API, which this cluster does not serve.
		_, _, err := runReal(t, "--kubeconfig", kubeconfig, "queue", "team-a/team-a")
		if err == nil || !strings.Contains(err.Error(), "kubectl get apiservice v1alpha1.visibility.quotagate.io") {
			t.Errorf("queue without the visibility API: got error %v, want one that says how to check the APIService", err)
		}
		// budgets goes through the proxy only when told to (the default install's
		// manager is this one, which the proxy cannot reach with a token), and then
		// says why it failed, once.
		out, errOut, err := runReal(t, "--kubeconfig", kubeconfig, "budgets", "-n", "team-a", "--manager-namespace", systemNamespace)
		if err != nil || !strings.Contains(out, "Budget team-a/team-a") || !strings.Contains(errOut, hintProxyAuth) ||
			!strings.Contains(errOut, "oldest waits are computed from the gated pods' creation times") || strings.Count(errOut, "Note:") != 1 {
			t.Errorf("budgets through the proxy: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
		}
		out, errOut, err = runReal(t, "--kubeconfig", kubeconfig, "budgets", "-n", "team-a")
		if err != nil || !strings.Contains(out, "Budget team-a/team-a") || errOut != "" {
			t.Errorf("budgets without --manager-*: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
		}
	})
}
