package visibility

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/pkg/estimate"
)

// countingSimulator answers as stubSimulator does and counts its calls.
type countingSimulator struct {
	mu    sync.Mutex
	calls int
}

func (s *countingSimulator) SimulatePods(ctx context.Context, namespace string, tmpl *corev1.PodTemplateSpec, count int) (estimate.WhatIf, error) {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	return stubSimulator{}.SimulatePods(ctx, namespace, tmpl, count)
}

// simulationBody is a PodSimulation of count pods of containers containers (and
// initContainers init containers), as JSON.
func simulationBody(t *testing.T, count, containers, initContainers int) string {
	t.Helper()
	sim := visv1.PodSimulation{
		TypeMeta: metav1.TypeMeta{APIVersion: visv1.GroupVersion.String(), Kind: visv1.KindPodSimulation},
		Spec:     visv1.PodSimulationSpec{Count: int32(count)},
	}
	for i := range containers {
		sim.Spec.Template.Spec.Containers = append(sim.Spec.Template.Spec.Containers, corev1.Container{Name: fmt.Sprintf("c%d", i)})
	}
	for i := range initContainers {
		sim.Spec.Template.Spec.InitContainers = append(sim.Spec.Template.Spec.InitContainers, corev1.Container{Name: fmt.Sprintf("i%d", i)})
	}
	data, err := json.Marshal(sim)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestPodSimulationSizeLimits: a what-if beyond a size limit is refused before
// anything is simulated, with a status code a client can tell (413 for the body, 422
// for what it asks) and a message that names the limit and the flag that sets it.
func TestPodSimulationSizeLimits(t *testing.T) {
	path := PodSimulationsPath("team-a")
	hugeBody := simulationBody(t, 1, 1, 0)
	hugeBody = strings.Replace(hugeBody, `"template":{`, `"template":{"metadata":{"annotations":{"a":"`+strings.Repeat("x", DefaultSimulationMaxBodyBytes)+`"}},`, 1)
	for name, tc := range map[string]struct {
		limits  *SimulationLimits
		body    string
		chunked bool // no Content-Length: the limit is found while reading
		code    int
		message string
	}{
		"the attack: 1000 pods of 9000 containers": {
			body: simulationBody(t, 1000, 9000, 0), code: http.StatusUnprocessableEntity,
			message: "a simulation of 1000 pods of 9000 containers each (9000000 containers) exceeds the limit of 10000 containers (--simulation-max-containers)",
		},
		"more pods than the limit": {
			body: simulationBody(t, 1001, 1, 0), code: http.StatusUnprocessableEntity,
			message: "a simulation of 1001 pods exceeds the limit of 1000 pods (--simulation-max-pods)",
		},
		"init containers count": {
			limits: &SimulationLimits{MaxBodyBytes: 1 << 20, MaxPods: 100, MaxContainers: 40, Timeout: time.Minute, Concurrency: 1},
			body:   simulationBody(t, 10, 3, 2), code: http.StatusUnprocessableEntity,
			message: "a simulation of 10 pods of 5 containers each (50 containers) exceeds the limit of 40 containers (--simulation-max-containers)",
		},
		"a body larger than the limit": {
			body: hugeBody, code: http.StatusRequestEntityTooLarge,
			message: fmt.Sprintf("a PodSimulation body of %d bytes exceeds the limit of 524288 bytes (--simulation-max-body-bytes)", len(hugeBody)),
		},
		"a body larger than the limit, of no declared length": {
			body: hugeBody, chunked: true, code: http.StatusRequestEntityTooLarge,
			message: "a PodSimulation body of more than 524288 bytes exceeds the limit of 524288 bytes (--simulation-max-body-bytes)",
		},
		"at the limits": {body: simulationBody(t, 1000, 10, 0), code: http.StatusCreated},
	} {
		t.Run(name, func(t *testing.T) {
			sim := &countingSimulator{}
			opts := []HandlerOption{WithSimulator(sim)}
			if tc.limits != nil {
				opts = append(opts, WithSimulationLimits(*tc.limits))
			}
			h := NewHandler(fakeQueues{}, clocktesting.NewFakePassiveClock(time.Now()), opts...)
			var body io.Reader = strings.NewReader(tc.body)
			if tc.chunked {
				body = io.MultiReader(body) // hides the length from NewRequest
			}
			r := httptest.NewRequest(http.MethodPost, path, body)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code != tc.code {
				t.Fatalf("answered %d, want %d: %s", rec.Code, tc.code, rec.Body)
			}
			if tc.code == http.StatusCreated {
				return
			}
			var st metav1.Status
			if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
				t.Fatal(err)
			}
			if st.Message != tc.message {
				t.Errorf("message %q, want %q", st.Message, tc.message)
			}
			if sim.calls != 0 {
				t.Errorf("the simulator was asked %d times for a request beyond the limits", sim.calls)
			}
		})
	}
}

