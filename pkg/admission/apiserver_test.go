package admission_test

// Tests against a real kube-apiserver (test/localcluster), once for each
// admission mode, with the same cases: in mode webhook the webhook binary's
// server runs in this process on 127.0.0.1, registered with the shipped
// webhook configuration (config/webhook); in mode policy the API server adds
// the gate itself with the shipped MutatingAdmissionPolicy
// (config/policy/admission). Both run with the gate, resize and placement
// guard policies (config/policy), read from their files.

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/cmd/webhook/app"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/admission"
	"github.com/quotagate/quotagate/pkg/gates"
	"github.com/quotagate/quotagate/test/localcluster"
)

// exemptDaemonSet is the DaemonSet of the opted-in namespace that the tests'
// admission step exempts, as the chart's admission.exemptDaemonSets would: its
// name in the webhook's --exempt-daemonsets and in the shipped matchConditions'
// list of exempt DaemonSets, empty as shipped.
const exemptDaemonSet = "exempt-agent"

// waitTimeout bounds every wait for the cluster to act; the machine may be busy.
const waitTimeout = 2 * time.Minute

// latencySamples is how many pods each latency measurement creates.
const latencySamples = 200

// admissionMode is what adds the gate: the chart's admission.mode.
type admissionMode string

const (
	modeWebhook admissionMode = "webhook"
	modePolicy  admissionMode = "policy"
)

// env is what the cases share: one cluster, the admission step, two namespaces.
type env struct {
	mode    admissionMode
	cluster *localcluster.Cluster
	client  kubernetes.Interface
	// gated is labelled quotagate.io/enabled=true; plain is not.
	gated, plain string
	// stopWebhook stops the in-process webhook server and waits for it
	// (mode webhook only).
	stopWebhook func()
	// tenant and manager are made once, by tenantClient and managerClient.
	tenant, manager kubernetes.Interface
}

func TestAgainstAPIServer(t *testing.T) {
	log.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	for _, mode := range []admissionMode{modeWebhook, modePolicy} {
		t.Run(string(mode), func(t *testing.T) { testAgainstAPIServer(t, mode) })
	}
}

func testAgainstAPIServer(t *testing.T, mode admissionMode) {
	c := localcluster.StartForTest(t, localcluster.Options{Nodes: 2})
	cfg := c.Config()
	cfg.QPS, cfg.Burst = 1000, 1000
	e := &env{mode: mode, cluster: c, client: kubernetes.NewForConfigOrDie(cfg), gated: "team-a", plain: "team-b"}
	e.createNamespace(t, e.gated, map[string]string{v1alpha1.EnabledLabel: "true"})
	e.createNamespace(t, e.plain, nil)
	e.createNamespace(t, "quotagate-system", nil)

	without, _ := e.createLatency(t, e.gated)

	if mode == modeWebhook {
		e.stopWebhook = e.startWebhook(t)
	} else {
		e.startPolicy(t)
	}

	with, gated := e.createLatency(t, e.gated)
	t.Logf("Pod create latency over %d creates: without the %s p50 %v p99 %v; with it p50 %v p99 %v",
		latencySamples, mode, percentile(without, 50), percentile(without, 99), percentile(with, 50), percentile(with, 99))
	if gated != latencySamples {
		t.Errorf("%d of the %d pods created with the %s registered came back gated, want all", gated, latencySamples, mode)
	}

	t.Run("gating", func(t *testing.T) { testGating(t, e) })
	t.Run("workloads", func(t *testing.T) { testWorkloads(t, e) })
	t.Run("gate guard", func(t *testing.T) { testGateGuard(t, e) })
	t.Run("escapes", func(t *testing.T) { testEscapes(t, e) })
	t.Run("resize guard", func(t *testing.T) { testResizeGuard(t, e) })
	t.Run("placement guard", func(t *testing.T) { testPlacementGuard(t, e) })
	// After the escapes, which count the webhook's answers: its Job's controller
	// keeps trying to create pods, which the webhook gates and the guard refuses.
	t.Run("admission record at create", func(t *testing.T) { testAdmissionRecordAtCreate(t, e) })
	t.Run("names only the manager writes", func(t *testing.T) { testManagerWrittenNames(t, e) })
	// Last: it takes the admission step away.
	if mode == modeWebhook {
		t.Run("fail closed", func(t *testing.T) { testFailClosed(t, e) })
	} else {
		t.Run("policy removed", func(t *testing.T) { testPolicyRemoved(t, e) })
	}
}

