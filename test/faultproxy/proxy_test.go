package faultproxy

import (
	"bufio"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// upstream is a stand-in for kube-apiserver: it answers a pod PATCH with the pod and
// records every request it received.
type upstream struct {
	*httptest.Server
	mu       sync.Mutex
	requests []string // "METHOD path auth"
}

func newUpstream(t *testing.T) *upstream {
	t.Helper()
	u := &upstream{}
	u.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.requests = append(u.requests, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		u.mu.Unlock()
		if r.URL.Query().Get("watch") == "true" {
			// One event now, the next only when the client has seen the first: a
			// proxy that buffered the stream would deadlock here.
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintln(w, `{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"first"}}}`)
			http.NewResponseController(w).Flush()
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprint(w, `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns","resourceVersion":"7"}}`)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) received() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.requests...)
}

func (u *upstream) caPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: u.Certificate().Raw})
}

// start starts a proxy in front of u with opts (Target and TargetCA filled in) and a
// clientset that reaches u through it with a bearer token.
func start(t *testing.T, u *upstream, opts Options) (*Proxy, kubernetes.Interface) {
	t.Helper()
	opts.Target, opts.TargetCA = u.URL, u.caPEM()
	p, err := Start(opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	cfg, err := p.ClientConfig(&rest.Config{BearerToken: "s3cret", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, cs
}

func patchPod(ctx context.Context, cs kubernetes.Interface) (*corev1.Pod, error) {
	return cs.CoreV1().Pods("ns").Patch(ctx, "p", types.JSONPatchType, []byte(`[]`), metav1.PatchOptions{})
}

// only draws f for every matching request.
func only(f Fault) Options { return Options{Rate: 1, Weights: map[Fault]int{f: 1}} }

func TestPassThroughForwardsTheCallersCredentials(t *testing.T) {
	u := newUpstream(t)
	p, cs := start(t, u, Options{Rate: 0})
	pod, err := patchPod(t.Context(), cs)
	if err != nil {
		t.Fatalf("PATCH through a proxy that injects nothing: %v", err)
	}
	if pod.ResourceVersion != "7" {
		t.Errorf("the client got %+v, not the upstream's pod", pod.ObjectMeta)
	}
	if diff := cmp.Diff([]string{"PATCH /api/v1/namespaces/ns/pods/p Bearer s3cret"}, u.received()); diff != "" {
		t.Errorf("upstream received (-want +got):\n%s", diff)
	}
	if s := p.Stats(); s.Matched != 1 || s.Faults[None] != 1 || s.Injected() != 0 {
		t.Errorf("stats %s, want one matched request passed through", s)
	}
}

func TestFaults(t *testing.T) {
	tests := map[Fault]struct {
		forwarded bool
		check     func(t *testing.T, err error)
	}{
		DropResponse: {forwarded: true, check: func(t *testing.T, err error) {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("error %v, want an unexpected EOF", err)
			}
		}},
		ResetAfterForward: {forwarded: true, check: wantReset},
		ResetConnection:   {forwarded: false, check: wantReset},
		TooManyRequests:   {forwarded: false, check: wantStatus(http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests)},
		InternalError:     {forwarded: false, check: wantStatus(http.StatusInternalServerError, metav1.StatusReasonInternalError)},
		Unavailable:       {forwarded: false, check: wantStatus(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable)},
		GatewayTimeout:    {forwarded: false, check: wantStatus(http.StatusGatewayTimeout, metav1.StatusReasonTimeout)},
	}
	for fault, tc := range tests {
		t.Run(fault.String(), func(t *testing.T) {
			u := newUpstream(t)
			p, cs := start(t, u, only(fault))
			_, err := patchPod(t.Context(), cs)
			if err == nil {
				t.Fatalf("PATCH succeeded under %s", fault)
			}
			tc.check(t, err)
			// client-go must not have retried on its own: exactly one attempt, which
			// reached the API server only if the fault forwards.
			var want []string
			if tc.forwarded {
				want = []string{"PATCH /api/v1/namespaces/ns/pods/p Bearer s3cret"}
			}
			if diff := cmp.Diff(want, u.received()); diff != "" {
				t.Errorf("upstream received (-want +got):\n%s", diff)
			}
			if s := p.Stats(); s.Matched != 1 || s.Faults[fault] != 1 {
				t.Errorf("stats %s, want one %s", s, fault)
			}
		})
	}
}

func wantReset(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("error %v, want a connection reset", err)
	}
}

func wantStatus(code int32, reason metav1.StatusReason) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var se *apierrors.StatusError
		if !errors.As(err, &se) {
			t.Fatalf("error %v (%T), want an API status error", err, err)
		}
		if se.ErrStatus.Code != code || se.ErrStatus.Reason != reason || !strings.Contains(se.ErrStatus.Message, "faultproxy") {
			t.Errorf("status %+v, want code %d reason %s from faultproxy", se.ErrStatus, code, reason)
		}
	}
}

