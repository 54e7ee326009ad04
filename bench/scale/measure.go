package scale

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/bench/figures"
	"github.com/quotagate/quotagate/bench/report"
	"github.com/quotagate/quotagate/test/localcluster"
)

// scaleBudgetLabel marks the scale benchmark's Budgets, to sum their status.
const scaleBudgetLabel = "bench.quotagate.io/scale"

// env is the benchmark's world (figures.Env), with the scale benchmark's steps as its
// methods.
type env struct{ *figures.Env }

// scaleWorld is where one size lives: its budgets, each in a namespace.
type scaleWorld struct {
	namespaces []string
	// reactionNS is where reaction is measured beside the backlog. It is created with
	// the others, up front: a new namespace needs kube-controller-manager to create its
	// ServiceAccount, and on a loaded machine the backlog can make it lose its lease
	// and exit.
	reactionNS string
	budgets    []scaleBudget
	pods       int
}

type scaleBudget struct{ ns, name string }

// budgetName names budget i; its pods are named after it, so pod names are unique
// across namespaces, and carry benchLabel=<name>, which the budget selects.
func budgetName(i int) string { return fmt.Sprintf("b%04d", i) }

// podsOf is how many of pods budget i of budgets holds when pod k goes to budget
// k mod budgets.
func podsOf(i, budgets, pods int) int {
	n := pods / budgets
	if i < pods%budgets {
		n++
	}
	return n
}

// measureScale runs one size on a control plane of its own, filling pt step by step;
// a step that fails names itself in the error.
func measureScale(ctx context.Context, root string, o Options, pt *scalePoint) (err error) {
	dir, err := os.MkdirTemp("", "quotagate-bench-scale-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	fe, err := figures.StartEnv(ctx, root, dir)
	if err != nil {
		return fmt.Errorf("starting the control plane: %w", err)
	}
	e := &env{fe}
	defer func() { err = errors.Join(err, e.StopManager(), e.Cluster.Stop()) }()
	step := func(name string, f func() error) error {
		if err := f(); err != nil {
			if cerr := e.Cluster.Err(); cerr != nil {
				return fmt.Errorf("%s: %w (meanwhile %s)", name, err, errorHead(cerr))
			}
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	}
	w := &scaleWorld{pods: pt.Pods}
	if err := step("creating the budgets", func() error { return e.createScaleBudgets(ctx, w, pt.Budgets, pt.Namespaces) }); err != nil {
		return err
	}
	if err := step("creating the pods", func() error { return e.createScalePods(ctx, w, o.createWorkers, pt) }); err != nil {
		return err
	}
	if err := step("starting the manager and counting the pods", func() error { return e.syncScale(ctx, w, pt) }); err != nil {
		return err
	}
	heap := filepath.Join(o.profiles, fmt.Sprintf("scale-heap-%d.pprof", pt.Pods))
	if err := step("reading memory", func() error { return e.readScaleMemory(ctx, pt, heap) }); err != nil {
		return err
	}
	if err := step("measuring reaction beside the backlog", func() error {
		d, err := e.ReactionInNamespace(ctx, w.reactionNS, o.reactionReps)
		pt.ReactionMillis = report.Summarize(report.Millis(d))
		return err
	}); err != nil {
		return err
	}
	report.Logf("  reaction beside the backlog: p50 %.1f ms, p99 %.1f ms", pt.ReactionMillis.P50, pt.ReactionMillis.P99)
	if err := step("releasing", func() error { return e.releaseScale(ctx, w, pt) }); err != nil {
		return err
	}
	pt.EtcdDBAfterBytes = figures.EtcdDBSize(dir)
	if err := e.Cluster.Err(); err != nil {
		// A process that exited while the figures were measured (kube-controller-manager
		// losing its lease to a slow API server, say) did not stop them, but is worth saying.
		pt.Notes = append(pt.Notes, "a control-plane process exited during the run: "+errorHead(err))
	}
	return nil
}

// createScaleBudgets creates the namespaces and, round robin over them, the budgets,
// each limiting requests.cpu to 0: no pod fits until the budgets are raised.
func (e *env) createScaleBudgets(ctx context.Context, w *scaleWorld, budgets, namespaces int) error {
	for range namespaces {
		ns, err := e.NewNamespace(ctx, "scale", true)
		if err != nil {
			return err
		}
		w.namespaces = append(w.namespaces, ns)
	}
	var err error
	if w.reactionNS, err = e.NewNamespace(ctx, "reaction", true); err != nil {
		return err
	}
	for i := range budgets {
		b := scaleBudget{ns: w.namespaces[i%namespaces], name: budgetName(i)}
		obj := &v1alpha1.Budget{
			ObjectMeta: metav1.ObjectMeta{Namespace: b.ns, Name: b.name, Labels: map[string]string{scaleBudgetLabel: "true"}},
			Spec: v1alpha1.BudgetSpec{
				Hard:        corev1.ResourceList{"requests.cpu": resource.MustParse("0")},
				PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{figures.BenchLabel: b.name}},
			},
		}
		if err := e.Admin.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating budget %s/%s: %w", b.ns, b.name, err)
		}
		w.budgets = append(w.budgets, b)
	}
	return nil
}

