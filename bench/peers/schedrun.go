package peers

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/quotagate/quotagate/bench/figures"
	"github.com/quotagate/quotagate/bench/report"
)

// schedRunLabel marks the pods of one system's run of the scenario (its value: the
// system), so the run's watch sees only them.
const schedRunLabel = "bench.quotagate.io/sched-run"

// schedSystem is how one system takes part in the scenario.
type schedSystem struct {
	name string
	// gate is the gate whose removal admits a pod.
	gate string
	// manager is its manager's name in the CPU meter.
	manager string
	// namespace creates the namespace of queue q.
	namespace func(ctx context.Context, q schedQueue) (string, error)
	// quotas creates the plan's quotas, given each queue's namespace, and returns once
	// they are in force.
	quotas func(ctx context.Context, p schedPlan, ns map[string]string) error
	// pod adds to a scenario pod what the system needs of it.
	pod func(pod *corev1.Pod, w schedWorkload)
}

// schedResult is one system's run of the scenario (or the ideal replay's, which has only
// the wall time and the classes).
type schedResult struct {
	WallSeconds float64               `json:"wallSeconds"`
	Classes     map[string]schedClass `json:"timeToAdmission"`
	// Writes are the API server's writes during the run that the bench did not make (the
	// manager's: ungates, events, status, Kueue's Workloads and finalizers), by resource;
	// nodes and leases (the control plane's heartbeats) are left out.
	Writes       map[string]float64 `json:"writes,omitempty"`
	AdmittedPods int                `json:"admittedPods,omitempty"`
	// CPU is each process's CPU seconds during the run.
	CPU map[string]float64 `json:"cpuSeconds,omitempty"`
	// Violations counts the watch events after which a queue or cohort used more than its
	// quota; OverMilli is the largest excess seen.
	Violations int   `json:"violations"`
	OverMilli  int64 `json:"overMillicores"`
	// Lost counts pods deleted before they ended; CreateLagMillis is how late the bench's
	// latest create call started against the plan's schedule.
	Lost            int     `json:"lostPods"`
	CreateLagMillis float64 `json:"createLagMillis"`
	// AsArrived are the replays (the ideal, and quotagate's policy) of the workloads
	// created when this run's watch saw each created, not when the plan says: the bench's
	// creators fall behind their schedule on a busy machine, and the pods then arrive in
	// bursts the plan has not. Set by a run, not by a replay.
	AsArrived *arrivedReplays `json:"asArrived,omitempty"`
}

// arrivedReplays are the replays at a run's own arrivals.
type arrivedReplays struct {
	Ideal  schedResult `json:"ideal"`
	Policy schedResult `json:"quotagatePolicy"`
}

// asArrived is the plan with each workload created when a run saw it (seen, against the
// run's start; a workload never seen keeps its planned time).
func (p schedPlan) asArrived(seen []time.Time, start time.Time) schedPlan {
	out := p
	out.Workloads = slices.Clone(p.Workloads)
	for i := range out.Workloads {
		if !seen[i].IsZero() {
			out.Workloads[i].At = max(0, seen[i].Sub(start))
		}
	}
	return out
}

// replayAsArrived replays the plan at a run's own arrivals, through the ideal and
// through quotagate's core.
func replayAsArrived(p schedPlan, seen []time.Time, start time.Time) (*arrivedReplays, error) {
	ap := p.asArrived(seen, start)
	policy, err := policyResult(ap)
	if err != nil {
		return nil, err
	}
	return &arrivedReplays{Ideal: idealResult(ap), Policy: policy}, nil
}

// schedClass is the time to admission of one class of workloads, in seconds: from the
// watch event of its creation (or the plan's creation time, in the ideal replay) to the
// one of the last pod's ungate.
type schedClass struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	Max  float64 `json:"max"`
}

func summarizeClass(seconds []float64) schedClass {
	if len(seconds) == 0 {
		return schedClass{}
	}
	s := slices.Clone(seconds)
	slices.Sort(s)
	var sum float64
	for _, v := range s {
		sum += v
	}
	return schedClass{N: len(s), Mean: sum / float64(len(s)), P50: report.Percentile(s, 50), P90: report.Percentile(s, 90), Max: s[len(s)-1]}
}

// classesOf summarizes the per-workload times of admission by class.
func classesOf(p schedPlan, seconds []float64) map[string]schedClass {
	by := map[string][]float64{}
	for i, w := range p.Workloads {
		by[w.Class] = append(by[w.Class], seconds[i])
	}
	out := map[string]schedClass{}
	for c, s := range by {
		out[c] = summarizeClass(s)
	}
	return out
}

