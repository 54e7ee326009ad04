package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/cmd/webhook/app"
	"github.com/quotagate/quotagate/internal/localcluster"
	"github.com/quotagate/quotagate/pkg/admission"
	"github.com/quotagate/quotagate/pkg/gates"
)

// webhookResult is the admission figure: create latencies in milliseconds, by
// concurrency, with the webhook registered, with the MutatingAdmissionPolicy
// registered instead (the chart's admission.mode policy), and with neither.
type webhookResult struct {
	With    map[int][]float64 `json:"withWebhookMillis"`
	Without map[int][]float64 `json:"withoutWebhookMillis"`
	// Policy are the create latencies with the shipped gate policy
	// (config/policy/admission) registered and no webhook.
	Policy map[int][]float64 `json:"withPolicyMillis,omitempty"`
	// WithCPU and WithoutCPU are the CPU seconds each process used per 1,000 timed
	// creates (warm-up included in the CPU, not in the count).
	WithCPU    map[string]float64 `json:"withWebhookCPUSecondsPer1000"`
	WithoutCPU map[string]float64 `json:"withoutWebhookCPUSecondsPer1000"`
	PolicyCPU  map[string]float64 `json:"withPolicyCPUSecondsPer1000,omitempty"`
	// Connections counts the TCP sockets on the webhook's port, by state, right after
	// the series with the webhook: the connections the API server opened to it.
	Connections map[string]int `json:"webhookSockets"`
}

// createWarmup is how many creates per worker are made and not timed before each
// series, at the series' concurrency, so every connection (the client's, and the API
// server's to the webhook) is open and warm when timing starts.
const createWarmup = 5

