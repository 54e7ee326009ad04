package figures

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// PodCPUMilli is what each pod of a release batch requests, so that n pods need
// n*podCPUMilli millicores.
const PodCPUMilli = 10

// ReleaseOpts describe one release measurement.
type ReleaseOpts struct {
	N int
	// ToRunning waits for every pod to be Running on a kwok node instead of for every
	// gate to be gone; the pods then carry no hold gate, so kube-scheduler binds them.
	ToRunning bool
	// CPUProfile, when set, is where the CPU profile of this process (the manager) is
	// written while quotagate releases.
	CPUProfile string
	// Flavors, when above 0, splits quotagate's budget over that many Flavors of the
	// batch's own (flavors.go): each pod is ungated with a flavor's node labels, and
	// the arm fails unless each flavor took the share its hard allows.
	Flavors int
}

func (o ReleaseOpts) spec(prefix, gate string) PodSpec {
	s := PodSpec{Prefix: prefix, CPU: fmt.Sprintf("%dm", PodCPUMilli), Gates: []string{gate}}
	if !o.ToRunning {
		s.Gates = append(s.Gates, HoldGate)
	}
	return s
}

func (o ReleaseOpts) Done(pw *PodWatch) bool {
	if o.ToRunning {
		return len(pw.Running) == o.N
	}
	return len(pw.Ungated) == o.N
}

func (o ReleaseOpts) First(pw *PodWatch) time.Time {
	if o.ToRunning {
		return FirstOf(pw.Running)
	}
	return FirstOf(pw.Ungated)
}

func (o ReleaseOpts) Last(pw *PodWatch) time.Time {
	if o.ToRunning {
		return LastOf(pw.Running)
	}
	return LastOf(pw.Ungated)
}

// Times is how long after start the watch saw the first and the last pod released
// (or running, with ToRunning), read under the watch's lock: every arm of the release
// figures ends with it.
func (o ReleaseOpts) Times(pw *PodWatch, start time.Time) (took, first time.Duration) {
	pw.Mu.Lock()
	defer pw.Mu.Unlock()
	return o.Last(pw).Sub(start), o.First(pw).Sub(start)
}

// ReleaseByQuotagate parks n pods behind a Budget whose requests.cpu is 0 (each pod
// requests more than that, so the core sees them as never fitting), raises the budget
// to fit them all, and returns the time from that write to the last pod's watch event.
// With o.Flavors, the Budget's Flavors are raised in the same write, and deleted after.
func (e *Env) ReleaseByQuotagate(ctx context.Context, o ReleaseOpts) (run ReleaseRun, err error) {
	what := "release-qg"
	if o.Flavors > 0 {
		what = "release-flavors"
	}
	ns, err := e.NewNamespace(ctx, what, true)
	if err != nil {
		return run, err
	}
	fs, err := e.releaseBudget(ctx, ns, o)
	defer func() { err = errors.Join(err, fs.delete(ctx, e.Admin)) }()
	if err != nil {
		return run, err
	}
	pw, err := WatchPods(ctx, e.Client, ns, v1alpha1.SchedulingGate)
	if err != nil {
		return run, err
	}
	defer pw.Stop()
	writesBefore := e.Writes.In(ns)
	if err := e.CreatePods(ctx, ns, o.spec("p", v1alpha1.SchedulingGate), 0, o.N); err != nil {
		return run, err
	}
	if err := e.WaitGated(ctx, ns, o.N); err != nil {
		return run, err
	}
	eventsBefore, err := e.WaitEventsSettled(ctx, ns)
	if err != nil {
		return run, err
	}
	stopProfile := func() {}
	if o.CPUProfile != "" {
		if stopProfile, err = startCPUProfile(o.CPUProfile); err != nil {
			return run, err
		}
		defer stopProfile()
	}
	errsBefore, err := ungateErrors()
	if err != nil {
		return run, err
	}
	before := e.Meter.Sample()
	start := time.Now()
	if err := e.raiseRelease(ctx, ns, o, fs); err != nil {
		return run, err
	}
	if err := pw.WaitFor(ctx, "quotagate to release every pod", o.Done); err != nil {
		return run, err
	}
	stopProfile()
	run.CPU = e.Meter.Since(before)
	eventsAfter, err := e.countEvents(ctx, ns)
	if err != nil {
		return run, err
	}
	run.events = eventsAfter - eventsBefore
	writesAfter, err := e.Writes.Settled(ctx, ns)
	if err != nil {
		return run, err
	}
	run.writes = map[string]int{}
	for r, n := range writesAfter {
		if d := n - writesBefore[r]; d > 0 {
			run.writes[r] = d
		}
	}
	if len(fs) > 0 {
		if err := e.checkSplit(ctx, ns, fs, splitN(o.N, len(fs))); err != nil {
			return run, err
		}
	}
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
	run.Took, run.First = o.Times(pw, start)
	return run, e.DeletePods(ctx, ns)
}