func TestDelayedResponseIsAppliedButTheClientTimesOut(t *testing.T) {
	u := newUpstream(t)
	opts := only(DelayResponse)
	opts.Delay = time.Hour
	p, cs := start(t, u, opts)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err := patchPod(ctx, cs)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want the client's deadline", err)
	}
	if got := len(u.received()); got != 1 {
		t.Errorf("upstream received %d requests, want the one that was delayed", got)
	}
	// The proxy lets go of the request once the client has gone.
	deadline := time.Now().Add(10 * time.Second)
	for p.InFlight() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := p.InFlight(); n != 0 {
		t.Errorf("%d requests still held after the client gave up", n)
	}
}

func TestDelayedResponseArrivesAfterTheDelay(t *testing.T) {
	u := newUpstream(t)
	opts := only(DelayResponse)
	opts.Delay = 50 * time.Millisecond
	_, cs := start(t, u, opts)
	pod, err := patchPod(t.Context(), cs)
	if err != nil {
		t.Fatalf("PATCH with a short delay: %v", err)
	}
	if pod.ResourceVersion != "7" {
		t.Errorf("the client got %+v, not the upstream's pod", pod.ObjectMeta)
	}
}

func TestRetryAfterLetsClientGoRetry(t *testing.T) {
	u := newUpstream(t)
	opts := Options{Rate: 0.5, Weights: map[Fault]int{Unavailable: 1}, RetryAfter: 1, Seed: 1}
	p, cs := start(t, u, opts)
	// With Retry-After, client-go retries 503s by itself: every PATCH ends well.
	for i := range 6 {
		if _, err := patchPod(t.Context(), cs); err != nil {
			t.Fatalf("PATCH %d: %v", i, err)
		}
	}
	if s := p.Stats(); s.Faults[Unavailable] == 0 {
		t.Fatalf("stats %s: no 503 was injected, the test proves nothing", s)
	}
}

