package estimates

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/quotagate/quotagate/api/v1alpha1"
	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/bench/figures"
	"github.com/quotagate/quotagate/bench/report"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/visibility"
)

const (
	// pollInterval is how often the benchmark reads the budget's pendingpods.
	pollInterval = time.Second
	// drainTimeout bounds the wait, after the last Job is created, for every pod to end.
	drainTimeout = 10 * time.Minute
	// kindLabel carries a pod's kind.
	kindLabel = "bench.quotagate.io/kind"
)

// run is what one measurement saw.
type run struct {
	pods []Pod
	// queue is the budget's gated pods at each poll, polls how many polls answered,
	// pollErrors how many failed and lastError the last failure.
	queue      []int
	polls      int
	pollErrors int
	lastError  string
}

// measure runs the plan on a fresh local control plane with the manager in this
// process, and returns what it saw of each pod.
func measure(ctx context.Context, root string, o Options, plan []Arrival) (out run, err error) {
	dir, err := os.MkdirTemp("", "quotagate-bench-estimates-")
	if err != nil {
		return run{}, err
	}
	report.Logf("Starting the local control plane")
	e, err := figures.StartEnv(ctx, root, dir)
	if err != nil {
		return run{}, err
	}
	defer func() { err = errors.Join(err, e.StopManager(), e.Cluster.Stop(), os.RemoveAll(dir)) }()
	if err := e.UseManager(ctx, figures.DefaultManagerSettings(), false); err != nil {
		return run{}, err
	}
	ns, err := e.NewNamespace(ctx, "estimates", true)
	if err != nil {
		return run{}, err
	}
	if err := e.CreateBudget(ctx, ns, strconv.Itoa(o.slots)); err != nil {
		return run{}, err
	}
	pw, err := figures.WatchPods(ctx, e.Client, ns, v1alpha1.SchedulingGate)
	if err != nil {
		return run{}, err
	}
	defer pw.Stop()
	p := &poller{
		handler: e.Visibility(),
		path:    visibility.PendingPodsPath(quota.BudgetKey{Namespace: ns, Name: "budget"}),
		watch:   pw,
		slots:   o.slots,
		draw:    drawScaled(o.scale),
		rand:    rand.New(rand.NewPCG(o.seed, 0x6f7261636c65)), // "oracle"
		first:   map[string]*Sighting{},
		head:    map[string]*Sighting{},
	}
	// The manager has the budget before the first Job: its pods queue from the start.
	if err := figures.Poll(ctx, func(context.Context) (bool, error) { return p.poll() == nil, nil }); err != nil {
		return run{}, fmt.Errorf("waiting for the manager to serve the budget's pendingpods: %w", err)
	}
	pctx, stop := context.WithCancel(ctx)
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		p.run(pctx)
	}()
	defer func() {
		stop()
		<-polled
	}()

	report.Logf("Creating %d Jobs in %s at most", len(plan), plan[len(plan)-1].At.Round(time.Second))
	created, err := createJobs(ctx, e.Client, ns, plan, o.slots, pw)
	if err != nil {
		return run{}, err
	}
	report.Logf("Waiting for every pod to end")
	deadline := time.Now().Add(drainTimeout)
	for len(pw.Ended()) < len(plan) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return run{}, ctx.Err()
		case <-time.After(pollInterval):
		}
	}
	if n := len(pw.Ended()); n < len(plan) {
		report.Logf("  %d of %d pods ended within %s; the rest are reported as not started or not ended", n, len(plan), drainTimeout)
	}
	stop()
	<-polled
	pw.Mu.Lock()
	started := maps.Clone(pw.Ungated)
	pw.Mu.Unlock()
	out = run{queue: p.queue, polls: p.polls, pollErrors: p.errors, lastError: p.lastError}
	out.pods = assemble(created, started, pw.Ended(), p.first, p.head)
	return out, nil
}

// job is one created Job.
type job struct {
	name, kind string
	created    time.Time
}