// ReleaseByBareClient creates the same batch with the baseline gate in a namespace
// that is not opted in, lists it, and times bareUngate from its first patch to the
// last pod's watch event.
func (e *Env) ReleaseByBareClient(ctx context.Context, o ReleaseOpts, workers int) (ReleaseRun, error) {
	var run ReleaseRun
	ns, err := e.NewNamespace(ctx, "release-bare", false)
	if err != nil {
		return run, err
	}
	pw, err := WatchPods(ctx, e.Client, ns, BaselineGate)
	if err != nil {
		return run, err
	}
	defer pw.Stop()
	if err := e.CreatePods(ctx, ns, o.spec("p", BaselineGate), 0, o.N); err != nil {
		return run, err
	}
	pods, err := listGated(ctx, e.Client, ns, o.N)
	if err != nil {
		return run, err
	}
	before := e.Meter.Sample()
	start := time.Now()
	if err := bareUngate(ctx, e.bare, pods, BaselineGate, workers); err != nil {
		return run, err
	}
	if err := pw.WaitFor(ctx, "the bare client's releases to be seen", o.Done); err != nil {
		return run, err
	}
	run.CPU = e.Meter.Since(before)
	run.Took, run.First = o.Times(pw, start)
	return run, e.DeletePods(ctx, ns)
}

// ReleaseRun is one release: how long it took, and the CPU seconds each process of the
// cluster and this process used meanwhile.
type ReleaseRun struct {
	Took time.Duration
	CPU  map[string]float64
	// events is how many events were written in the namespace meanwhile.
	events int
	// writes are the manager's writes to the namespace, by resource, from the first
	// pod's creation (its parking included) to the release's last write.
	writes map[string]int
	// First is the time to the first pod's event.
	First time.Duration
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
	// QuotagateWrites counts the manager's writes to the batch's namespace, by resource,
	// from parking to release, summed over the repetitions: ungate patches (pods), the
	// pods' condition of why they wait (pods/status), events.
	QuotagateWrites map[string]int `json:"quotagateWrites,omitempty"`
	// FirstQuotagate and FirstBaseline are the seconds to the first pod's event.
	FirstQuotagate []float64 `json:"quotagateFirstSeconds"`
	FirstBaseline  []float64 `json:"baselineFirstSeconds"`
	// UngateErrors sums quotagate_ungate_errors_total's growth, by reason.
	UngateErrors map[string]float64 `json:"ungateErrors,omitempty"`
	// EventlessQuotagate, a diagnostic, is quotagate with its event recorder dropping
	// every event, measured after the other repetitions.
	EventlessQuotagate    []float64          `json:"eventlessQuotagateSeconds,omitempty"`
	EventlessQuotagateCPU map[string]float64 `json:"eventlessQuotagateCPUSeconds,omitempty"`
	// Flavors is how many Flavors the flavored arm split quotagate's budget over (0: no
	// such arm). Its repetitions alternate with the plain arm's, measured the same way.
	Flavors              int                `json:"flavors,omitempty"`
	Flavored             []float64          `json:"flavoredSeconds,omitempty"`
	FlavoredCPU          map[string]float64 `json:"flavoredCPUSeconds,omitempty"`
	FlavoredEvents       int                `json:"flavoredEvents,omitempty"`
	FirstFlavored        []float64          `json:"flavoredFirstSeconds,omitempty"`
	FlavoredUngateErrors map[string]float64 `json:"flavoredUngateErrors,omitempty"`
}

// addFlavored adds a repetition of the flavored arm.
func (r *releaseResult) addFlavored(f ReleaseRun) {
	if r.FlavoredCPU == nil {
		r.FlavoredCPU = map[string]float64{}
	}
	r.Flavored = append(r.Flavored, f.Took.Seconds())
	r.FirstFlavored = append(r.FirstFlavored, f.First.Seconds())
	r.FlavoredEvents += f.events
	for name, s := range f.CPU {
		r.FlavoredCPU[name] += s
	}
	for reason, n := range f.ungateErrors {
		if r.FlavoredUngateErrors == nil {
			r.FlavoredUngateErrors = map[string]float64{}
		}
		r.FlavoredUngateErrors[reason] += n
	}
}

