package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"sync"
	"time"

	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// podCPUMilli is what each pod of a release batch requests, so that n pods need
// n*podCPUMilli millicores.
const podCPUMilli = 10

// releaseOpts describe one release measurement.
type releaseOpts struct {
	n int
	// toRunning waits for every pod to be Running on a kwok node instead of for every
	// gate to be gone; the pods then carry no hold gate, so kube-scheduler binds them.
	toRunning bool
	// cpuProfile, when set, is where the CPU profile of this process (the manager) is
	// written while quotagate releases.
	cpuProfile string
}

func (o releaseOpts) spec(prefix, gate string) podSpec {
	s := podSpec{prefix: prefix, cpu: fmt.Sprintf("%dm", podCPUMilli), gates: []string{gate}}
	if !o.toRunning {
		s.gates = append(s.gates, holdGate)
	}
	return s
}

func (o releaseOpts) done(pw *podWatch) bool {
	if o.toRunning {
		return len(pw.running) == o.n
	}
	return len(pw.ungated) == o.n
}

func (o releaseOpts) first(pw *podWatch) time.Time {
	if o.toRunning {
		return firstOf(pw.running)
	}
	return firstOf(pw.ungated)
}

func (o releaseOpts) last(pw *podWatch) time.Time {
	if o.toRunning {
		return lastOf(pw.running)
	}
	return lastOf(pw.ungated)
}

// releaseByQuotagate parks n pods behind a Budget whose requests.cpu is 0 (each pod
// requests more than that, so the core sees them as never fitting), raises the budget
// to fit them all, and returns the time from that write to the last pod's watch event.
func (e *env) releaseByQuotagate(ctx context.Context, o releaseOpts) (releaseRun, error) {
	var run releaseRun
	ns, err := e.newNamespace(ctx, "release-qg", true)
	if err != nil {
		return run, err
	}
	if err := e.createBudget(ctx, ns, "0"); err != nil {
		return run, err
	}
	pw, err := watchPods(ctx, e.client, ns, v1alpha1.SchedulingGate)
	if err != nil {
		return run, err
	}
	defer pw.stop()
	if err := e.createPods(ctx, ns, o.spec("p", v1alpha1.SchedulingGate), 0, o.n); err != nil {
		return run, err
	}
	if err := e.waitGated(ctx, ns, o.n); err != nil {
		return run, err
	}
	eventsBefore, err := e.waitEventsSettled(ctx, ns)
	if err != nil {
		return run, err
	}
	stopProfile := func() {}
	if o.cpuProfile != "" {
		if stopProfile, err = startCPUProfile(o.cpuProfile); err != nil {
			return run, err
		}
		defer stopProfile()
	}
	errsBefore, err := ungateErrors()
	if err != nil {
		return run, err
	}
	before := e.meter.sample()
	start := time.Now()
	if err := e.setBudgetCPU(ctx, ns, fmt.Sprintf("%dm", o.n*podCPUMilli)); err != nil {
		return run, err
	}
	if err := pw.waitFor(ctx, "quotagate to release every pod", o.done); err != nil {
		return run, err
	}
	stopProfile()
	run.cpu = e.meter.since(before)
	eventsAfter, err := e.countEvents(ctx, ns)
	if err != nil {
		return run, err
	}
	run.events = eventsAfter - eventsBefore
	errsAfter, err := ungateErrors()
	if err != nil {
		return run, err
	}
	run.ungateErrors = map[string]float64{}
	for reason, n := range errsAfter {
		if d := n - errsBefore[reason]; d > 0 {
			run.ungateErrors[reason] = d
		}
	}
	pw.mu.Lock()
	run.took = o.last(pw).Sub(start)
	run.first = o.first(pw).Sub(start)
	pw.mu.Unlock()
	return run, e.deletePods(ctx, ns)
}

// releaseByBareClient creates the same batch with the baseline gate in a namespace
// that is not opted in, lists it, and times bareUngate from its first patch to the
// last pod's watch event.
func (e *env) releaseByBareClient(ctx context.Context, o releaseOpts, workers int) (releaseRun, error) {
	var run releaseRun
	ns, err := e.newNamespace(ctx, "release-bare", false)
	if err != nil {
		return run, err
	}
	pw, err := watchPods(ctx, e.client, ns, baselineGate)
	if err != nil {
		return run, err
	}
	defer pw.stop()
	if err := e.createPods(ctx, ns, o.spec("p", baselineGate), 0, o.n); err != nil {
		return run, err
	}
	pods, err := listGated(ctx, e.client, ns, o.n)
	if err != nil {
		return run, err
	}
	before := e.meter.sample()
	start := time.Now()
	if err := bareUngate(ctx, e.bare, pods, baselineGate, workers); err != nil {
		return run, err
	}
	if err := pw.waitFor(ctx, "the bare client's releases to be seen", o.done); err != nil {
		return run, err
	}
	run.cpu = e.meter.since(before)
	pw.mu.Lock()
	run.took = o.last(pw).Sub(start)
	run.first = o.first(pw).Sub(start)
	pw.mu.Unlock()
	return run, e.deletePods(ctx, ns)
}

