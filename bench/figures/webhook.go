package figures

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/bench/report"
	"github.com/quotagate/quotagate/cmd/webhook/app"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/pkg/admission"
	"github.com/quotagate/quotagate/pkg/gates"
	"github.com/quotagate/quotagate/test/localcluster"
)

// webhookResult is the admission figure: create latencies in milliseconds, by
// concurrency, with the webhook registered, with a bare webhook that only adds the gate
// (the floor for gating by webhook), with the MutatingAdmissionPolicy registered instead
// (the chart's admission.mode policy), with the policy's mutation alone (the floor for
// gating by policy), and with none of them. They are measured side by side: creates
// alternate across five namespaces, each matched by one setting's registration only,
// the last by none (pairedCreates).
type webhookResult struct {
	With    map[int][]float64 `json:"withWebhookMillis"`
	Without map[int][]float64 `json:"withoutWebhookMillis"`
	// BareWebhook are the create latencies with only a bare webhook registered
	// (registerBareWebhook): TLS, the review decoded and encoded, a constant patch. No
	// webhook that gates pods costs less.
	BareWebhook map[int][]float64 `json:"withBareWebhookMillis,omitempty"`
	// Policy are the create latencies with the shipped gate policy
	// (config/policy/admission) registered and no webhook.
	Policy map[int][]float64 `json:"withPolicyMillis,omitempty"`
	// GateOnly are the create latencies with only the gate policy's mutation registered
	// (registerGateOnly): no match conditions, no bound-pod guard, a binding that names
	// the namespace. No policy that gates pods costs the API server less.
	GateOnly map[int][]float64 `json:"withGateOnlyPolicyMillis,omitempty"`
	// WithCPU and WithoutCPU are the CPU seconds each process used per 1,000 timed
	// creates (warm-up included in the CPU, not in the count), from a block of creates
	// in one namespace at a time after the paired series (CPU cannot be told apart when
	// the arms alternate).
	WithCPU        map[string]float64 `json:"withWebhookCPUSecondsPer1000"`
	WithoutCPU     map[string]float64 `json:"withoutWebhookCPUSecondsPer1000"`
	PolicyCPU      map[string]float64 `json:"withPolicyCPUSecondsPer1000,omitempty"`
	GateOnlyCPU    map[string]float64 `json:"withGateOnlyPolicyCPUSecondsPer1000,omitempty"`
	BareWebhookCPU map[string]float64 `json:"withBareWebhookCPUSecondsPer1000,omitempty"`
	// Connections counts the TCP sockets on the webhook's port, by state, right after
	// the paired series: the connections the API server opened to it.
	Connections map[string]int `json:"webhookSockets"`
}

// createWarmup is how many creates per worker and arm are made and not timed before
// each series, at the series' concurrency, so every connection (the client's, and the
// API server's to the webhook) is open and warm when timing starts.
const createWarmup = 5

// createArm is one setting of figure 3: a namespace, and whether the admission step
// registered for it gates its pods.
type createArm struct {
	name  string
	ns    string
	gated bool
}