// createLatencies creates samples pods in ns, concurrency at a time, and returns how
// long each create took. Every pod carries the hold gate, so none adds scheduling load;
// wantGated checks that each came back with (or without) the quotagate gate.
func (e *env) createLatencies(ctx context.Context, ns, prefix string, concurrency, samples int, wantGated bool) ([]time.Duration, error) {
	spec := podSpec{prefix: prefix, cpu: "10m", gates: []string{holdGate}}
	warm := createWarmup * concurrency
	took := make([]time.Duration, warm+samples)
	next := make(chan int)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range concurrency {
		wg.Go(func() {
			for i := range next {
				start := time.Now()
				pod, err := e.client.CoreV1().Pods(ns).Create(ctx, spec.pod(ns, i), metav1.CreateOptions{})
				took[i] = time.Since(start)
				if err == nil && gates.HasGate(pod, v1alpha1.SchedulingGate) != wantGated {
					err = fmt.Errorf("pod %s came back gated=%v, want %v", pod.Name, !wantGated, wantGated)
				}
				if err != nil {
					mu.Lock()
					first = cmpErr(first, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range warm + samples {
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		return nil, first
	}
	return took[warm:], e.deletePods(ctx, ns)
}

// measureWebhook measures create latency with neither admission step, with the
// webhook, with neither again, with the gate policy, and with neither a third time (the
// three baseline series pooled, so drift in the machine's load is shared by both arms).
func (e *env) measureWebhook(ctx context.Context, concurrencies []int, samples int) (webhookResult, error) {
	r := webhookResult{With: map[int][]float64{}, Without: map[int][]float64{}, Policy: map[int][]float64{},
		WithCPU: map[string]float64{}, WithoutCPU: map[string]float64{}, PolicyCPU: map[string]float64{}}
	timed := map[string]int{}
	ns, err := e.newNamespace(ctx, "webhook", true)
	if err != nil {
		return r, err
	}
	round := 0
	series := func(arm string, into map[int][]float64, cpu map[string]float64, gated bool) error {
		round++
		for _, c := range concurrencies {
			before := e.meter.sample()
			d, err := e.createLatencies(ctx, ns, fmt.Sprintf("c%d-r%d", c, round), c, samples, gated)
			if err != nil {
				return fmt.Errorf("concurrency %d, %s: %w", c, arm, err)
			}
			for name, s := range e.meter.since(before) {
				cpu[name] += s
			}
			timed[arm] += len(d)
			into[c] = append(into[c], millis(d)...)
		}
		return nil
	}
	const none, webhook, policy = "no admission step", "webhook", "policy"
	if err := series(none, r.Without, r.WithoutCPU, false); err != nil {
		return r, err
	}
	stop, port, err := e.startWebhook(ctx, ns)
	if err != nil {
		return r, err
	}
	defer stop()
	if err := series(webhook, r.With, r.WithCPU, true); err != nil {
		return r, err
	}
	if r.Connections, err = tcpStates(port); err != nil {
		return r, err
	}
	if err := e.unregisterWebhook(ctx, ns); err != nil {
		return r, err
	}
	if err := series(none, r.Without, r.WithoutCPU, false); err != nil {
		return r, err
	}
	unregister, err := e.registerPolicy(ctx, ns)
	if err != nil {
		return r, err
	}
	if err := series(policy, r.Policy, r.PolicyCPU, true); err != nil {
		return r, err
	}
	if err := unregister(ctx); err != nil {
		return r, err
	}
	if err := series(none, r.Without, r.WithoutCPU, false); err != nil {
		return r, err
	}
	for arm, cpu := range map[string]map[string]float64{webhook: r.WithCPU, none: r.WithoutCPU, policy: r.PolicyCPU} {
		for name := range cpu {
			cpu[name] = ratio(cpu[name]*1000, float64(timed[arm]))
		}
	}
	return r, nil
}

const webhookConfigName = "quotagate-bench"

// startWebhook runs the webhook binary's server in this process on 127.0.0.1 with a
// certificate made here, registers the shipped webhook configuration pointed at it, and
// waits until a dry-run create in ns comes back gated. The returned func stops the
// server.
func (e *env) startWebhook(ctx context.Context, ns string) (func(), int, error) {
	certDir, err := os.MkdirTemp("", "quotagate-bench-webhook-")
	if err != nil {
		return nil, 0, err
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("generating serving certificate: %w", err)
	}
	for name, b := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(certDir, name), b, 0o600); err != nil {
			return nil, 0, err
		}
	}
	o := app.NewOptions()
	o.Host = "127.0.0.1"
	if o.Port, err = freePort(); err != nil {
		return nil, 0, err
	}
	probe, err := freePort()
	if err != nil {
		return nil, 0, err
	}
	o.CertDir = certDir
	o.MetricsBindAddress = "0"
	o.HealthProbeBindAddress = net.JoinHostPort("127.0.0.1", strconv.Itoa(probe))
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan error, 1)
	go func() { served <- app.Serve(sctx, o) }()
	stop := func() {
		cancel()
		if err := <-served; err != nil {
			// The measurements are taken; a shutdown error changes no number.
			fmt.Fprintf(os.Stderr, "bench: the webhook stopped with: %v\n", err)
		}
		_ = os.RemoveAll(certDir)
	}
	err = poll(ctx, func(context.Context) (bool, error) {
		resp, err := http.Get("http://" + o.HealthProbeBindAddress + "/readyz")
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		stop()
		return nil, 0, fmt.Errorf("waiting for the webhook to be ready: %w", err)
	}
	mwc, err := shippedWebhookConfiguration(e.root)
	if err != nil {
		stop()
		return nil, 0, err
	}
	mwc.Name = webhookConfigName
	mwc.Webhooks[0].ClientConfig = admissionregistrationv1.WebhookClientConfig{
		URL:      ptr.To(fmt.Sprintf("https://127.0.0.1:%d%s", o.Port, admission.Path)),
		CABundle: certPEM,
	}
	if _, err := e.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mwc, metav1.CreateOptions{}); err != nil {
		stop()
		return nil, 0, fmt.Errorf("registering the webhook: %w", err)
	}
	if err := e.waitWebhookCalled(ctx, ns, true); err != nil {
		stop()
		return nil, 0, err
	}
	return stop, o.Port, nil
}

// unregisterWebhook deletes the configuration and waits until the API server stops
// calling the webhook.
func (e *env) unregisterWebhook(ctx context.Context, ns string) error {
	err := e.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, webhookConfigName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("unregistering the webhook: %w", err)
	}
	return e.waitWebhookCalled(ctx, ns, false)
}

// waitWebhookCalled polls dry-run creates in ns until they come back gated (called)
// or not: the API server picks configurations and policies up from its informers.
func (e *env) waitWebhookCalled(ctx context.Context, ns string, called bool) error {
	spec := podSpec{prefix: "probe", cpu: "10m"}
	err := poll(ctx, func(ctx context.Context) (bool, error) {
		pod, err := e.client.CoreV1().Pods(ns).Create(ctx, spec.pod(ns, 0), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, nil
		}
		return gates.HasGate(pod, v1alpha1.SchedulingGate) == called, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the API server to gate pods=%v: %w", called, err)
	}
	return nil
}

// shippedWebhookConfiguration is config/webhook as kustomize builds it: the generated
// manifests.yaml with webhook_patch.yaml applied.
func shippedWebhookConfiguration(root string) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	read := func(name string) ([]byte, error) {
		raw, err := os.ReadFile(filepath.Join(root, "config", "webhook", name))
		if err != nil {
			return nil, err
		}
		return yaml.YAMLToJSON(raw)
	}
	doc, err := read("manifests.yaml")
	if err != nil {
		return nil, fmt.Errorf("reading manifests.yaml: %w", err)
	}
	ops, err := read("webhook_patch.yaml")
	if err != nil {
		return nil, fmt.Errorf("reading webhook_patch.yaml: %w", err)
	}
	patch, err := jsonpatch.DecodePatch(ops)
	if err != nil {
		return nil, fmt.Errorf("decoding webhook_patch.yaml: %w", err)
	}
	if doc, err = patch.Apply(doc); err != nil {
		return nil, fmt.Errorf("applying webhook_patch.yaml: %w", err)
	}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := json.Unmarshal(doc, mwc); err != nil {
		return nil, fmt.Errorf("decoding the webhook configuration: %w", err)
	}
	return mwc, nil
}

// freePort is one port of localcluster.FreePorts.
func freePort() (int, error) {
	ports, err := localcluster.FreePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}