// gatedSimulator answers at once in namespaces it does not hold; in one it holds, the
// simulation reports it started, then runs until its request ends or the test lets it
// answer (release), and reports how it ended.
type gatedSimulator struct {
	release map[string]chan struct{}
	started chan string
	ended   chan error // context.Cause of a simulation that stopped; nil for one released
}

func newGatedSimulator(hold ...string) *gatedSimulator {
	g := &gatedSimulator{release: map[string]chan struct{}{}, started: make(chan string, 8), ended: make(chan error, 8)}
	for _, ns := range hold {
		g.release[ns] = make(chan struct{})
	}
	return g
}

func (g *gatedSimulator) SimulatePods(ctx context.Context, namespace string, tmpl *corev1.PodTemplateSpec, count int) (estimate.WhatIf, error) {
	release, ok := g.release[namespace]
	if !ok {
		return stubSimulator{}.SimulatePods(ctx, namespace, tmpl, count)
	}
	g.started <- namespace
	select {
	case <-ctx.Done():
		g.ended <- context.Cause(ctx)
		return estimate.WhatIf{}, context.Cause(ctx)
	case <-release:
		g.ended <- nil
		return stubSimulator{}.SimulatePods(ctx, namespace, tmpl, count)
	}
}

// post sends a what-if for namespace to h with ctx, in the background.
func post(ctx context.Context, h http.Handler, namespace string) <-chan *httptest.ResponseRecorder {
	out := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		r := httptest.NewRequestWithContext(ctx, http.MethodPost, PodSimulationsPath(namespace), strings.NewReader(simBody))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		out <- rec
	}()
	return out
}

