package controller

import (
	"context"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/quota/window"
)

// +kubebuilder:rbac:groups=quotagate.io,resources=budgetwindows;clusterbudgetwindows,verbs=get;list;watch
// +kubebuilder:rbac:groups=quotagate.io,resources=budgetwindows/status;clusterbudgetwindows/status,verbs=get;patch;update

// windowRef names a window: a BudgetWindow (Namespace set) or a ClusterBudgetWindow.
type windowRef struct {
	Namespace, Name string
}

func (r windowRef) isCluster() bool { return r.Namespace == "" }

// budgetWindows feeds the core each budget's effective spec: the written spec with what
// its open windows set (package window computes it), in place of the written one. It
// keeps the budgets as the informer gave them and their windows, arms a timer for the
// next edge of any window (run, on every replica, so that a new leader's core is
// current), and, on the leader, writes the windows' status and the WindowStarted and
// WindowEnded events on their budgets (runStatus). The Budget object is never written
// but for its status: the one in git does not drift.
type budgetWindows struct {
	core  *quota.AdmissionQueue
	clock clock.Clock
	wake  func() // wakes the admission loop after the core got a new spec

	// Set by SetupWithManager; nil in unit tests, where runStatus does not run.
	client   client.Client
	reader   client.Reader
	recorder recorder.EventRecorder

	// mu guards the fields below. Lock order: mu, then the core's lock: the core is fed
	// under mu, so that of two changes the later always reaches the core last.
	mu sync.Mutex
	// written is each budget as the informer gave it (*v1alpha1.Budget or
	// *v1alpha1.ClusterBudget).
	written map[quota.BudgetKey]client.Object
	// windows are the windows of each budget, by window name.
	windows map[quota.BudgetKey]map[string]window.Window
	// budgetOf is the budget each window names.
	budgetOf map[windowRef]quota.BudgetKey
	// results is the last evaluation fed to the core, by budget.
	results map[quota.BudgetKey]window.Result
	// dirty are the windows whose status is to be written.
	dirty map[windowRef]struct{}
	// reclaim names, per budget, the window with endPolicy Reclaim that ended last, until
	// a window of the budget opens again (quota.Budget.ReclaimAfter).
	reclaim map[quota.BudgetKey]string

	// edge wakes run (a budget's next change moved); kick wakes runStatus.
	edge, kick chan struct{}
}

func newBudgetWindows(core *quota.AdmissionQueue, clk clock.Clock, wake func()) *budgetWindows {
	return &budgetWindows{core: core, clock: clk, wake: wake,
		written:  map[quota.BudgetKey]client.Object{},
		windows:  map[quota.BudgetKey]map[string]window.Window{},
		budgetOf: map[windowRef]quota.BudgetKey{},
		results:  map[quota.BudgetKey]window.Result{},
		dirty:    map[windowRef]struct{}{},
		reclaim:  map[quota.BudgetKey]string{},
		edge:     make(chan struct{}, 1), kick: make(chan struct{}, 1)}
}

func budgetKeyOf(ref windowRef, budgetName string) quota.BudgetKey {
	return quota.BudgetKey{Namespace: ref.Namespace, Name: budgetName}
}

// setBudget takes a Budget or ClusterBudget from the informer and feeds the core its
// effective spec.
func (w *budgetWindows) setBudget(obj client.Object) {
	key := quota.BudgetKey{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	w.mu.Lock()
	defer w.mu.Unlock()
	_, known := w.written[key]
	w.written[key] = obj
	w.feed(key, w.clock.Now())
	if !known {
		w.markWindows(key) // BudgetNotFound no longer
	}
}

// forgetBudget drops a deleted budget, from the core too.
func (w *budgetWindows) forgetBudget(key quota.BudgetKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.written, key)
	delete(w.results, key)
	delete(w.reclaim, key)
	w.core.DeleteBudget(key)
	w.markWindows(key)
}

// setWindow takes a BudgetWindow or ClusterBudgetWindow from the informer.
func (w *budgetWindows) setWindow(ref windowRef, spec v1alpha1.BudgetWindowSpec) {
	key := budgetKeyOf(ref, spec.BudgetName)
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	if old, ok := w.budgetOf[ref]; ok && old != key {
		w.remove(ref, old)
		w.feed(old, now)
	}
	w.budgetOf[ref] = key
	if w.windows[key] == nil {
		w.windows[key] = map[string]window.Window{}
	}
	w.windows[key][ref.Name] = window.Window{Name: ref.Name, Spec: *spec.DeepCopy()}
	w.markDirty(ref)
	w.feed(key, now)
}