// measureRelease alternates quotagate, quotagate with its budget split over flavors
// Flavors (if flavors > 0) and the bare client for reps repetitions, so a change in the
// machine's load touches all alike; the first repetition of each quotagate arm is
// profiled. Then it swaps in a manager whose events are dropped for eventlessReps more
// repetitions, if any, and swaps back.
func (e *Env) measureRelease(ctx context.Context, o ReleaseOpts, reps, workers, flavors, eventlessReps int, logf func(string, ...any)) (releaseResult, error) {
	r := releaseResult{N: o.N, QuotagateCPU: map[string]float64{}, BaselineCPU: map[string]float64{}, Flavors: flavors}
	profile := o.CPUProfile
	for i := range reps {
		qo := o
		qo.CPUProfile = ""
		if i == 0 {
			qo.CPUProfile = profile
		}
		q, err := e.ReleaseByQuotagate(ctx, qo)
		if err != nil {
			return r, fmt.Errorf("quotagate, repetition %d: %w", i+1, err)
		}
		flavoredLog := ""
		if flavors > 0 {
			fo := qo
			fo.Flavors = flavors
			if fo.CPUProfile != "" {
				fo.CPUProfile = FlavoredProfile(fo.CPUProfile)
			}
			f, err := e.ReleaseByQuotagate(ctx, fo)
			if err != nil {
				return r, fmt.Errorf("quotagate with %d flavors, repetition %d: %w", flavors, i+1, err)
			}
			r.addFlavored(f)
			flavoredLog = fmt.Sprintf("  repetition %d: quotagate with %d flavors %.0f pods/s (first after %v, %d events, ungate errors %v), run between the two above", i+1, flavors,
				float64(o.N)/f.Took.Seconds(), f.First.Round(time.Millisecond), f.events, f.ungateErrors)
		}
		b, err := e.ReleaseByBareClient(ctx, o, workers)
		if err != nil {
			return r, fmt.Errorf("bare client, repetition %d: %w", i+1, err)
		}
		r.Quotagate = append(r.Quotagate, q.Took.Seconds())
		r.Baseline = append(r.Baseline, b.Took.Seconds())
		for name, s := range q.CPU {
			r.QuotagateCPU[name] += s
		}
		r.QuotagateEvents += q.events
		for res, n := range q.writes {
			if r.QuotagateWrites == nil {
				r.QuotagateWrites = map[string]int{}
			}
			r.QuotagateWrites[res] += n
		}
		r.FirstQuotagate = append(r.FirstQuotagate, q.First.Seconds())
		r.FirstBaseline = append(r.FirstBaseline, b.First.Seconds())
		for reason, n := range q.ungateErrors {
			if r.UngateErrors == nil {
				r.UngateErrors = map[string]float64{}
			}
			r.UngateErrors[reason] += n
		}
		for name, s := range b.CPU {
			r.BaselineCPU[name] += s
		}
		logf("  repetition %d: quotagate %.0f pods/s (first after %v, %d events, writes %v, ungate errors %v), bare client %.0f pods/s (first after %v)", i+1,
			float64(o.N)/q.Took.Seconds(), q.First.Round(time.Millisecond), q.events, q.writes, q.ungateErrors,
			float64(o.N)/b.Took.Seconds(), b.First.Round(time.Millisecond))
		if flavoredLog != "" {
			logf("%s", flavoredLog)
		}
	}
	if eventlessReps == 0 {
		return r, nil
	}
	settings := DefaultManagerSettings()
	if err := e.UseManager(ctx, settings, true); err != nil {
		return r, err
	}
	r.EventlessQuotagateCPU = map[string]float64{}
	for i := range eventlessReps {
		q, err := e.ReleaseByQuotagate(ctx, o)
		if err != nil {
			return r, fmt.Errorf("quotagate without events, repetition %d: %w", i+1, err)
		}
		r.EventlessQuotagate = append(r.EventlessQuotagate, q.Took.Seconds())
		for name, s := range q.CPU {
			r.EventlessQuotagateCPU[name] += s
		}
		logf("  repetition %d: quotagate with events dropped %.0f pods/s", i+1, float64(o.N)/q.Took.Seconds())
	}
	return r, e.UseManager(ctx, settings, false)
}

// FlavoredProfile is where the flavored arm's CPU profile goes, beside the plain one's.
func FlavoredProfile(path string) string {
	return strings.TrimSuffix(path, ".pprof") + "-flavors.pprof"
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