// idealResult is the ideal replay as a schedResult.
func idealResult(p schedPlan) schedResult {
	admitted, wall := idealReplay(p)
	secs := make([]float64, len(p.Workloads))
	for i, w := range p.Workloads {
		secs[i] = (admitted[i] - w.At).Seconds()
	}
	return schedResult{WallSeconds: wall.Seconds(), Classes: classesOf(p, secs)}
}

// runSched runs the plan on sys: the queues and quotas, then every workload created on
// the plan's schedule by one creator per workload set (as Kueue's generator runs one
// goroutine per set), each admitted pod marked Succeeded once its workload's runtime has
// passed since the watch saw it admitted (as Kueue's runner finishes its Workloads). The
// pods carry the hold gate, so none is scheduled: what is measured is admission.
func (e *env) runSched(ctx context.Context, p schedPlan, sys schedSystem) (res schedResult, err error) {
	nsOf := map[string]string{}
	for _, q := range p.Queues {
		if nsOf[q.Name], err = sys.namespace(ctx, q); err != nil {
			return res, err
		}
	}
	if err := sys.quotas(ctx, p, nsOf); err != nil {
		return res, err
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var created, patched atomic.Int64 // the bench's own writes: pod creates and status patches
	errs := make(chan error, 1)
	fail := func(err error) {
		select {
		case errs <- err:
		default:
		}
		cancel()
	}
	var finishers sync.WaitGroup
	finish := func(w int) {
		wl := p.Workloads[w]
		finishers.Go(func() {
			select {
			case <-time.After(wl.Runtime):
			case <-ctx.Done():
				return
			}
			for i := range wl.Pods {
				name := schedPod(wl, nsOf[wl.Queue], i).Name
				_, err := e.Client.CoreV1().Pods(nsOf[wl.Queue]).Patch(ctx, name, types.MergePatchType,
					[]byte(`{"status":{"phase":"Succeeded"}}`), metav1.PatchOptions{}, "status")
				patched.Add(1)
				if err != nil && ctx.Err() == nil {
					fail(fmt.Errorf("marking %s/%s Succeeded: %w", nsOf[wl.Queue], name, err))
				}
			}
		})
	}
	sw := newSchedWatch(p, sys.gate, finish)
	watchDone, err := e.watchSched(ctx, sys.name, sw, fail)
	if err != nil {
		return res, err
	}
	writesBefore, err := e.apiWrites(ctx)
	if err != nil {
		return res, err
	}
	cpuBefore := e.Meter.Sample()
	var lag atomic.Int64
	start := time.Now()
	var creators sync.WaitGroup
	for _, ws := range p.bySet() {
		creators.Go(func() {
			for _, w := range ws {
				wl := p.Workloads[w]
				select {
				case <-time.After(time.Until(start.Add(wl.At))):
				case <-ctx.Done():
					return
				}
				late := int64(time.Since(start.Add(wl.At)))
				for old := lag.Load(); late > old && !lag.CompareAndSwap(old, late); old = lag.Load() {
				}
				for i := range wl.Pods {
					pod := schedPod(wl, nsOf[wl.Queue], i)
					pod.Labels[schedRunLabel] = sys.name
					pod.Labels[schedWorkloadLabel] = strconv.Itoa(w)
					sys.pod(pod, wl)
					_, err := e.Client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
					created.Add(1)
					if err != nil {
						fail(fmt.Errorf("creating %s/%s: %w", pod.Namespace, pod.Name, err))
						return
					}
				}
			}
		})
	}
	var last time.Duration
	for _, w := range p.Workloads {
		last = max(last, w.At)
	}
	select {
	case <-sw.done:
	case err := <-errs:
		creators.Wait()
		return res, err
	case <-time.After(last + schedGrace(len(p.Workloads))):
		cancel()
		return res, fmt.Errorf("%s: the scenario did not end within %v of its last create", sys.name, schedGrace(len(p.Workloads)))
	}
	creators.Wait()
	finishers.Wait()
	// The managers still write after the last pod ended (Kueue finishes its Workloads
	// and drops its finalizers): those writes are the run's too.
	writesAfter, err := e.settledWrites(ctx)
	if err != nil {
		return res, err
	}
	res.CPU = e.Meter.Since(cpuBefore)
	res.Writes = map[string]float64{}
	for r, n := range writesAfter {
		if d := n - writesBefore[r]; d > 0 {
			res.Writes[r] = d
		}
	}
	res.Writes["pods"] -= float64(created.Load())
	res.Writes["pods/status"] -= float64(patched.Load())
	cancel()
	<-watchDone
	sw.mu.Lock()
	defer sw.mu.Unlock()
	secs := make([]float64, len(p.Workloads))
	for i := range p.Workloads {
		secs[i] = sw.admittedAt[i].Sub(sw.seenAt[i]).Seconds()
		res.AdmittedPods += p.Workloads[i].Pods
	}
	res.WallSeconds = sw.lastEnd.Sub(start).Seconds()
	res.Classes = classesOf(p, secs)
	res.Violations, res.OverMilli, res.Lost = sw.violations, sw.over, sw.lost
	res.CreateLagMillis = float64(lag.Load()) / float64(time.Millisecond)
	if res.AsArrived, err = replayAsArrived(p, sw.seenAt, start); err != nil {
		return res, fmt.Errorf("replaying %s's arrivals: %w", sys.name, err)
	}
	report.Logf("  %s: wall %.1f s, %s; %.1f writes per admitted pod; %d events over quota; latest create %.0f ms behind schedule",
		sys.name, res.WallSeconds, res.classesText(p.classes()), res.writesPerPod(), res.Violations, res.CreateLagMillis)
	// The next manager would cache these pods too: they go before it starts.
	for _, ns := range nsOf {
		if err := e.DeletePods(parent, ns); err != nil {
			return res, err
		}
	}
	return res, nil
}

// classesText is the mean time to admission of each class, for the progress log.
func (r schedResult) classesText(classes []string) string {
	parts := make([]string, len(classes))
	for i, c := range classes {
		parts[i] = fmt.Sprintf("%s %.2f s", c, r.Classes[c].Mean)
	}
	return "mean time to admission " + strings.Join(parts, ", ")
}

// schedGrace is how long after its last create a run may take to end: 10 minutes,
// and 250 ms per workload (Kueue admitted some 7 plain pods a second of this scenario on a
// busy machine, so the full size takes it tens of minutes).
func schedGrace(workloads int) time.Duration {
	return 10*time.Minute + time.Duration(workloads)*250*time.Millisecond
}

// bySet is the plan's workloads by workload set, each set in creation order.
func (p schedPlan) bySet() [][]int {
	out := make([][]int, p.Sets)
	for i, w := range p.Workloads {
		out[w.Set] = append(out[w.Set], i)
	}
	return out
}

// schedPod is pod i of workload w in ns, without the system's labels.
func schedPod(w schedWorkload, ns string, i int) *corev1.Pod {
	spec := figures.PodSpec{Prefix: w.Name, CPU: fmt.Sprintf("%dm", w.CPUMilli), Gates: []string{figures.HoldGate}}
	pod := spec.Pod(ns, i)
	pod.Spec.PriorityClassName = schedPriorityClass(w.Priority)
	return pod
}

func schedPriorityClass(p int32) string { return fmt.Sprintf("bench-sched-%d", p) }

// watchSched feeds sw every event of the run's pods in all namespaces until ctx ends;
// the returned channel is closed then.
func (e *env) watchSched(ctx context.Context, system string, sw *schedWatch, fail func(error)) (<-chan struct{}, error) {
	sel := schedRunLabel + "=" + system
	pods := e.Client.CoreV1().Pods(metav1.NamespaceAll)
	l, err := pods.List(ctx, metav1.ListOptions{LabelSelector: sel, Limit: 1})
	if err != nil {
		return nil, fmt.Errorf("listing the scenario's pods: %w", err)
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, l.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			return pods.Watch(ctx, o)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("watching the scenario's pods: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				at := time.Now()
				pod, isPod := ev.Object.(*corev1.Pod)
				if !isPod {
					if ev.Type == watch.Error {
						fail(fmt.Errorf("the scenario's watch: %v", ev.Object))
						return
					}
					continue
				}
				if err := sw.observe(ev.Type, pod, at); err != nil {
					fail(err)
					return
				}
			}
		}
	}()
	return done, nil
}

// writesPerPod is the run's writes not made by the bench, per admitted pod.
func (r schedResult) writesPerPod() float64 {
	var sum float64
	for _, n := range r.Writes {
		sum += n
	}
	return report.Ratio(sum, float64(r.AdmittedPods))
}