// deleteWindow drops a window: its budget is fed as its other windows make it, or as
// written when it has none open.
func (w *budgetWindows) deleteWindow(ref windowRef) {
	w.mu.Lock()
	defer w.mu.Unlock()
	key, ok := w.budgetOf[ref]
	if !ok {
		return
	}
	w.remove(ref, key)
	w.feed(key, w.clock.Now())
}

func (w *budgetWindows) remove(ref windowRef, key quota.BudgetKey) {
	delete(w.budgetOf, ref)
	delete(w.windows[key], ref.Name)
	if len(w.windows[key]) == 0 {
		delete(w.windows, key)
	}
	delete(w.dirty, ref)
}

// feed evaluates the windows of key at now and gives the core the effective spec. A
// budget the informer has not delivered (or deleted) is not fed. Called with mu held.
func (w *budgetWindows) feed(key quota.BudgetKey, now time.Time) {
	obj, ok := w.written[key]
	if !ok {
		return
	}
	spec, res, ok := effectiveAt(obj, w.windowsOf(key), now)
	if !ok {
		return
	}
	prev, had := w.results[key]
	w.results[key] = res
	if had {
		w.noteEnds(key, prev.Open, res.Open)
	} else {
		w.resume(key, obj, res.Open)
	}
	spec.ReclaimAfter = w.reclaim[key]
	w.core.UpsertBudget(spec) // marks the budget's status to be written
	if !had || !prev.Next.Equal(res.Next) {
		signal(w.edge)
	}
	if !had || !slices.Equal(prev.Open, res.Open) || !prev.Next.Equal(res.Next) {
		w.markWindows(key)
	}
	if w.wake != nil {
		w.wake()
	}
}

// windowsOf lists the windows of key. Called with mu held.
func (w *budgetWindows) windowsOf(key quota.BudgetKey) []window.Window {
	list := make([]window.Window, 0, len(w.windows[key]))
	for _, win := range w.windows[key] {
		list = append(list, win)
	}
	return list
}

// effectiveAt is the budget obj (a *v1alpha1.Budget or *v1alpha1.ClusterBudget, as
// written) with what its windows set at t, for the core, and the windows' evaluation.
func effectiveAt(obj client.Object, list []window.Window, t time.Time) (quota.Budget, window.Result, bool) {
	switch b := obj.(type) {
	case *v1alpha1.Budget:
		res := window.Evaluate(b.Spec, list, t)
		eff := *b
		eff.Spec = res.Spec
		return quota.BudgetFromAPI(&eff), res, true
	case *v1alpha1.ClusterBudget:
		res := window.Evaluate(b.Spec.BudgetSpec, list, t)
		eff := *b
		eff.Spec.BudgetSpec = res.Spec
		return quota.ClusterBudgetFromAPI(&eff), res, true
	}
	return quota.Budget{}, window.Result{}, false
}

// maxChangesAhead bounds the changes ahead of one budget the estimator is given: a
// window that repeats every minute would otherwise give it one per minute for a year.
const maxChangesAhead = 32

