package figures

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/bench/report"
)

// Figure 7, create → ungate: pods created one at a time in an opted-in namespace whose
// Budget has room; each sample is the time from the create call's return to the
// arrival, on a watch in this process, of the event that shows the pod without the
// gate. Baseline: a bare watcher in this process that removes its own gate with the
// same JSON patch as soon as its watch shows a gated pod. Both are measured on an idle
// cluster and while a backlog of pods, ungated just before, binds through
// kube-scheduler to the kwok nodes. The two arms alternate pod by pod in one series
// (createToUngatePaired), so that they meet the same load.

// AdmissionMode is how the gate gets on new pods of opted-in namespaces: the webhook,
// or the MutatingAdmissionPolicy in the API server. register puts it in place for ns
// and returns once new pods of ns come back gated; undo takes it out again.
type AdmissionMode struct {
	Name     string
	Register func(ctx context.Context, e *Env, ns string) (undo func() error, err error)
}

// admissionModes are the modes figure 7 measures, in order.
func admissionModes() []AdmissionMode {
	return []AdmissionMode{WebhookMode(), PolicyMode()}
}

// PolicyMode creates the shipped gate policy (registerPolicy), as admission.mode policy
// does: no webhook round trip.
func PolicyMode() AdmissionMode {
	return AdmissionMode{Name: "policy", Register: func(ctx context.Context, e *Env, ns string) (func() error, error) {
		undo, err := e.registerPolicy(ctx, ns)
		if err != nil {
			return nil, err
		}
		return func() error { return undo(ctx) }, nil
	}}
}

// WebhookMode registers the shipped webhook configuration, served in this process
// (startWebhook).
func WebhookMode() AdmissionMode {
	return AdmissionMode{Name: "webhook", Register: func(ctx context.Context, e *Env, ns string) (func() error, error) {
		stop, _, err := e.startWebhook(ctx, ns)
		if err != nil {
			return nil, err
		}
		return func() error {
			defer stop()
			return e.unregisterWebhook(ctx, ns)
		}, nil
	}}
}

// ungateResult is figure 7: per admission mode and load, the samples of quotagate and
// of the bare watcher, in milliseconds.
type ungateResult struct {
	N       int `json:"n"`
	Backlog int `json:"backlog"`
	// Reps is how many times each series ran (each with a backlog of its own, when
	// loaded), its samples pooled; 0 in reports written before it was counted (one).
	Reps   int           `json:"reps,omitempty"`
	Series []ungateSerie `json:"series"`
}

type ungateSerie struct {
	Mode string `json:"mode"`
	// Load is "idle" or "backlog".
	Load      string    `json:"load"`
	Quotagate []float64 `json:"quotagateMillis"`
	Baseline  []float64 `json:"baselineMillis"`
	// BaselineAllPods is a third arm, a diagnostic: the bare watcher again, but
	// watching every pod of the cluster as the manager must (pods of every namespace
	// count against the budgets that cover them), and picking its own namespace's out.
	// Its watch stream carries the backlog's events too.
	BaselineAllPods []float64 `json:"baselineAllPodsMillis,omitempty"`
	// BacklogBound is how long after its ungate began the backlog took to bind
	// entirely, one value per repetition: the measured creates of both arms overlap it
	// when they end sooner. (Reports written before the arms were paired have one value
	// per arm, and Reps 0.)
	BacklogBound []float64 `json:"backlogBoundMillis,omitempty"`
	// ManagerWaitMillis is the mean of the manager's own part of the quotagate samples:
	// quotagate_pod_wait_seconds, from the manager's first sight of a pod to its ungate
	// patch being sent. The rest is the API server: the create's watch delivery to the
	// manager, the patch, and the ungate's watch delivery to the benchmark.
	ManagerWaitMillis float64 `json:"managerWaitMillis"`
}