// releaseRun is one release: how long it took, and the CPU seconds each process of the
// cluster and this process used meanwhile.
type releaseRun struct {
	took time.Duration
	cpu  map[string]float64
	// events is how many events were written in the namespace meanwhile.
	events int
	// first is the time to the first pod's event.
	first time.Duration
	// ungateErrors is the growth of quotagate_ungate_errors_total, by reason.
	ungateErrors map[string]float64
}

// releaseResult is a release figure: how long each repetition took, per releaser, and
// the CPU seconds each process used, summed over the repetitions.
type releaseResult struct {
	N            int                `json:"n"`
	Quotagate    []float64          `json:"quotagateSeconds"`
	Baseline     []float64          `json:"baselineSeconds"`
	QuotagateCPU map[string]float64 `json:"quotagateCPUSeconds"`
	BaselineCPU  map[string]float64 `json:"baselineCPUSeconds"`
	// QuotagateEvents counts the events written while quotagate released, summed over
	// the repetitions (the bare client writes none).
	QuotagateEvents int `json:"quotagateEvents"`
	// FirstQuotagate and FirstBaseline are the seconds to the first pod's event.
	FirstQuotagate []float64 `json:"quotagateFirstSeconds"`
	FirstBaseline  []float64 `json:"baselineFirstSeconds"`
	// UngateErrors sums quotagate_ungate_errors_total's growth, by reason.
	UngateErrors map[string]float64 `json:"ungateErrors,omitempty"`
	// EventlessQuotagate, a diagnostic, is quotagate with its event recorder dropping
	// every event, measured after the other repetitions.
	EventlessQuotagate    []float64          `json:"eventlessQuotagateSeconds,omitempty"`
	EventlessQuotagateCPU map[string]float64 `json:"eventlessQuotagateCPUSeconds,omitempty"`
}

// measureRelease alternates quotagate and the bare client for reps repetitions, so a
// change in the machine's load touches both alike. Then it swaps in a manager whose
// events are dropped for eventlessReps more repetitions, if any, and swaps back.
func (e *env) measureRelease(ctx context.Context, o releaseOpts, reps, workers, eventlessReps int, logf func(string, ...any)) (releaseResult, error) {
	r := releaseResult{N: o.n, QuotagateCPU: map[string]float64{}, BaselineCPU: map[string]float64{}}
	profile := o.cpuProfile
	for i := range reps {
		qo := o
		qo.cpuProfile = ""
		if i == 0 {
			qo.cpuProfile = profile
		}
		q, err := e.releaseByQuotagate(ctx, qo)
		if err != nil {
			return r, fmt.Errorf("quotagate, repetition %d: %w", i+1, err)
		}
		b, err := e.releaseByBareClient(ctx, o, workers)
		if err != nil {
			return r, fmt.Errorf("bare client, repetition %d: %w", i+1, err)
		}
		r.Quotagate = append(r.Quotagate, q.took.Seconds())
		r.Baseline = append(r.Baseline, b.took.Seconds())
		for name, s := range q.cpu {
			r.QuotagateCPU[name] += s
		}
		r.QuotagateEvents += q.events
		r.FirstQuotagate = append(r.FirstQuotagate, q.first.Seconds())
		r.FirstBaseline = append(r.FirstBaseline, b.first.Seconds())
		for reason, n := range q.ungateErrors {
			if r.UngateErrors == nil {
				r.UngateErrors = map[string]float64{}
			}
			r.UngateErrors[reason] += n
		}
		for name, s := range b.cpu {
			r.BaselineCPU[name] += s
		}
		logf("  repetition %d: quotagate %.0f pods/s (first after %v, %d events, ungate errors %v), bare client %.0f pods/s (first after %v)", i+1,
			float64(o.n)/q.took.Seconds(), q.first.Round(time.Millisecond), q.events, q.ungateErrors,
			float64(o.n)/b.took.Seconds(), b.first.Round(time.Millisecond))
	}
	if eventlessReps == 0 {
		return r, nil
	}
	settings := defaultManagerSettings()
	if err := e.useManager(ctx, settings, true); err != nil {
		return r, err
	}
	r.EventlessQuotagateCPU = map[string]float64{}
	for i := range eventlessReps {
		q, err := e.releaseByQuotagate(ctx, o)
		if err != nil {
			return r, fmt.Errorf("quotagate without events, repetition %d: %w", i+1, err)
		}
		r.EventlessQuotagate = append(r.EventlessQuotagate, q.took.Seconds())
		for name, s := range q.cpu {
			r.EventlessQuotagateCPU[name] += s
		}
		logf("  repetition %d: quotagate with events dropped %.0f pods/s", i+1, float64(o.n)/q.took.Seconds())
	}
	return r, e.useManager(ctx, settings, false)
}

// startCPUProfile profiles this process into path until the returned func is first
// called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("creating CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("starting CPU profile: %w", err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			_ = f.Close()
		})
	}, nil
}

// ungateErrors reads quotagate_ungate_errors_total, by reason, from the registry the
// in-process manager's metrics are in.
func ungateErrors() (map[string]float64, error) {
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		return nil, fmt.Errorf("reading the manager's metrics: %w", err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "quotagate_ungate_errors_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			reason := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" {
					reason = l.GetValue()
				}
			}
			out[reason] += m.GetCounter().GetValue()
		}
	}
	return out, nil
}