// TestPodSimulationSlots: one simulation runs per namespace and at most Concurrency at
// once; a what-if that finds no room is answered 429 with Retry-After at once, never
// queued, and another namespace's is answered meanwhile. A simulation ends when its
// client goes away, or when its time is up (504 naming the limit), and its slot is
// free again.
func TestPodSimulationSlots(t *testing.T) {
	sim := newGatedSimulator("team-a", "team-b")
	limits := DefaultSimulationLimits()
	h := NewHandler(fakeQueues{}, clocktesting.NewFakePassiveClock(time.Now()), WithSimulator(sim), WithSimulationLimits(limits))
	busy := func(namespace, want string) {
		t.Helper()
		rec := <-post(t.Context(), h, namespace)
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("a what-if of %s: %d, Retry-After %q: %s; want 429, Retry-After 1 and %q", namespace, rec.Code, rec.Header().Get("Retry-After"), rec.Body, want)
		}
	}
	answered := func(rec *httptest.ResponseRecorder, what string) {
		t.Helper()
		if rec.Code != http.StatusCreated {
			t.Errorf("%s: %d, want 201: %s", what, rec.Code, rec.Body)
		}
	}

	clientA, leave := context.WithCancel(t.Context())
	runningA := post(clientA, h, "team-a")
	if ns := <-sim.started; ns != "team-a" {
		t.Fatalf("%s started, want team-a", ns)
	}
	busy("team-a", "a pod simulation of namespace team-a is running: one runs per namespace at a time")
	answered(<-post(t.Context(), h, "team-c"), "team-c's what-if while team-a's runs")

	runningB := post(t.Context(), h, "team-b")
	<-sim.started
	busy("team-c", "the manager runs 2 pod simulations of other namespaces, its limit (--simulation-concurrency)")
	sim.release["team-b"] <- struct{}{}
	if err := <-sim.ended; err != nil {
		t.Errorf("team-b's simulation stopped (%v), want it answered", err)
	}
	answered(<-runningB, "team-b's what-if")
	answered(<-post(t.Context(), h, "team-c"), "team-c's what-if once team-b's answered")

	leave()
	if err := <-sim.ended; !errors.Is(err, context.Canceled) {
		t.Errorf("team-a's simulation ended with %v, want it stopped because its client went away", err)
	}
	<-runningA
	// The slot is free: team-a's next what-if runs, until its time is up.
	short := limits
	short.Timeout = 50 * time.Millisecond
	h = NewHandler(fakeQueues{}, clocktesting.NewFakePassiveClock(time.Now()), WithSimulator(sim), WithSimulationLimits(short))
	rec := <-post(t.Context(), h, "team-a")
	<-sim.started
	if err := <-sim.ended; !errors.As(err, new(simulationTimedOut)) {
		t.Errorf("team-a's simulation ended with %v, want its time up", err)
	}
	if want := "the simulation ran longer than its limit of 50ms (--simulation-timeout)"; rec.Code != http.StatusGatewayTimeout || !strings.Contains(rec.Body.String(), want) {
		t.Errorf("a what-if past its time: %d %s, want 504 and %q", rec.Code, rec.Body, want)
	}
	go func() { sim.release["team-a"] <- struct{}{} }()
	answered(<-post(t.Context(), h, "team-a"), "team-a's what-if once its last one ended")
	<-sim.started
	if err := <-sim.ended; err != nil {
		t.Errorf("team-a's last what-if stopped (%v), want it released", err)
	}
}

// TestSlowBodyHoldsNoSlot: a what-if whose body has not all arrived takes no slot, so
// a client that sends it slowly keeps no tenant out; a body found too large while it is
// read is refused without one either.
func TestSlowBodyHoldsNoSlot(t *testing.T) {
	limits := DefaultSimulationLimits()
	limits.Concurrency = 1
	h := NewHandler(fakeQueues{}, clocktesting.NewFakePassiveClock(time.Now()), WithSimulator(stubSimulator{}), WithSimulationLimits(limits))
	body, sender := io.Pipe()
	slow := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		r := httptest.NewRequest(http.MethodPost, PodSimulationsPath("team-a"), body)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		slow <- rec
	}()
	if _, err := sender.Write([]byte(simBody[:20])); err != nil { // the handler is reading
		t.Fatal(err)
	}
	for _, ns := range []string{"team-a", "team-b"} {
		if rec := <-post(t.Context(), h, ns); rec.Code != http.StatusCreated {
			t.Errorf("a what-if of %s while team-a's slow body arrives: %d, want 201: %s", ns, rec.Code, rec.Body)
		}
	}
	if _, err := sender.Write([]byte(simBody[20:])); err != nil {
		t.Fatal(err)
	}
	_ = sender.Close()
	if rec := <-slow; rec.Code != http.StatusCreated {
		t.Errorf("the slow what-if, once its body arrived: %d, want 201: %s", rec.Code, rec.Body)
	}
}

// TestBodyThatNeverArrives: a client that sends a what-if's headers and part of its
// body, then nothing, is answered 408 once the simulation's time is up, the limit
// named, instead of holding the server's goroutine for as long as it likes.
func TestBodyThatNeverArrives(t *testing.T) {
	limits := DefaultSimulationLimits()
	limits.Timeout = 100 * time.Millisecond
	srv := httptest.NewServer(NewHandler(fakeQueues{}, clocktesting.NewFakePassiveClock(time.Now()), WithSimulator(stubSimulator{}), WithSimulationLimits(limits)))
	t.Cleanup(srv.Close)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", PodSimulationsPath("team-a"), len(simBody), simBody[:20])
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if want := "the PodSimulation's body did not arrive within 100ms (--simulation-timeout)"; resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(raw), want) {
		t.Errorf("a body that never arrives: %d %s, want 408 and %q", resp.StatusCode, raw, want)
	}
}