// measureCreateToUngate runs figure 7 with the running manager: for every admission
// mode, idle then with a backlog, quotagate then the bare watcher.
func (e *Env) measureCreateToUngate(ctx context.Context, n, backlog, reps int, logf func(string, ...any)) (ungateResult, error) {
	r := ungateResult{N: n, Backlog: backlog, Reps: reps}
	for _, m := range admissionModes() {
		for _, load := range []int{0, backlog} {
			s := ungateSerie{Mode: m.Name, Load: "idle"}
			if load > 0 {
				s.Load = "backlog"
			}
			logf("Figure 7: create → ungate, %s, %s", m.Name, s.Load)
			sumBefore, countBefore, err := podWaitTotals()
			if err != nil {
				return r, err
			}
			var q, b, ball, bounds []time.Duration
			for range reps {
				bound, err := e.withBacklog(ctx, load, func() error {
					arms, err := e.createToUngatePaired(ctx, m, n)
					q, b, ball = append(q, arms[0]...), append(b, arms[1]...), append(ball, arms[2]...)
					return err
				})
				if err != nil {
					return r, fmt.Errorf("%s, %s: %w", m.Name, s.Load, err)
				}
				bounds = append(bounds, bound)
			}
			sum, count, err := podWaitTotals()
			if err != nil {
				return r, err
			}
			s.ManagerWaitMillis = report.Ratio((sum-sumBefore)*1000, count-countBefore)
			s.Quotagate, s.Baseline, s.BaselineAllPods = report.Millis(q), report.Millis(b), report.Millis(ball)
			if load > 0 {
				s.BacklogBound = report.Millis(bounds)
			}
			r.Series = append(r.Series, s)
		}
	}
	return r, nil
}

// withBacklog creates backlog gated pods in a namespace of their own, ungates them all
// with the bare client, and runs measure while they bind; it returns how long after
// the ungate began every backlog pod was bound, then deletes them.
func (e *Env) withBacklog(ctx context.Context, backlog int, measure func() error) (time.Duration, error) {
	if backlog == 0 {
		return 0, measure()
	}
	ns, err := e.NewNamespace(ctx, "backlog", false)
	if err != nil {
		return 0, err
	}
	if err := e.CreatePods(ctx, ns, PodSpec{Prefix: "b", CPU: "10m", Gates: []string{BaselineGate}}, 0, backlog); err != nil {
		return 0, err
	}
	pods, err := listGated(ctx, e.Client, ns, backlog)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	ungated := make(chan error, 1)
	go func() { ungated <- bareUngate(ctx, e.bare, pods, BaselineGate, createWorkers) }()
	err = measure()
	if uerr := <-ungated; err == nil && uerr != nil {
		err = fmt.Errorf("ungating the backlog: %w", uerr)
	}
	if err != nil {
		return 0, err
	}
	err = Poll(ctx, func(ctx context.Context) (bool, error) {
		l, err := e.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName="})
		return err == nil && len(l.Items) == 0, nil
	})
	if err != nil {
		return 0, fmt.Errorf("waiting for the backlog to bind: %w", err)
	}
	bound := time.Since(start)
	// Deleting a large backlog on a busy machine may outlast one request: try again.
	for try := 1; ; try++ {
		err := e.DeletePods(ctx, ns)
		if err == nil || try == 3 {
			return bound, err
		}
	}
}

// createToUngatePaired measures quotagate and the bare watchers side by side: pods are
// created one at a time, in turn in quotagate's namespace (an opted-in namespace whose
// Budget has room, the admission mode registered), in the bare watcher's (pods created
// with the baseline gate, which a watch of that namespace in this process removes as
// soon as it shows a gated pod) and in the namespace of the bare watcher of every pod
// (the same, watching the whole cluster), which of them goes first rotating too. All
// arms so see the same moments of the backlog and of the machine's load, and the
// difference of their percentiles is quotagate's. It returns the samples of the three
// arms in that order.
func (e *Env) createToUngatePaired(ctx context.Context, m AdmissionMode, n int) (_ [3][]time.Duration, err error) {
	var out [3][]time.Duration
	qns, err := e.NewNamespace(ctx, "ungate-qg", true)
	if err != nil {
		return out, err
	}
	if err := e.CreateBudget(ctx, qns, "1000"); err != nil {
		return out, err
	}
	undo, err := m.Register(ctx, e, qns)
	if err != nil {
		return out, err
	}
	defer func() {
		if uerr := undo(); err == nil {
			err = uerr
		}
	}()
	qt, err := e.NewCreateTimer(ctx, qns, v1alpha1.SchedulingGate, []string{HoldGate})
	if err != nil {
		return out, err
	}
	defer qt.Watch.Stop()
	timers := []*CreateTimer{qt}
	// The bare watchers report their first error once stopped: into the named result,
	// which the loop's own err variables would shadow.
	var watchers []<-chan error
	wctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		for _, w := range watchers {
			if werr := <-w; err == nil {
				err = werr
			}
		}
	}()
	for _, allPods := range []bool{false, true} {
		what := "ungate-bare"
		if allPods {
			what = "ungate-bare-all"
		}
		ns, err := e.NewNamespace(ctx, what, false)
		if err != nil {
			return out, err
		}
		watcher, err := e.StartBareWatcher(wctx, ns, allPods)
		if err != nil {
			return out, err
		}
		watchers = append(watchers, watcher)
		t, err := e.NewCreateTimer(ctx, ns, BaselineGate, []string{BaselineGate, HoldGate})
		if err != nil {
			return out, err
		}
		defer t.Watch.Stop()
		timers = append(timers, t)
	}
	arms, err := e.TakeTurns(ctx, timers, n)
	if err != nil {
		return out, err
	}
	copy(out[:], arms)
	return out, nil
}

