//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
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
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/test/localinstall"
)

// TestVisibilityFollowsTheLeader runs two manager replicas behind the visibility API's
// Service. The standby answers a tenant with the leader's data (it forwards), and when
// the leader is killed (SIGKILL: its Lease is not released), the standby takes over and
// answers as the leader, through kube-apiserver all along. Hours a Budget's pods used
// survive the SIGKILL within the bound docs/budgets.md states (startHourBudget), and
// so they do when that leader is killed too and a new manager starts cold.
func TestVisibilityFollowsTheLeader(t *testing.T) {
	e := setUpWith(t, localinstall.Options{Values: map[string]any{"manager": map[string]any{"usageWriteInterval": hourUsageWrite.String()}}})
	ctx := t.Context()
	fatalIf(t, e.c.Create(ctx, enabledNamespace(teamNS)), "creating namespace")
	fatalIf(t, e.c.Create(ctx, budget(teamNS, "team-a", v1alpha1.StateClosed, corev1.ResourceList{
		corev1.ResourceRequestsCPU: resource.MustParse("4"),
	})), "creating Budget")
	const pods = 3
	for n := range pods {
		pod := podtest.New(fmt.Sprintf("waiting-%d", n)).NS(teamNS).Req("cpu=1").Obj()
		fatalIf(t, e.c.Create(ctx, pod), "creating pod "+pod.Name)
	}

	hours := startHourBudget(t, e)
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
	testStandbyForwardsSimulation(t, e, standby, pods)
	for range 6 {
		total, err := viaAPIServer()
		if err != nil || total != pods {
			t.Fatalf("through kube-apiserver with two replicas: total %d, %v; want %d", total, err, pods)
		}
	}

	fatalIf(t, leader.Kill(), "killing the leader")
	killed := time.Now()
	hours.killed(t, e, "first")
	waitFor(t, "the standby to lead and publish its own address", time.Minute, func() (bool, string) {
		got, err := e.inst.VisibilityLeader(ctx)
		return err == nil && got == standby.VisibilityURL(), fmt.Sprintf("Lease holds %q (%v)", got, err)
	})
	waitFor(t, "the API to answer through kube-apiserver after the failover", time.Minute, func() (bool, string) {
		total, err := viaAPIServer()
		return err == nil && total == pods, fmt.Sprintf("total %d, %v", total, err)
	})
	t.Logf("After SIGKILL of the leader, the standby led and answered within %v (the Lease is 15 s)", time.Since(killed).Round(time.Second))
	hours.checkAfterFailover(t, e, "SIGKILL of the leader, a standby takes over")
	total, err := direct(ctx, standby)
	if err != nil || total != pods {
		t.Errorf("the new leader asked directly: total %d, %v; want %d", total, err, pods)
	}

	// A cold start: the new leader is killed too, with no standby, and a manager
	// started after a pod ended takes up only what the status held.
	fatalIf(t, standby.Kill(), "killing the second leader")
	hours.killed(t, e, "second")
	_, err = e.inst.AddManagerReplica(ctx)
	fatalIf(t, err, "starting a manager after the kill")
	hours.checkAfterFailover(t, e, "SIGKILL of the only manager, a new one started")
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

// replicaCaller calls one manager replica's visibility server directly, as the
// visibility Service may route any request to either replica, with a bearer token (the
// server reviews it with kube-apiserver, as for any client that reaches it without the
// aggregator), trusting the CA of the release's serving certificate and checking the
// Service's name, as the aggregator does: method on path, with body as JSON (nil for
// none). It returns the answer's body, or an error with the status and body of any
// answer but 200 and 201.
func replicaCaller(t *testing.T, e env, token string) func(ctx context.Context, p *localinstall.ManagerProcess, method, path string, body []byte) ([]byte, error) {
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
	return func(ctx context.Context, p *localinstall.ManagerProcess, method, path string, body []byte) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, method, p.VisibilityURL()+path, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer func() { _ = resp.Body.Close() }()
		out, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
			return nil, fmt.Errorf("%s: %s", resp.Status, out)
		}
		return out, nil
	}
}

// replicaClient reads team-a's Budget queue from one manager replica directly and
// returns how many pods it holds.
func replicaClient(t *testing.T, e env, token string) func(context.Context, *localinstall.ManagerProcess) (int64, error) {
	t.Helper()
	call := replicaCaller(t, e, token)
	return func(ctx context.Context, p *localinstall.ManagerProcess) (int64, error) {
		body, err := call(ctx, p, http.MethodGet, "/apis/visibility.quotagate.io/v1alpha1/namespaces/"+teamNS+"/budgets/team-a/pendingpods", nil)
		if err != nil {
			return 0, err
		}
		var l visv1.PendingPodList
		if err := json.Unmarshal(body, &l); err != nil {
			return 0, err
		}
		return l.Total, nil
	}
}

// testStandbyForwardsSimulation posts a what-if straight to the standby as an editor of
// the namespace: the standby checks the user and forwards to the leader, whose queue
// answers (the simulated pod would wait behind the queued pods, in the closed Budget).
// A viewer, who may not create pods, is refused by the standby itself.
func testStandbyForwardsSimulation(t *testing.T, e env, standby *localinstall.ManagerProcess, queued int64) {
	t.Helper()
	path := "/apis/visibility.quotagate.io/v1alpha1/namespaces/" + teamNS + "/podsimulations"
	sim, err := json.Marshal(&visv1.PodSimulation{
		TypeMeta:   metav1.TypeMeta{APIVersion: visv1.GroupVersion.String(), Kind: "PodSimulation"},
		ObjectMeta: metav1.ObjectMeta{Namespace: teamNS},
		Spec: visv1.PodSimulationSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		}}}}},
	})
	fatalIf(t, err, "encoding the PodSimulation")
	editorCfg, err := clientcmd.BuildConfigFromFlags("", tenantKubeconfig(t, e, "standby-what-if", "edit"))
	fatalIf(t, err, "reading the editor's kubeconfig")
	simulate := replicaCaller(t, e, editorCfg.BearerToken)
	var got visv1.PodSimulation
	waitFor(t, "the standby to answer the editor's simulation with the leader's queue", time.Minute, func() (bool, string) {
		body, err := simulate(t.Context(), standby, http.MethodPost, path, sim)
		if err != nil {
			return false, err.Error()
		}
		got = visv1.PodSimulation{}
		if err := json.Unmarshal(body, &got); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	if len(got.Status.Pods) != 1 {
		t.Fatalf("the standby's answer has %d pods, want 1: %+v", len(got.Status.Pods), got.Status)
	}
	p := got.Status.Pods[0]
	if p.Admitted || len(p.Budgets) != 1 || p.Budgets[0].Name != "team-a" || p.Budgets[0].Position != queued+1 || p.Budgets[0].Total != queued+1 {
		t.Errorf("through the standby the simulated pod is %+v; want it waiting in Budget team-a at %d of %d, behind the leader's queue", p, queued+1, queued+1)
	}

	viewerCfg, err := clientcmd.BuildConfigFromFlags("", tenantKubeconfig(t, e, "standby-what-if-viewer", "view"))
	fatalIf(t, err, "reading the viewer's kubeconfig")
	_, err = replicaCaller(t, e, viewerCfg.BearerToken)(t.Context(), standby, http.MethodPost, path, sim)
	if err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("a viewer's simulation posted to the standby: %v, want 403 Forbidden", err)
	}
}