// ahead is, for the estimator, the budget obj (as written, from the cache) as the core
// has it at now (its effective spec, with the reclaim under way), and what its windows
// will make of it until horizon: each edge's effective spec, naming the Reclaim window
// it reclaims after from there (reclaimAfterEdge, as noteEnds), in time order, at most
// maxChangesAhead of them.
func (w *budgetWindows) ahead(obj client.Object, now, horizon time.Time) (quota.Budget, []estimate.BudgetChange, bool) {
	key := quota.BudgetKey{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	w.mu.Lock()
	defer w.mu.Unlock()
	list := w.windowsOf(key)
	spec, res, ok := effectiveAt(obj, list, now)
	if !ok {
		return quota.Budget{}, nil, false
	}
	spec.ReclaimAfter = w.reclaim[key]
	reclaim := spec.ReclaimAfter
	policy := func(name string) v1alpha1.WindowEndPolicy { return w.windows[key][name].Spec.EndPolicy }
	var changes []estimate.BudgetChange
	for i := 0; i < maxChangesAhead && !res.Next.IsZero() && !res.Next.After(horizon); i++ {
		at, was := res.Next, res.Open
		var next quota.Budget
		next, res, _ = effectiveAt(obj, list, at)
		reclaim = reclaimAfterEdge(reclaim, was, res.Open, policy)
		next.ReclaimAfter = reclaim
		changes = append(changes, estimate.BudgetChange{At: at, Budget: next})
	}
	return spec, changes, true
}

// noteEnds follows the windows of key that opened and ended between two evaluations
// (reclaimAfterEdge). A window deleted while open is not among key's windows any more:
// it ends with Hold. Called with mu held.
func (w *budgetWindows) noteEnds(key quota.BudgetKey, was, open []string) {
	policy := func(name string) v1alpha1.WindowEndPolicy { return w.windows[key][name].Spec.EndPolicy }
	if r := reclaimAfterEdge(w.reclaim[key], was, open, policy); r != "" {
		w.reclaim[key] = r
	} else {
		delete(w.reclaim, key)
	}
}

// reclaimAfterEdge is the Reclaim window a budget reclaims after once its windows go
// from open was to open now, given the one it reclaimed after before ("" for none): a
// window that opens stops a reclaim; one with endPolicy Reclaim that ends starts one
// (of several, the last of was). policy is a window's endPolicy ("" for a window that
// no longer exists).
func reclaimAfterEdge(reclaim string, was, open []string, policy func(name string) v1alpha1.WindowEndPolicy) string {
	for _, name := range open {
		if !slices.Contains(was, name) {
			reclaim = ""
		}
	}
	for _, name := range was {
		if !slices.Contains(open, name) && policy(name) == v1alpha1.WindowEndReclaim {
			reclaim = name
		}
	}
	return reclaim
}

// resume takes up, at the first sight of a budget, a reclaim its status says a manager
// before this one had not finished (status.reclaimingAfterWindow), unless a window of
// the budget is open now, which would have stopped it. Called with mu held.
func (w *budgetWindows) resume(key quota.BudgetKey, obj client.Object, open []string) {
	if _, ok := w.reclaim[key]; ok || len(open) > 0 {
		return
	}
	var name string
	switch b := obj.(type) {
	case *v1alpha1.Budget:
		name = b.Status.ReclaimingAfterWindow
	case *v1alpha1.ClusterBudget:
		name = b.Status.ReclaimingAfterWindow
	}
	if name != "" {
		w.reclaim[key] = name
	}
}

// markWindows marks every window of key for a status write. Called with mu held.
func (w *budgetWindows) markWindows(key quota.BudgetKey) {
	for name := range w.windows[key] {
		w.markDirty(windowRef{Namespace: key.Namespace, Name: name})
	}
}

func (w *budgetWindows) markDirty(ref windowRef) {
	w.dirty[ref] = struct{}{}
	signal(w.kick)
}

// budgetStatus is what the Budget's status shows of its windows: the open ones, the
// winner first, and the next change (nil when none is due).
func (w *budgetWindows) budgetStatus(key quota.BudgetKey) ([]string, *metav1.Time) {
	if w == nil {
		return nil, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	res, ok := w.results[key]
	if !ok {
		return nil, nil
	}
	return slices.Clone(res.Open), apiTime(res.Next)
}

// apiTime is t as a status field shows it: nil for the zero time (no change due).
func apiTime(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	mt := metav1.NewTime(t)
	return &mt
}

// nextEdge is the earliest next change of any budget, and whether there is one.
func (w *budgetWindows) nextEdge() (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var next time.Time
	for _, res := range w.results {
		if !res.Next.IsZero() && (next.IsZero() || res.Next.Before(next)) {
			next = res.Next
		}
	}
	return next, !next.IsZero()
}

// due feeds every budget whose next change is at or before now.
func (w *budgetWindows) due(now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for key, res := range w.results {
		if !res.Next.IsZero() && !res.Next.After(now) {
			w.feed(key, now)
		}
	}
}

// Start runs the edge timer until ctx ends (manager.Runnable). Every replica runs it.
func (w *budgetWindows) Start(ctx context.Context) error {
	timer := w.clock.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		w.due(w.clock.Now())
		wait := time.Hour
		if t, ok := w.nextEdge(); ok {
			wait = max(t.Sub(w.clock.Now()), time.Millisecond)
		}
		resetTimer(timer, wait)
		select {
		case <-ctx.Done():
			return nil
		case <-w.edge:
		case <-timer.C():
		}
	}
}

// NeedLeaderElection is false: every replica keeps its core current.
func (w *budgetWindows) NeedLeaderElection() bool { return false }