// TakeTurns creates n pods with each timer, one at a time, the timers taking turns
// (which goes first rotates), so that all meet the same moments of the machine; then it
// deletes every timer's pods. It returns each timer's times, in the timers' order.
func (e *Env) TakeTurns(ctx context.Context, timers []*CreateTimer, n int) ([][]time.Duration, error) {
	out := make([][]time.Duration, len(timers))
	for i := range n {
		for k := range timers {
			if err := e.pause(ctx); err != nil {
				return nil, err
			}
			a := (i + k) % len(timers)
			d, err := timers[a].createAndTime(ctx, i)
			if err != nil {
				return nil, err
			}
			out[a] = append(out[a], d)
		}
	}
	for _, t := range timers {
		if err := e.DeletePods(ctx, t.NS); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// CreateTimer creates pods in one namespace (each with gates, plus whatever admission
// adds) and times, for each, from its create call's return (with fromCall, from the
// call itself) to the arrival of the watch event that shows it without gate.
type CreateTimer struct {
	Env      *Env
	NS       string
	Gate     string
	Spec     PodSpec
	Watch    *PodWatch
	FromCall bool
}

func (e *Env) NewCreateTimer(ctx context.Context, ns, gate string, gates []string) (*CreateTimer, error) {
	pw, err := WatchPods(ctx, e.Client, ns, gate)
	if err != nil {
		return nil, err
	}
	return &CreateTimer{Env: e, NS: ns, Gate: gate, Spec: PodSpec{Prefix: "u", CPU: "10m", Gates: gates}, Watch: pw}, nil
}

func (t *CreateTimer) createAndTime(ctx context.Context, i int) (time.Duration, error) {
	called := time.Now()
	pod, err := t.Env.Client.CoreV1().Pods(t.NS).Create(ctx, t.Spec.Pod(t.NS, i), metav1.CreateOptions{})
	returned := time.Now()
	if t.FromCall {
		returned = called
	}
	if err != nil {
		return 0, fmt.Errorf("creating pod %d in %s: %w", i, t.NS, err)
	}
	err = t.Watch.WaitFor(ctx, "pod "+pod.Name+" to lose "+t.Gate, func(pw *PodWatch) bool {
		_, ok := pw.Ungated[pod.Name]
		return ok
	})
	if err != nil {
		return 0, err
	}
	t.Watch.Mu.Lock()
	defer t.Watch.Mu.Unlock()
	return t.Watch.Ungated[pod.Name].Sub(returned), nil
}

// StartBareWatcher watches ns (with allPods, every namespace, picking the pods of ns
// out) and ungates every pod of ns that shows up with the baseline gate, each patch on
// a goroutine of its own so none waits for another. It reports its first error, or nil
// once ctx ends, on the returned channel.
func (e *Env) StartBareWatcher(ctx context.Context, ns string, allPods bool) (<-chan error, error) {
	watched := ns
	if allPods {
		watched = metav1.NamespaceAll
	}
	w, err := resumingWatch(ctx, e.Client, watched)
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() {
		defer w.Stop()
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			first error
		)
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type != watch.Added || pod.Namespace != ns {
				continue
			}
			wg.Go(func() {
				if err := bareUngateOne(ctx, e.bare, pod, BaselineGate); err != nil && ctx.Err() == nil {
					mu.Lock()
					first = cmpErr(first, err)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		done <- first
	}()
	return done, nil
}

// podWaitTotals reads the sum and count of quotagate_pod_wait_seconds, over every label
// set, from the registry the in-process manager's metrics are in.
func podWaitTotals() (sum, count float64, err error) {
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		return 0, 0, fmt.Errorf("reading the manager's metrics: %w", err)
	}
	for _, f := range families {
		if f.GetName() != "quotagate_pod_wait_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			sum += m.GetHistogram().GetSampleSum()
			count += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum, count, nil
}
