package estimates

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/bench/figures"
	"github.com/quotagate/quotagate/bench/report"
	"github.com/quotagate/quotagate/pkg/quota"
)

const (
	// pollInterval is how often the benchmark reads the budgets' pendingpods.
	pollInterval = time.Second
	// drainTimeout bounds the wait, after the last Job is created, for every pod to end.
	drainTimeout = 10 * time.Minute
	// kindLabel carries a pod's kind.
	kindLabel = "bench.quotagate.io/kind"
	// familyName is the ClusterBudget a workload's budgets borrow under.
	familyName = "family"
)

// priorityClasses are the PriorityClasses of the workloads' pods, by value.
var priorityClasses = map[int32]string{Low: "bench-low", High: "bench-high"}

// run is what one measurement saw.
type run struct {
	pods []Pod
	// queue is the budgets' gated pods at each poll, polls how many polls answered,
	// pollErrors how many failed and lastError the last failure.
	queue      []int
	polls      int
	pollErrors int
	lastError  string
	records    []TrackRecord
}

// watches are the pod watches of a workload's namespaces; pods are named
// "namespace/name" in what they return.
type watches map[string]*figures.PodWatch

func (ws watches) ungated() map[string]time.Time {
	out := map[string]time.Time{}
	for ns, pw := range ws {
		pw.Mu.Lock()
		for name, at := range pw.Ungated {
			out[ns+"/"+name] = at
		}
		pw.Mu.Unlock()
	}
	return out
}

func (ws watches) ended() map[string]time.Time {
	out := map[string]time.Time{}
	for ns, pw := range ws {
		for name, at := range pw.Ended() {
			out[ns+"/"+name] = at
		}
	}
	return out
}

func (ws watches) stop() {
	for _, pw := range ws {
		pw.Stop()
	}
}

// measure runs the plan of w on a fresh local control plane with the manager in this
// process, and returns what it saw of each pod.
func measure(ctx context.Context, root string, o Options, w Workload, plan []Arrival) (out run, err error) {
	dir, err := os.MkdirTemp("", "quotagate-bench-estimates-")
	if err != nil {
		return run{}, err
	}
	report.Logf("%s: starting the local control plane", w.Name)
	e, err := figures.StartEnv(ctx, root, dir)
	if err != nil {
		return run{}, err
	}
	defer func() { err = errors.Join(err, e.StopManager(), e.Cluster.Stop(), os.RemoveAll(dir)) }()
	settings := figures.DefaultManagerSettings()
	settings.EstimateInterval = o.interval
	if err := e.UseManager(ctx, settings, false); err != nil {
		return run{}, err
	}
	for value, name := range priorityClasses {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
		if err := e.Admin.Create(ctx, pc); err != nil {
			return run{}, fmt.Errorf("creating PriorityClass %s: %w", name, err)
		}
	}
	b, err := createBudgets(ctx, e, w)
	if err != nil {
		return run{}, err
	}
	ws := watches{}
	defer ws.stop()
	for _, ns := range b.namespaces {
		pw, err := figures.WatchPods(ctx, e.Client, ns, v1alpha1.SchedulingGate)
		if err != nil {
			return run{}, err
		}
		ws[ns] = pw
	}
	p := &poller{
		handler:  e.Visibility(),
		client:   e.Client,
		workload: w,
		budgets:  b,
		watch:    ws,
		draw:     drawScaled(w.Kinds, o.scale),
		rand:     rand.New(rand.NewPCG(o.seed, 0x6f7261636c65)), // "oracle"
		first:    map[string]*Sighting{},
		head:     map[string]*Sighting{},
	}
	// The manager has the budgets before the first Job: their pods queue from the start.
	if err := figures.Poll(ctx, func(ctx context.Context) (bool, error) { return p.poll(ctx) == nil, nil }); err != nil {
		return run{}, fmt.Errorf("waiting for the manager to serve the budgets' pendingpods: %w", err)
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

	report.Logf("%s: creating %d Jobs in %s at most", w.Name, len(plan), plan[len(plan)-1].At.Round(time.Second))
	created, err := createJobs(ctx, e.Client, w, b, plan, ws)
	if err != nil {
		return run{}, err
	}
	report.Logf("%s: waiting for every pod to end", w.Name)
	deadline := time.Now().Add(drainTimeout)
	for len(ws.ended()) < len(plan) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return run{}, ctx.Err()
		case <-time.After(pollInterval):
		}
	}
	if n := len(ws.ended()); n < len(plan) {
		report.Logf("  %d of %d pods ended within %s; the rest are reported as not started or not ended", n, len(plan), drainTimeout)
	}
	stop()
	<-polled
	out = run{queue: p.queue, polls: p.polls, pollErrors: p.errors, lastError: p.lastError}
	out.pods = assemble(created, ws.ungated(), ws.ended(), p.first, p.head)
	out.records, err = trackRecords(e, b)
	return out, err
}