// createScalePods creates the pods with quotagate's gate and the hold gate set directly
// (no webhook), workers at a time, pod k in budget k mod budgets.
func (e *env) createScalePods(ctx context.Context, w *scaleWorld, workers int, pt *scalePoint) error {
	before := e.Meter.Sample()
	start := time.Now()
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				k := int(next.Add(1) - 1)
				if k >= w.pods || ctx.Err() != nil {
					return
				}
				b := w.budgets[k%len(w.budgets)]
				spec := figures.PodSpec{Prefix: b.name, CPU: fmt.Sprintf("%dm", figures.PodCPUMilli), Gates: []string{v1alpha1.SchedulingGate, figures.HoldGate}}
				if _, err := e.Client.CoreV1().Pods(b.ns).Create(ctx, spec.Pod(b.ns, k/len(w.budgets)), metav1.CreateOptions{}); err != nil {
					once.Do(func() { firstErr = fmt.Errorf("creating pod %d of %d: %w", k, w.pods, err) })
					cancel()
					return
				}
				if k > 0 && k%10000 == 0 {
					report.Logf("  created %d pods", k)
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	pt.CreateSeconds = time.Since(start).Seconds()
	pt.CreateCPU = e.Meter.Since(before)
	report.Logf("  created %d pods in %.1f s (%.0f pods/s)", w.pods, pt.CreateSeconds, report.Ratio(float64(w.pods), pt.CreateSeconds))
	return nil
}

// budgetTotals sums the status of the scale benchmark's budgets.
func (e *env) budgetTotals(ctx context.Context) (gated, admitted int, err error) {
	var l v1alpha1.BudgetList
	if err := e.Admin.List(ctx, &l, client.MatchingLabels{scaleBudgetLabel: "true"}); err != nil {
		return 0, 0, err
	}
	for _, b := range l.Items {
		gated += int(b.Status.GatedPods)
		admitted += int(b.Status.AdmittedPods)
	}
	return gated, admitted, nil
}

// waitTotals waits, as long as ctx allows, until the budgets' status sums to gated and
// admitted pods.
func (e *env) waitTotals(ctx context.Context, gated, admitted int) error {
	var g, a int
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		var err error
		g, a, err = e.budgetTotals(ctx)
		return err == nil && g == gated && a == admitted, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the budgets to count %d gated and %d admitted pods (last %d and %d): %w", gated, admitted, g, a, err)
	}
	return nil
}

// syncScale starts a manager with every pod already in place and times how long it
// takes to sync its informers, then to count every pod in the budgets' status.
func (e *env) syncScale(ctx context.Context, w *scaleWorld, pt *scalePoint) error {
	base := figures.ReadMemory(0)
	pt.HeapBaseBytes = base.HeapInuse
	before := e.Meter.Sample()
	start := time.Now()
	if err := e.UseManager(ctx, figures.DefaultManagerSettings(), false); err != nil {
		return err
	}
	pt.SyncSeconds = time.Since(start).Seconds()
	if err := e.waitTotals(ctx, w.pods, 0); err != nil {
		return err
	}
	pt.CountedSeconds = time.Since(start).Seconds()
	pt.SyncCPU = e.Meter.Since(before)
	report.Logf("  manager synced in %.1f s, counted every pod in %.1f s", pt.SyncSeconds, pt.CountedSeconds)
	return nil
}