// createJobs creates the plan's Jobs in turn, each its planned gap after the one
// before or as soon as fewer than floor pods wait, whichever comes first, and logs the
// progress. The floor keeps the Budget full and a queue in front of it, which
// exponential arrivals at the rate it admits do not (a walk at rate 1 drains as often
// as it grows).
func createJobs(ctx context.Context, c kubernetes.Interface, ns string, plan []Arrival, floor int, pw *figures.PodWatch) ([]job, error) {
	out := make([]job, 0, len(plan))
	admitted := func() int {
		pw.Mu.Lock()
		defer pw.Mu.Unlock()
		return len(pw.Ungated)
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last time.Time
	for i, a := range plan {
		if i > 0 {
			due := time.NewTimer(time.Until(last.Add(a.At - plan[i-1].At)))
		wait:
			for len(out)-admitted() >= floor {
				select {
				case <-ctx.Done():
					due.Stop()
					return nil, ctx.Err()
				case <-due.C:
					break wait
				case <-tick.C:
				}
			}
			due.Stop()
		}
		kind := Kinds[a.Kind].Name
		j, err := c.BatchV1().Jobs(ns).Create(ctx, jobOf(ns, kind, a.Run), metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("creating Job %d (%s): %w", i, kind, err)
		}
		last = time.Now()
		out = append(out, job{name: j.Name, kind: kind, created: last})
		if (i+1)%20 == 0 {
			report.Logf("  %d Jobs created, %d pods admitted, %d ended (load %s)", i+1, admitted(), len(pw.Ended()), report.LoadAverage())
		}
	}
	return out, nil
}

// jobOf is a Job of one pod of kind, gated by quotagate's gate, of 1 CPU, that kwok
// runs for run once it is Ready. Its name is generated from the kind's, so the Learner
// keys its pods by kind (estimate.KeysOf: a generated suffix is removed); kwok's create
// and ready stages are asked to take no time, so the pod runs from its admission plus
// the scheduler's binding.
func jobOf(ns, kind string, run time.Duration) *batchv1.Job {
	d := run.String()
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, GenerateName: kind + "-",
			Labels: map[string]string{figures.BenchLabel: "estimates", kindLabel: kind},
		},
		Spec: batchv1.JobSpec{
			Completions:  ptr.To[int32](1),
			Parallelism:  ptr.To[int32](1),
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels: map[string]string{figures.BenchLabel: "estimates", kindLabel: kind},
					Annotations: map[string]string{
						"pod-create.stage.kwok.x-k8s.io/delay":          "0s",
						"pod-create.stage.kwok.x-k8s.io/jitter-delay":   "0s",
						"pod-ready.stage.kwok.x-k8s.io/delay":           "0s",
						"pod-ready.stage.kwok.x-k8s.io/jitter-delay":    "0s",
						"pod-complete.stage.kwok.x-k8s.io/delay":        d,
						"pod-complete.stage.kwok.x-k8s.io/jitter-delay": d,
					},
				},
				Spec: corev1.PodSpec{
					RestartPolicy:                 corev1.RestartPolicyNever,
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					SchedulingGates:               []corev1.PodSchedulingGate{{Name: v1alpha1.SchedulingGate}},
					Containers: []corev1.Container{{
						Name: "c", Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU:    resource.MustParse("1"),
							corev1.ResourceMemory: resource.MustParse("1Mi"),
						}},
					}},
				},
			},
		},
	}
}

// poller reads the budget's pendingpods from the manager's visibility handler every
// pollInterval, and keeps each pod's first sighting with an estimate and its first at
// the head of the queue, each with the baseline's estimate at that moment.
type poller struct {
	handler http.Handler
	path    string
	watch   *figures.PodWatch
	slots   int
	// draw and rand draw the runs of the oracle (Oracle) from each kind's distribution.
	draw func(kind int, r *rand.Rand) time.Duration
	rand *rand.Rand

	first, head   map[string]*Sighting
	queue         []int
	polls, errors int
	lastError     string
}

func (p *poller) run(ctx context.Context) {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := p.poll(); err != nil {
			p.errors++
			p.lastError = err.Error()
		}
	}
}