// budgetsOf is what createBudgets made: each budget's namespace and key, in the order
// of the workload's, and the core's view of every budget (the parent's too), for the
// oracle.
type budgetsOf struct {
	namespaces []string
	keys       []quota.BudgetKey
	core       []quota.Budget
	labels     map[string]map[string]string
}

// createBudgets creates a namespace and a Budget for each of w's, of requests.cpu its
// slots, and, for a family, their parent ClusterBudget: each child may then borrow its
// Borrow more, and reclaims nothing (a reclaimed pod would fail its Job: lent quota
// comes back as the borrowing pods end).
func createBudgets(ctx context.Context, e *figures.Env, w Workload) (budgetsOf, error) {
	out := budgetsOf{labels: map[string]map[string]string{}}
	if w.Family > 0 {
		cb := &v1alpha1.ClusterBudget{
			ObjectMeta: metav1.ObjectMeta{Name: familyName},
			Spec: v1alpha1.ClusterBudgetSpec{BudgetSpec: v1alpha1.BudgetSpec{
				Hard: corev1.ResourceList{"requests.cpu": *resource.NewQuantity(int64(w.Family), resource.DecimalSI)},
			}},
		}
		if err := e.Admin.Create(ctx, cb); err != nil {
			return out, fmt.Errorf("creating ClusterBudget %s: %w", familyName, err)
		}
		out.core = append(out.core, quota.ClusterBudgetFromAPI(cb))
	}
	for _, spec := range w.Budgets {
		ns, err := e.NewNamespace(ctx, w.Name+"-"+spec.Name, true)
		if err != nil {
			return out, err
		}
		b := &v1alpha1.Budget{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: spec.Name},
			Spec: v1alpha1.BudgetSpec{
				Hard: corev1.ResourceList{"requests.cpu": *resource.NewQuantity(int64(spec.Slots), resource.DecimalSI)},
			},
		}
		if w.Family > 0 {
			b.Spec.Parent = familyName
			b.Spec.Preemption = &v1alpha1.Preemption{Reclaim: v1alpha1.ReclaimNever}
			if spec.Borrow > 0 {
				b.Spec.BorrowingLimit = corev1.ResourceList{"requests.cpu": *resource.NewQuantity(int64(spec.Borrow), resource.DecimalSI)}
			}
		}
		if err := e.Admin.Create(ctx, b); err != nil {
			return out, fmt.Errorf("creating Budget %s/%s: %w", ns, spec.Name, err)
		}
		out.namespaces = append(out.namespaces, ns)
		out.keys = append(out.keys, quota.BudgetKey{Namespace: ns, Name: spec.Name})
		out.core = append(out.core, quota.BudgetFromAPI(b))
		out.labels[ns] = map[string]string{v1alpha1.EnabledLabel: "true"}
	}
	return out, nil
}

// job is one created Job.
type job struct {
	namespace, name, kind string
	priority              int32
	created               time.Time
}

// createJobs creates the plan's Jobs in turn, each its planned gap after the one
// before or as soon as fewer than the workload's slots pods wait, whichever comes
// first, and logs the progress. The floor keeps the budgets full and a queue in front
// of them, which exponential arrivals at the rate they admit do not (a walk at rate 1
// drains as often as it grows).
func createJobs(ctx context.Context, c kubernetes.Interface, w Workload, b budgetsOf, plan []Arrival, ws watches) ([]job, error) {
	out := make([]job, 0, len(plan))
	floor := w.slots()
	admitted := func() int { return len(ws.ungated()) }
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
		kind, ns := w.Kinds[a.Kind].Name, b.namespaces[a.Budget]
		j, err := c.BatchV1().Jobs(ns).Create(ctx, jobOf(ns, kind, a.Priority, a.Run), metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("creating Job %d (%s): %w", i, kind, err)
		}
		last = time.Now()
		out = append(out, job{namespace: ns, name: j.Name, kind: kind, priority: a.Priority, created: last})
		if (i+1)%20 == 0 {
			report.Logf("  %d Jobs created, %d pods admitted, %d ended (load %s)", i+1, admitted(), len(ws.ended()), report.LoadAverage())
		}
	}
	return out, nil
}

// jobOf is a Job of one pod of kind at priority, gated by quotagate's gate, of 1 CPU,
// that kwok runs for run once it is Ready. Its name is generated from the kind's, so
// the Learner keys its pods by kind (estimate.KeysOf: a generated suffix is removed);
// kwok's create and ready stages are asked to take no time, so the pod runs from its
// admission plus the scheduler's binding.
func jobOf(ns, kind string, priority int32, run time.Duration) *batchv1.Job {
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
					PriorityClassName:             priorityClasses[priority],
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

// assemble joins what was seen of each Job's pod (pods named "namespace/name"): a
// pod's Job is its name without the suffix the Job controller added.
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
		name := byJob[j.namespace+"/"+j.name]
		out = append(out, Pod{
			Name: name, Kind: j.kind, Priority: j.priority, Created: j.created,
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
