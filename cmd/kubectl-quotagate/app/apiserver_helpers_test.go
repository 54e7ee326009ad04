package app

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"

	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/pkg/quota/controller"
)

// The in-process manager, the objects and the HTTP reads that TestSnapshotOnAPIServer
// works with.

// startManager starts a manager whose metrics endpoint (and /debug/queues) is served
// as metrics says.
func startManager(t *testing.T, cfg *rest.Config, metrics metricsserver.Options) {
	t.Helper()
	_, mgr, err := controller.NewManager(cfg, controller.DefaultOptions(), ctrl.Options{
		Metrics:                metrics,
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}

// secureMetrics serves the metrics endpoint as the chart does: HTTPS, and every request
// checked with a TokenReview and a SubjectAccessReview.
func secureMetrics(addr string) metricsserver.Options {
	return metricsserver.Options{BindAddress: addr, SecureServing: true, FilterProvider: filters.WithAuthenticationAndAuthorization}
}

// runReal runs the plugin as a user does, kubeconfig flags and all.
func runReal(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(t.Context())
	return out.String(), errOut.String(), err
}

// apiPod is a gated pod of team-a to create through the API (which sets UID and
// creation time).
func apiPod(name string, cpu string) *corev1.Pod {
	p := makePod("team-a", name).Req("cpu=" + cpu).Obj()
	p.UID, p.CreationTimestamp = "", metav1.Time{}
	p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	return p
}

// createPod creates a pod, retrying while the namespace's default ServiceAccount does
// not exist yet.
func createPod(t *testing.T, c client.Client, p *corev1.Pod) {
	t.Helper()
	testbed.Poll(t, pollTimeout, "pod "+p.Name+" to be created", func(context.Context) (bool, error) {
		err := c.Create(t.Context(), p.DeepCopy())
		return err == nil, testbed.NotYet(err)
	})
}

func readClusterRole(t *testing.T, path string) *rbacv1.ClusterRole {
	t.Helper()
	role, err := testbed.ReadClusterRole(path)
	if err != nil {
		t.Fatal(err)
	}
	return role
}

func clusterRoleBinding(name, role, serviceAccount string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: serviceAccount, Namespace: systemNamespace}},
	}
}

func create(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(t.Context(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// get fetches url with a bearer token (none when empty), trusting any certificate: the
// manager's is self-signed.
func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed test server
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// hostIP is a non-loopback IPv4 address of this machine: the API server refuses to
// proxy to loopback addresses, and Endpoints may not hold them.
func hostIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Fatal("this machine has no non-loopback IPv4 address for the service proxy to reach")
	return ""
}