func (e *env) createNamespace(t *testing.T, name string, labels map[string]string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if _, err := e.client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	// The ServiceAccount admission plugin refuses pods until the
	// controller-manager has made the namespace's default ServiceAccount.
	testbed.Poll(t, waitTimeout, "default ServiceAccount in "+name, func(ctx context.Context) (bool, error) {
		_, err := e.client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

// startWebhook runs the webhook binary's servers on 127.0.0.1 with a
// certificate made here, registers the shipped webhook configuration pointed
// at them, and waits until the API server calls it. It returns a func that
// stops the server.
func (e *env) startWebhook(t *testing.T) func() {
	t.Helper()
	certDir := t.TempDir()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatalf("generating serving certificate: %v", err)
	}
	writeFile(t, filepath.Join(certDir, "tls.crt"), certPEM)
	writeFile(t, filepath.Join(certDir, "tls.key"), keyPEM)

	o := app.NewOptions()
	o.Host = "127.0.0.1"
	o.Port = testbed.FreePort(t)
	o.CertDir = certDir
	o.MetricsBindAddress = "0"
	o.ExemptDaemonSets = []string{e.gated + "/" + exemptDaemonSet}
	o.HealthProbeBindAddress = net.JoinHostPort("127.0.0.1", strconv.Itoa(testbed.FreePort(t)))
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	served := make(chan error, 1)
	go func() { served <- app.Serve(ctx, o) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-served; err != nil {
			t.Errorf("webhook server: %v", err)
		}
	}
	t.Cleanup(stop)
	testbed.Poll(t, waitTimeout, "webhook /readyz", func(context.Context) (bool, error) {
		resp, err := http.Get("http://" + o.HealthProbeBindAddress + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})

	mwc, err := testbed.ShippedWebhookConfiguration("../..")
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range mwc.Webhooks[0].MatchConditions {
		mwc.Webhooks[0].MatchConditions[i].Expression = e.withExemptDaemonSet(c.Expression)
	}
	mwc.Webhooks[0].ClientConfig = admissionregistrationv1.WebhookClientConfig{
		URL:      ptr.To(fmt.Sprintf("https://127.0.0.1:%d%s", o.Port, admission.Path)),
		CABundle: certPEM,
	}
	if _, err := e.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(t.Context(), mwc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("registering the webhook: %v", err)
	}
	// The API server picks the configuration up from its informer: wait
	// until a dry-run create comes back gated.
	testbed.Poll(t, waitTimeout, "the API server to call the webhook", func(ctx context.Context) (bool, error) {
		pod, err := e.client.CoreV1().Pods(e.gated).Create(ctx, podtest.New("probe").Obj(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, nil
		}
		return gates.HasGate(pod, v1alpha1.SchedulingGate), nil
	})
	return stop
}

// withExemptDaemonSet writes e.gated/exemptDaemonSet into the shipped CEL's
// empty list of exempt DaemonSets, as the chart does.
func (e *env) withExemptDaemonSet(cel string) string {
	return strings.ReplaceAll(cel, " in []", " in ['"+e.gated+"/"+exemptDaemonSet+"']")
}

// createLatency creates latencySamples pods in namespace one after another,
// after a few untimed ones to warm the connections and caches, and returns
// how long each create took and how many came back with the quotagate gate.
// The pods carry another gate so that neither run adds scheduling load, and
// are deleted afterwards.
func (e *env) createLatency(t *testing.T, namespace string) ([]time.Duration, int) {
	t.Helper()
	const warmup = 20
	took := make([]time.Duration, 0, latencySamples)
	gated := 0
	for i := range warmup + latencySamples {
		pod := podtest.New(fmt.Sprintf("latency-%d", i)).Obj()
		pod.Labels = map[string]string{"latency": "true"}
		pod.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/hold"}}
		start := time.Now()
		created, err := e.client.CoreV1().Pods(namespace).Create(t.Context(), pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating pod %d: %v", i, err)
		}
		if i < warmup {
			continue
		}
		took = append(took, time.Since(start))
		if gates.HasGate(created, v1alpha1.SchedulingGate) {
			gated++
		}
	}
	if err := e.client.CoreV1().Pods(namespace).DeleteCollection(t.Context(),
		metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{LabelSelector: "latency=true"}); err != nil {
		t.Fatalf("deleting the latency pods: %v", err)
	}
	return took, gated
}

func percentile(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s)*p+99)/100 - 1
	return s[max(i, 0)]
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func gateNames(pod *corev1.Pod) []string {
	var names []string
	for _, g := range pod.Spec.SchedulingGates {
		names = append(names, g.Name)
	}
	return names
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