// pairedCreates creates samples pods in each arm's namespace, concurrency at a time,
// and returns how long each create took, by arm. The creates alternate across the arms
// (create i of every arm is queued before create i+1 of any, and which arm goes first
// rotates), so the arms share the machine's moments and their difference is the
// admission step's, not the load's drift. Every pod carries the hold gate, so none adds
// scheduling load; each must come back with (or without) the quotagate gate as its arm
// says. The pods are deleted afterwards.
func (e *Env) pairedCreates(ctx context.Context, arms []createArm, prefix string, concurrency, samples int) ([][]time.Duration, error) {
	spec := PodSpec{Prefix: prefix, CPU: "10m", Gates: []string{HoldGate}}
	warm := createWarmup * concurrency
	took := make([][]time.Duration, len(arms))
	for a := range arms {
		took[a] = make([]time.Duration, warm+samples)
	}
	type job struct{ arm, i int }
	next := make(chan job)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range concurrency {
		wg.Go(func() {
			for j := range next {
				arm := arms[j.arm]
				start := time.Now()
				pod, err := e.Client.CoreV1().Pods(arm.ns).Create(ctx, spec.Pod(arm.ns, j.i), metav1.CreateOptions{})
				took[j.arm][j.i] = time.Since(start)
				if err == nil && gates.HasGate(pod, v1alpha1.SchedulingGate) != arm.gated {
					err = fmt.Errorf("%s: pod %s/%s came back gated=%v, want %v", arm.name, pod.Namespace, pod.Name, !arm.gated, arm.gated)
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
		for k := range arms {
			next <- job{arm: (i + k) % len(arms), i: i}
		}
	}
	close(next)
	wg.Wait()
	if first != nil {
		return nil, first
	}
	for a, arm := range arms {
		took[a] = took[a][warm:]
		if err := e.DeletePods(ctx, arm.ns); err != nil {
			return nil, err
		}
	}
	return took, nil
}

// measureWebhook measures create latency with the webhook, with a bare webhook, with
// the gate policy, with the policy's mutation alone and with none of them, side by side
// (pairedCreates), in five opted-in namespaces: the webhook configuration is registered
// for the first only, the bare webhook for the second only, the policy's bindings for
// the third only, the mutation alone for the fourth, and the fifth is matched by none.
// During the first concurrency's series it takes a CPU profile of kube-apiserver into
// cpuProfile. Then it measures what each setting costs in CPU, one namespace at a time.
func (e *Env) measureWebhook(ctx context.Context, concurrencies []int, samples int, cpuProfile string) (webhookResult, error) {
	r := webhookResult{With: map[int][]float64{}, Without: map[int][]float64{}, Policy: map[int][]float64{}, GateOnly: map[int][]float64{}, BareWebhook: map[int][]float64{},
		WithCPU: map[string]float64{}, WithoutCPU: map[string]float64{}, PolicyCPU: map[string]float64{}, GateOnlyCPU: map[string]float64{}, BareWebhookCPU: map[string]float64{}}
	// Each setting: its arm, the namespace it is registered for, and where its
	// latencies and CPU go. The baseline, matched by none, is last.
	settings := []struct {
		arm     createArm
		latency map[int][]float64
		cpu     map[string]float64
	}{
		{createArm{name: "webhook", gated: true}, r.With, r.WithCPU},
		{createArm{name: "bare-webhook", gated: true}, r.BareWebhook, r.BareWebhookCPU},
		{createArm{name: "policy", gated: true}, r.Policy, r.PolicyCPU},
		{createArm{name: "gate-only", gated: true}, r.GateOnly, r.GateOnlyCPU},
		{createArm{name: "none"}, r.Without, r.WithoutCPU},
	}
	arms := make([]createArm, len(settings))
	for i := range settings {
		ns, err := e.NewNamespace(ctx, "create-"+settings[i].arm.name, true)
		if err != nil {
			return r, err
		}
		settings[i].arm.ns = ns
		arms[i] = settings[i].arm
	}
	webhook, bare, policy, gateOnly, none := arms[0], arms[1], arms[2], arms[3], arms[4]
	stop, port, err := e.startWebhook(ctx, webhook.ns)
	if err != nil {
		return r, err
	}
	defer stop()
	unregister, err := e.registerPolicy(ctx, policy.ns)
	if err != nil {
		return r, err
	}
	unregisterGateOnly, err := e.registerGateOnly(ctx, gateOnly.ns)
	if err != nil {
		return r, err
	}
	unregisterBare, err := e.registerBareWebhook(ctx, bare.ns)
	if err != nil {
		return r, err
	}
	if err := e.waitWebhookCalled(ctx, none.ns, false); err != nil {
		return r, fmt.Errorf("the baseline namespace: %w", err)
	}
	for i, c := range concurrencies {
		profiled := make(chan error, 1)
		if i == 0 {
			go func() { profiled <- e.apiserverProfile(ctx, apiserverProfileSeconds, cpuProfile) }()
		} else {
			profiled <- nil
		}
		took, err := e.pairedCreates(ctx, arms, fmt.Sprintf("c%d", c), c, samples)
		if err = errors.Join(err, <-profiled); err != nil {
			return r, fmt.Errorf("concurrency %d: %w", c, err)
		}
		for a, st := range settings {
			st.latency[c] = report.Millis(took[a])
		}
	}
	if r.Connections, err = tcpStates(port); err != nil {
		return r, err
	}
	// CPU, setting by setting: the baseline before and after, pooled.
	order := []int{len(settings) - 1}
	for i := range settings {
		order = append(order, i)
	}
	timed := make([]int, len(settings))
	for _, i := range order {
		st := settings[i]
		for _, c := range concurrencies {
			before := e.Meter.Sample()
			took, err := e.pairedCreates(ctx, []createArm{st.arm}, fmt.Sprintf("cpu-c%d-%d", c, timed[i]), c, samples)
			if err != nil {
				return r, fmt.Errorf("CPU, concurrency %d: %w", c, err)
			}
			for name, s := range e.Meter.Since(before) {
				st.cpu[name] += s
			}
			timed[i] += len(took[0])
		}
	}
	for i, st := range settings {
		for name := range st.cpu {
			st.cpu[name] = report.Ratio(st.cpu[name]*1000, float64(timed[i]))
		}
	}
	if err := errors.Join(unregister(ctx), unregisterGateOnly(ctx), unregisterBare(ctx)); err != nil {
		return r, err
	}
	return r, e.unregisterWebhook(ctx, webhook.ns)
}

// apiserverProfileSeconds is how long the API server is profiled from the start of
// figure 3's first paired series: about as long as 1,000 creates per arm take at
// concurrency 1 on a quiet machine.
const apiserverProfileSeconds = 8

// apiserverProfile writes a CPU profile of kube-apiserver over the next seconds to path
// (its /debug/pprof/profile, which the admin may read).
func (e *Env) apiserverProfile(ctx context.Context, seconds int, path string) error {
	raw, err := e.Client.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
		Param("seconds", strconv.Itoa(seconds)).Timeout(time.Duration(seconds+30) * time.Second).DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("profiling kube-apiserver: %w", err)
	}
	return os.WriteFile(path, raw, 0o644)
}

const webhookConfigName = "quotagate-bench"

// startWebhook runs the webhook binary's server in this process on 127.0.0.1 with a
// certificate made here, registers the shipped webhook configuration pointed at it and
// narrowed to ns (onlyNamespace), and waits until a dry-run create in ns comes back
// gated. The returned func stops the
// server.
func (e *Env) startWebhook(ctx context.Context, ns string) (func(), int, error) {
	certDir, err := os.MkdirTemp("", "quotagate-bench-webhook-")
	if err != nil {
		return nil, 0, err
	}
	certPEM, keyPEM, err := LoopbackCert()
	if err != nil {
		return nil, 0, err
	}
	for name, b := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(certDir, name), b, 0o600); err != nil {
			return nil, 0, err
		}
	}
	o := app.NewOptions()
	o.Host = "127.0.0.1"
	if o.Port, err = FreePort(); err != nil {
		return nil, 0, err
	}
	probe, err := FreePort()
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
	if err := WaitReady(ctx, "http://"+o.HealthProbeBindAddress+"/readyz"); err != nil {
		stop()
		return nil, 0, fmt.Errorf("waiting for the webhook to be ready: %w", err)
	}
	mwc, err := testbed.ShippedWebhookConfiguration(e.root)
	if err != nil {
		stop()
		return nil, 0, err
	}
	mwc.Name = webhookConfigName
	mwc.Webhooks[0].ClientConfig = admissionregistrationv1.WebhookClientConfig{
		URL:      ptr.To(fmt.Sprintf("https://127.0.0.1:%d%s", o.Port, admission.Path)),
		CABundle: certPEM,
	}
	mwc.Webhooks[0].NamespaceSelector = onlyNamespace(mwc.Webhooks[0].NamespaceSelector, ns)
	if _, err := e.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mwc, metav1.CreateOptions{}); err != nil {
		stop()
		return nil, 0, fmt.Errorf("registering the webhook: %w", err)
	}
	if err := e.waitWebhookCalled(ctx, ns, true); err != nil {
		stop()
		return nil, 0, err
	}
	return stop, o.Port, nil
}

