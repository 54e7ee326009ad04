//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/quotagate/quotagate/api/v1alpha1"
	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/test/localinstall"
)

// TestVisibilityFollowsTheLeader runs two manager replicas behind the visibility API's
// Service. The standby answers a tenant with the leader's data (it forwards), and when
// the leader is killed (SIGKILL: its Lease is not released), the standby takes over and
// answers as the leader, through kube-apiserver all along.
func TestVisibilityFollowsTheLeader(t *testing.T) {
	e := setUp(t)
	ctx := t.Context()
	fatalIf(t, e.c.Create(ctx, enabledNamespace(teamNS)), "creating namespace")
	fatalIf(t, e.c.Create(ctx, budget(teamNS, "team-a", v1alpha1.StateClosed, corev1.ResourceList{
		corev1.ResourceRequestsCPU: resource.MustParse("4"),
	})), "creating Budget")
	const pods = 3
	for n := range pods {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: teamNS, Name: fmt.Sprintf("waiting-%d", n)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "c", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			}}},
		}
		fatalIf(t, e.c.Create(ctx, pod), "creating pod "+pod.Name)
	}

	standby, err := e.inst.AddManagerReplica(ctx)
	fatalIf(t, err, "starting a second manager replica")
	leader := e.inst.ManagerProcesses()[0]
	waitFor(t, "the first manager to publish its visibility address", time.Minute, func() (bool, string) {
		got, err := e.inst.VisibilityLeader(ctx)
		return err == nil && got == leader.VisibilityURL(), fmt.Sprintf("Lease holds %q (%v), want %s", got, err, leader.VisibilityURL())
	})

	viewerCfg, err := clientcmd.BuildConfigFromFlags("", tenantKubeconfig(t, e, "queue-viewer", "view"))
	fatalIf(t, err, "reading the tenant's kubeconfig")
	direct := replicaClient(t, e, viewerCfg.BearerToken)
	viaAPIServer := func() (int64, error) {
		l, err := pendingPodsVia(ctx, viewerCfg, nil)
		if err != nil {
			return 0, err
		}
		return l.Total, nil
	}

	// The standby, asked directly (as the Service may route any request to it),
	// answers with the leader's queue. kube-controller-manager aggregates the chart's
	// role into view a moment after the install, hence the wait.
	waitFor(t, "the standby to answer the tenant with the leader's queue", time.Minute, func() (bool, string) {
		total, err := direct(ctx, standby)
		return err == nil && total == pods, fmt.Sprintf("total %d, %v", total, err)
	})
	for range 6 {
		total, err := viaAPIServer()
		if err != nil || total != pods {
			t.Fatalf("through kube-apiserver with two replicas: total %d, %v; want %d", total, err, pods)
		}
	}

	fatalIf(t, leader.Kill(), "killing the leader")
	killed := time.Now()
	waitFor(t, "the standby to lead and publish its own address", time.Minute, func() (bool, string) {
		got, err := e.inst.VisibilityLeader(ctx)
		return err == nil && got == standby.VisibilityURL(), fmt.Sprintf("Lease holds %q (%v)", got, err)
	})
	waitFor(t, "the API to answer through kube-apiserver after the failover", time.Minute, func() (bool, string) {
		total, err := viaAPIServer()
		return err == nil && total == pods, fmt.Sprintf("total %d, %v", total, err)
	})
	t.Logf("After SIGKILL of the leader, the standby led and answered within %v (the Lease is 15 s)", time.Since(killed).Round(time.Second))
	total, err := direct(ctx, standby)
	if err != nil || total != pods {
		t.Errorf("the new leader asked directly: total %d, %v; want %d", total, err, pods)
	}
}

// pendingPodsVia reads team-a's Budget queue through kube-apiserver with cfg and the
// query params, as `kubectl get --raw` does.
func pendingPodsVia(ctx context.Context, cfg *rest.Config, params map[string]string) (*visv1.PendingPodList, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	req := cs.Discovery().RESTClient().Get().
		AbsPath("/apis/visibility.quotagate.io/v1alpha1/namespaces", teamNS, "budgets", "team-a", "pendingpods")
	for k, v := range params {
		req = req.Param(k, v)
	}
	raw, err := req.DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	var l visv1.PendingPodList
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// replicaClient asks one manager process directly, with a bearer token (the server
// reviews it with kube-apiserver, as for any client that reaches it without the
// aggregator), trusting the CA of the release's serving certificate and checking the
// Service's name, as the aggregator does.
func replicaClient(t *testing.T, e env, token string) func(context.Context, *localinstall.ManagerProcess) (int64, error) {
	t.Helper()
	secret, err := e.cs.CoreV1().Secrets(e.inst.Namespace()).Get(t.Context(), e.inst.WebhookCertSecret(), metav1.GetOptions{})
	fatalIf(t, err, "reading the serving certificate's Secret")
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(secret.Data["ca.crt"]) {
		t.Fatal("the serving certificate's Secret has no ca.crt")
	}
	svc, err := e.cs.CoreV1().Services(e.inst.Namespace()).List(t.Context(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=visibility"})
	fatalIf(t, err, "listing the visibility Service")
	if len(svc.Items) != 1 {
		t.Fatalf("%d visibility Services, want 1", len(svc.Items))
	}
	serverName := svc.Items[0].Name + "." + svc.Items[0].Namespace + ".svc"
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12},
	}}
	return func(ctx context.Context, p *localinstall.ManagerProcess) (int64, error) {
		url := p.VisibilityURL() + "/apis/visibility.quotagate.io/v1alpha1/namespaces/" + teamNS + "/budgets/team-a/pendingpods"
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return 0, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return 0, err
		}
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("%s: %s", resp.Status, body)
		}
		var l visv1.PendingPodList
		if err := json.Unmarshal(body, &l); err != nil {
			return 0, err
		}
		return l.Total, nil
	}
}