func TestWatchesStreamUntouched(t *testing.T) {
	u := newUpstream(t)
	opts := only(ResetConnection)
	opts.Match = Everything
	p, _ := start(t, u, opts)
	cfg, err := p.ClientConfig(&rest.Config{BearerToken: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL()+"/api/v1/namespaces/ns/pods?watch=true", nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("watch through a proxy that faults everything: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	// The upstream holds the stream open after its first event: reading it proves the
	// proxy flushed it instead of waiting for the end.
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.Contains(line, `"first"`) {
		t.Fatalf("first watch event %q, %v", line, err)
	}
	if s := p.Stats(); s.Streamed != 1 || s.Matched != 0 {
		t.Errorf("stats %s, want one watch streamed and nothing faulted", s)
	}
}

func TestTheSameSeedMakesTheSameDecisions(t *testing.T) {
	decisions := func(seed uint64) []Fault {
		p, err := Start(Options{Target: "http://127.0.0.1:1", Rate: 0.5, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = p.Close() }()
		var out []Fault
		for range 50 {
			out = append(out, p.draw())
		}
		s := p.Stats()
		if s.Matched != 50 || s.Injected()+s.Faults[None] != 50 {
			t.Errorf("stats %s do not add up to 50 decisions", s)
		}
		return out
	}
	a, b := decisions(42), decisions(42)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("two proxies with seed 42 decided differently (-first +second):\n%s", diff)
	}
	kinds := map[Fault]bool{}
	for _, f := range a {
		kinds[f] = true
	}
	if !kinds[None] || len(kinds) < 4 {
		t.Errorf("50 decisions at rate 0.5 over every fault drew only %v", kinds)
	}
}

func TestMatchers(t *testing.T) {
	tests := map[string]struct {
		method, url string
		match       Matcher
		want        bool
	}{
		"pod patch":               {"PATCH", "/api/v1/namespaces/ns/pods/p", PodPatches, true},
		"pod status patch":        {"PATCH", "/api/v1/namespaces/ns/pods/p/status", PodPatches, false},
		"pod update":              {"PUT", "/api/v1/namespaces/ns/pods/p", PodPatches, false},
		"pod list":                {"GET", "/api/v1/namespaces/ns/pods", PodPatches, false},
		"node patch":              {"PATCH", "/api/v1/nodes/n", PodPatches, false},
		"lease update":            {"PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", LeaseWrites, true},
		"lease get":               {"GET", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", LeaseWrites, false},
		"either":                  {"PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", AnyOf(PodPatches, LeaseWrites), true},
		"neither":                 {"GET", "/version", AnyOf(PodPatches, LeaseWrites), false},
		"everything":              {"GET", "/version", Everything, true},
		"pods named like a patch": {"PATCH", "/api/v1/namespaces/ns/pods/p/ephemeralcontainers", PodPatches, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.url, nil)
			if got := tc.match(r); got != tc.want {
				t.Errorf("match %s %s = %v, want %v", tc.method, tc.url, got, tc.want)
			}
		})
	}
}

func TestIsWatch(t *testing.T) {
	for url, want := range map[string]bool{
		"/api/v1/namespaces/ns/pods?watch=true":                       true,
		"/api/v1/namespaces/ns/pods?watch=1&resourceVersion=5":        true,
		"/api/v1/watch/namespaces/ns/pods":                            true,
		"/apis/quotagate.io/v1alpha1/watch/budgets":                   true,
		"/api/v1/namespaces/ns/pods":                                  false,
		"/api/v1/namespaces/ns/pods?watch=false":                      false,
		"/apis/coordination.k8s.io/v1/namespaces/ns/leases/watchdogs": false,
	} {
		if got := isWatch(httptest.NewRequest("GET", url, nil)); got != want {
			t.Errorf("isWatch(%s) = %v, want %v", url, got, want)
		}
	}
}

func TestBadOptionsAreRefused(t *testing.T) {
	tests := map[string]struct {
		opts Options
		want string
	}{
		"rate above 1":     {Options{Target: "https://127.0.0.1:6443", Rate: 1.5}, "not between 0 and 1"},
		"no target":        {Options{Rate: 0.2}, "not an http(s) URL"},
		"negative weight":  {Options{Target: "https://127.0.0.1:6443", Weights: map[Fault]int{DropResponse: -1}}, "negative"},
		"all weights zero": {Options{Target: "https://127.0.0.1:6443", Weights: map[Fault]int{DropResponse: 0}}, "weight 0"},
		"weight for None":  {Options{Target: "https://127.0.0.1:6443", Weights: map[Fault]int{None: 1, DropResponse: 1}}, "not a fault"},
		"CA without PEM":   {Options{Target: "https://127.0.0.1:6443", TargetCA: []byte("nope")}, "no PEM"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p, err := Start(tc.opts)
			if err == nil {
				_ = p.Close()
				t.Fatalf("Start(%+v) succeeded", tc.opts)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

func TestClientCertificatesAreRefused(t *testing.T) {
	p, err := Start(Options{Target: "https://127.0.0.1:6443"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close() }()
	if _, err := p.ClientConfig(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CertData: []byte("x"), KeyData: []byte("y")}}); err == nil {
		t.Errorf("a config that authenticates with a client certificate was accepted")
	}
}