// poll reads the whole queue once.
func (p *poller) poll() error {
	at := time.Now()
	req := httptest.NewRequest(http.MethodGet, p.path+"?limit="+strconv.Itoa(visv1.MaxLimit), nil)
	rec := httptest.NewRecorder()
	p.handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", p.path, rec.Code, strings.TrimSpace(rec.Body.String()))
	}
	var list visv1.PendingPodList
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		return fmt.Errorf("reading the pendingpods answer: %w", err)
	}
	p.polls++
	p.queue = append(p.queue, int(list.Total))
	p.watch.Mu.Lock()
	started := maps.Clone(p.watch.Ungated)
	p.watch.Mu.Unlock()
	ended := p.watch.Ended()
	mean := MeanRun(started, ended, at)
	oracle := p.oracle(list.Items, started, ended, at)
	for _, item := range list.Items {
		est := item.EstimatedStart
		if est == nil {
			continue // not estimated yet
		}
		s := &Sighting{At: at, Position: int(item.Position), Unknown: est.Unknown, Ends: est.Ends, Samples: est.Samples,
			Baseline: Baseline(at, int(item.Position), mean, p.slots)}
		if est.Median != nil {
			s.Quotagate = est.Median.Time
		}
		if o, ok := oracle[item.Name]; ok {
			s.Oracle = at.Add(o)
		}
		if p.first[item.Name] == nil {
			p.first[item.Name] = s
		}
		if item.Position == 1 && p.head[item.Name] == nil {
			p.head[item.Name] = s
		}
	}
	return nil
}

// oracle is Oracle's estimate of each listed pod's start (an offset from at), for the
// queue the list shows and the pods the watch shows ungated and not ended, each pod's
// kind read from its name (its Job's generateName is its kind's name); none when a pod
// of the queue has no kind.
func (p *poller) oracle(items []visv1.PendingPod, started, ended map[string]time.Time, at time.Time) map[string]time.Duration {
	var running []Holder
	for name, since := range started {
		if _, done := ended[name]; done {
			continue
		}
		if k, ok := kindOfPod(name); ok {
			running = append(running, Holder{Kind: k, Elapsed: max(at.Sub(since), 0)})
		}
	}
	queue := make([]int, 0, len(items))
	for _, item := range items {
		k, ok := kindOfPod(item.Name)
		if !ok {
			return nil
		}
		queue = append(queue, k)
	}
	starts := Oracle(running, queue, p.slots, oracleDraws, p.draw, p.rand)
	out := make(map[string]time.Duration, len(items))
	for i, item := range items {
		out[item.Name] = starts[i]
	}
	return out
}

// kindOfPod is the index in Kinds of a pod's kind: its name up to the first "-".
func kindOfPod(pod string) (int, bool) {
	name, _, _ := strings.Cut(pod, "-")
	i := slices.IndexFunc(Kinds, func(k Kind) bool { return k.Name == name })
	return i, i >= 0
}

// drawScaled draws a run of Kinds[kind] times scale, as Plan does.
func drawScaled(scale float64) func(int, *rand.Rand) time.Duration {
	return func(kind int, r *rand.Rand) time.Duration {
		return time.Duration(Kinds[kind].draw(r) * scale * float64(time.Second))
	}
}

// assemble joins what was seen of each Job's pod: a pod's Job is its name without the
// suffix the Job controller added.
func assemble(jobs []job, started, ended map[string]time.Time, first, head map[string]*Sighting) []Pod {
	byJob := map[string]string{}
	for _, m := range []map[string]time.Time{started, ended} {
		for name := range m {
			byJob[jobOfPod(name)] = name
		}
	}
	for _, m := range []map[string]*Sighting{first, head} {
		for name := range m {
			byJob[jobOfPod(name)] = name
		}
	}
	out := make([]Pod, 0, len(jobs))
	for _, j := range jobs {
		name := byJob[j.name]
		out = append(out, Pod{
			Name: name, Kind: j.kind, Created: j.created,
			Started: started[name], Ended: ended[name],
			First: first[name], Head: head[name],
		})
	}
	return out
}

// jobOfPod is the name of the Job a pod of a Job belongs to: the pod's name without
// its last "-" and what follows.
func jobOfPod(pod string) string {
	if i := strings.LastIndexByte(pod, '-'); i > 0 {
		return pod[:i]
	}
	return pod
}