// readScaleMemory reads, once the manager's events are sent, this process's heap and
// RSS, the control plane's RSS, the idle CPU and the etcd database, and writes the
// heap profile to heapProfile.
func (e *env) readScaleMemory(ctx context.Context, pt *scalePoint, heapProfile string) error {
	if err := figures.WaitGoroutinesSettled(ctx); err != nil {
		pt.Notes = append(pt.Notes, "the manager's goroutines had not settled when memory was read")
	}
	m := figures.ReadMemory(pt.Pods)
	pt.HeapInuseBytes, pt.HeapObjects, pt.Goroutines = m.HeapInuse, m.HeapObjects, m.Goroutines
	if err := figures.WriteHeapProfile(heapProfile); err != nil {
		return err
	}
	pt.HeapProfile = filepath.Base(heapProfile)
	pt.RSSBytes = map[string]uint64{}
	for name, pid := range e.Meter {
		if rss, err := figures.RSSBytes(pid); err == nil {
			pt.RSSBytes[name] = rss
		}
	}
	var err error
	if pt.IdleCores, err = figures.IdleCores(ctx); err != nil {
		return err
	}
	pt.EtcdDBBytes = figures.EtcdDBSize(e.Cluster.Dir())
	if pt.Events, err = e.countAllEvents(ctx); err != nil {
		// A count, not a figure the size stands on: an API server too busy to answer
		// it is noted, and the size goes on.
		pt.Notes = append(pt.Notes, err.Error())
	}
	report.Logf("  heap in use %.1f MiB (%.0f B a pod over the empty manager), RSS %.1f MiB, kube-apiserver %.1f MiB, etcd %.1f MiB, db %.1f MiB, %d events",
		report.MiB(pt.HeapInuseBytes), pt.heapPerPod(), report.MiB(pt.RSSBytes[figures.ThisProcess]), report.MiB(pt.RSSBytes[localcluster.KubeAPIServer]),
		report.MiB(pt.RSSBytes[localcluster.Etcd]), report.MiB(pt.EtcdDBBytes), pt.Events)
	return nil
}

// errorHead is the first line of err: a control-plane process's error carries the end
// of its log.
func errorHead(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	return strings.TrimSuffix(line, ":")
}

// countAllEvents counts the events of every namespace from a list of one item.
func (e *env) countAllEvents(ctx context.Context) (int, error) {
	l, err := e.Client.EventsV1().Events("").List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return 0, fmt.Errorf("counting events: %w", err)
	}
	n := len(l.Items)
	if l.RemainingItemCount != nil {
		n += int(*l.RemainingItemCount)
	}
	return n, nil
}

// releaseScale raises every budget to fit its pods and times, from the first raise, the
// first and last ungate seen by a watch of all namespaces, then the budgets' status
// counting every pod admitted.
func (e *env) releaseScale(ctx context.Context, w *scaleWorld, pt *scalePoint) error {
	pw, err := figures.WatchPods(ctx, e.Client, "", v1alpha1.SchedulingGate)
	if err != nil {
		return err
	}
	defer pw.Stop()
	before := e.Meter.Sample()
	start := time.Now()
	if err := e.raiseBudgets(ctx, w); err != nil {
		return err
	}
	pt.RaiseSeconds = time.Since(start).Seconds()
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		pw.Mu.Lock()
		defer pw.Mu.Unlock()
		return len(pw.Ungated) >= w.pods, pw.Err
	})
	if err != nil {
		pw.Mu.Lock()
		n := len(pw.Ungated)
		pw.Mu.Unlock()
		return fmt.Errorf("waiting for %d ungates (saw %d): %w", w.pods, n, err)
	}
	pw.Mu.Lock()
	pt.ReleaseSeconds = figures.LastOf(pw.Ungated).Sub(start).Seconds()
	pt.ReleaseFirstSeconds = figures.FirstOf(pw.Ungated).Sub(start).Seconds()
	pw.Mu.Unlock()
	if err := e.waitTotals(ctx, 0, w.pods); err != nil {
		return err
	}
	pt.SettledSeconds = time.Since(start).Seconds()
	pt.ReleaseCPU = e.Meter.Since(before)
	report.Logf("  released %d pods in %.1f s (%.0f pods/s, first after %.2f s), status settled after %.1f s",
		w.pods, pt.ReleaseSeconds, pt.releaseRate(), pt.ReleaseFirstSeconds, pt.SettledSeconds)
	return nil
}

// raiseBudgets sets every budget's requests.cpu to fit all its pods, 16 at a time.
func (e *env) raiseBudgets(ctx context.Context, w *scaleWorld) error {
	var wg sync.WaitGroup
	errs := make([]error, len(w.budgets))
	sem := make(chan struct{}, 16)
	for i, b := range w.budgets {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			cpu := fmt.Sprintf("%dm", podsOf(i, len(w.budgets), w.pods)*figures.PodCPUMilli)
			patch := fmt.Appendf(nil, `{"spec":{"hard":{"requests.cpu":%q}}}`, cpu)
			obj := &v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: b.ns, Name: b.name}}
			if err := e.Admin.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", patch)); err != nil {
				errs[i] = fmt.Errorf("raising budget %s/%s: %w", b.ns, b.name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