// unregisterWebhook deletes the configuration startWebhook registered and waits until
// the API server stops calling the webhook.
func (e *Env) unregisterWebhook(ctx context.Context, ns string) error {
	return e.unregisterWebhookConfig(ctx, webhookConfigName, ns)
}

// unregisterWebhookConfig deletes the mutating webhook configuration name and waits until
// creates in ns come back ungated.
func (e *Env) unregisterWebhookConfig(ctx context.Context, name, ns string) error {
	err := e.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("unregistering the webhook configuration %s: %w", name, err)
	}
	return e.waitWebhookCalled(ctx, ns, false)
}

// LoopbackCert is a self-signed serving certificate and its key for 127.0.0.1, for a
// server the benchmark runs on the loopback address.
func LoopbackCert() (certPEM, keyPEM []byte, err error) {
	certPEM, keyPEM, err = certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("generating a serving certificate for 127.0.0.1: %w", err)
	}
	return certPEM, keyPEM, nil
}

// waitWebhookCalled polls dry-run creates in ns until they come back gated (called)
// or not: the API server picks configurations and policies up from its informers.
func (e *Env) waitWebhookCalled(ctx context.Context, ns string, called bool) error {
	spec := PodSpec{Prefix: "probe", CPU: "10m"}
	var last error
	err := Poll(ctx, func(ctx context.Context) (bool, error) {
		pod, err := e.Client.CoreV1().Pods(ns).Create(ctx, spec.Pod(ns, 0), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if last = err; err != nil {
			return false, nil
		}
		return gates.HasGate(pod, v1alpha1.SchedulingGate) == called, nil
	})
	if err != nil {
		if last != nil {
			err = fmt.Errorf("%w (the last dry-run create: %w)", err, last)
		}
		return fmt.Errorf("waiting for the API server to gate pods=%v in %s: %w", called, ns, err)
	}
	return nil
}

// onlyNamespace is sel (a shipped namespaceSelector) narrowed to the namespace ns, so a
// benchmark can register an admission step for one namespace while another opted-in
// namespace, matched by nothing, is the baseline.
func onlyNamespace(sel *metav1.LabelSelector, ns string) *metav1.LabelSelector {
	out := sel.DeepCopy()
	if out == nil {
		out = &metav1.LabelSelector{}
	}
	out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{
		Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: []string{ns},
	})
	return out
}

// FreePort is one port of localcluster.FreePorts.
func FreePort() (int, error) {
	ports, err := localcluster.FreePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}
