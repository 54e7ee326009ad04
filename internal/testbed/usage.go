package testbed

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/gates"
)

// UsageWatcher follows every pod of a namespace through one watch, which delivers
// changes in the order etcd made them: after each event its view is the namespace at
// that revision. At every event it checks that the admitted pods (no quotagate gate,
// not terminal, not deleted) fit in hard, as docs/budgets.md ("The basics") defines
// used; and it records each pod's states and when each pod was first seen admitted.
//
// With flavors (WatchUsageFlavored) it also checks each flavor's hard against the
// admitted pods on that flavor: those whose spec.nodeSelector carries every one of the
// flavor's node labels, which is how the manager puts a pod on its flavor.
//
// The watch resumes from the last resourceVersion seen if the API server ends it, so
// no revision goes unchecked; a watch that cannot resume is reported as a violation.
type UsageWatcher struct {
	cs        kubernetes.Interface
	namespace string
	selector  string // a label selector, empty for every pod
	// hard holds the flavors' hards too, as r@flavor (flavorMark).
	hard    corev1.ResourceList
	flavors map[string]map[string]string // each flavor's node labels
	cancel  context.CancelFunc
	done    chan struct{}

	mu         sync.Mutex
	pods       map[types.UID]*corev1.Pod
	charged    map[types.UID]corev1.ResourceList
	releaseAt  map[types.UID]time.Time // charged pods being deleted: when their grace period ends
	used       corev1.ResourceList
	peak       corev1.ResourceList
	states     map[string][]string
	admitted   []Admission
	admittedBy map[types.UID]bool
	violations []string
	events     int
	lastRV     string
}

// Admission is a pod seen without the quotagate gate for the first time.
type Admission struct {
	Pod       string
	Namespace string
	// At is when the watch delivered it (this process's clock).
	At time.Time
	// ResourceVersion is the pod's at that event.
	ResourceVersion string
}

// UsageReport is what a UsageWatcher saw so far.
type UsageReport struct {
	// States maps each pod name to the distinct states it went through in order:
	// SchedulingGated while it has the quotagate gate, then its phase.
	States map[string][]string
	// Admitted lists the pods in the order they were first seen without the gate.
	Admitted []Admission
	// Used is the admitted usage now; Peak the most ever seen, per resource of hard.
	Used, Peak corev1.ResourceList
	// Gated counts the pods that still carry the gate.
	Gated int
	// Violations describes every revision at which the admitted usage exceeded hard.
	Violations []string
	// Events counts the watch events checked.
	Events int
}

// WatchUsage starts a UsageWatcher on namespace. hard names what must hold, in
// ResourceQuota's names: "pods" (or "count/pods") counts pods, "requests.X" (or a bare
// "cpu", "memory") sums requests of X as Kubernetes computes them. Start it before the
// pods exist, or it sees the existing ones at their current state. It stops with ctx or
// Stop.
func WatchUsage(ctx context.Context, cs kubernetes.Interface, namespace string, hard corev1.ResourceList) (*UsageWatcher, error) {
	return WatchUsageSelected(ctx, cs, namespace, "", hard)
}

// WatchUsageSelected is WatchUsage for the pods matching a label selector, in namespace
// or, when it is "", in every namespace (what a parent ClusterBudget sums up).
func WatchUsageSelected(ctx context.Context, cs kubernetes.Interface, namespace, selector string, hard corev1.ResourceList) (*UsageWatcher, error) {
	return watchUsage(ctx, cs, namespace, selector, hard, nil)
}

// FlavorLimit is a flavor's hard, for WatchUsageFlavored: the admitted pods whose
// spec.nodeSelector has every one of NodeLabels are on the flavor, and must fit in Hard
// (in WatchUsage's names).
type FlavorLimit struct {
	Name       string
	NodeLabels map[string]string
	Hard       corev1.ResourceList
}

// flavorMark separates a resource from its flavor in the names of hard, Used, Peak and
// the violations: "requests.cpu@spot", as the core names them.
const flavorMark = "@"

// WatchUsageFlavored is WatchUsage that also checks each flavor's hard. The report's
// Used and Peak name a flavor's resources r@flavor.
func WatchUsageFlavored(ctx context.Context, cs kubernetes.Interface, namespace string, hard corev1.ResourceList, flavors []FlavorLimit) (*UsageWatcher, error) {
	return watchUsage(ctx, cs, namespace, "", hard, flavors)
}

func watchUsage(ctx context.Context, cs kubernetes.Interface, namespace, selector string, hard corev1.ResourceList, flavors []FlavorLimit) (*UsageWatcher, error) {
	all := hard.DeepCopy()
	labels := map[string]map[string]string{}
	for _, f := range flavors {
		labels[f.Name] = f.NodeLabels
		for r, q := range f.Hard {
			all[corev1.ResourceName(string(r)+flavorMark+f.Name)] = q.DeepCopy()
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &UsageWatcher{
		cs: cs, namespace: namespace, selector: selector, hard: all, flavors: labels, cancel: cancel, done: make(chan struct{}),
		pods: map[types.UID]*corev1.Pod{}, charged: map[types.UID]corev1.ResourceList{}, releaseAt: map[types.UID]time.Time{},
		used: corev1.ResourceList{}, peak: corev1.ResourceList{},
		states: map[string][]string{}, admittedBy: map[types.UID]bool{},
	}
	watcher, err := w.watch(ctx, "")
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watching pods in %s: %w", namespace, err)
	}
	go w.run(ctx, watcher)
	return w, nil
}

// watch starts a watch of the pods the watcher follows, from resourceVersion rv ("":
// the current state first).
func (w *UsageWatcher) watch(ctx context.Context, rv string) (watch.Interface, error) {
	return w.cs.CoreV1().Pods(w.namespace).Watch(ctx, metav1.ListOptions{LabelSelector: w.selector, ResourceVersion: rv})
}

func (w *UsageWatcher) run(ctx context.Context, watcher watch.Interface) {
	defer close(w.done)
	for {
		select {
		case <-ctx.Done():
			watcher.Stop()
			return
		case ev, ok := <-watcher.ResultChan():
			if ok {
				w.handle(ev)
				continue
			}
		}
		// The API server ended the watch: resume where it was.
		watcher.Stop()
		w.mu.Lock()
		rv := w.lastRV
		w.mu.Unlock()
		var err error
		watcher, err = w.watch(ctx, rv)
		if err != nil {
			if ctx.Err() == nil {
				w.fail(fmt.Sprintf("resuming the watch at resourceVersion %s: %v", rv, err))
			}
			return
		}
	}
}

func (w *UsageWatcher) handle(ev watch.Event) {
	if ev.Type == watch.Error {
		w.fail(fmt.Sprintf("the watch failed: %v", ev.Object))
		return
	}
	if pod, ok := ev.Object.(*corev1.Pod); ok {
		w.observe(ev.Type, pod)
	}
}

func (w *UsageWatcher) fail(msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.violations = append(w.violations, msg)
}

// State is what `kubectl get pods` summarises: SchedulingGated while the pod carries
// the quotagate gate, then its phase.
func State(pod *corev1.Pod) string {
	if hasGate(pod) {
		return "SchedulingGated"
	}
	return string(pod.Status.Phase)
}

func hasGate(pod *corev1.Pod) bool { return gates.HasGate(pod, v1alpha1.SchedulingGate) }

// charges reports whether the pod counts as used at now, as ResourceQuota counts it
// (docs/budgets.md, "What a budget counts, checked against ResourceQuota"): admitted,
// not terminal, not deleted, and not past its deletion grace period. releaseAt is when
// that period ends, zero while it is not being deleted.
func charges(typ watch.EventType, pod *corev1.Pod, now time.Time) (ok bool, releaseAt time.Time) {
	terminal := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	if typ == watch.Deleted || hasGate(pod) || terminal {
		return false, time.Time{}
	}
	if pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil {
		releaseAt = pod.DeletionTimestamp.Add(time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second)
		if now.After(releaseAt) {
			return false, releaseAt
		}
	}
	return true, releaseAt
}

// uncharge takes the pod's charge off the admitted usage.
func (w *UsageWatcher) uncharge(uid types.UID) {
	for name, q := range w.charged[uid] {
		u := w.used[name]
		u.Sub(q)
		w.used[name] = u
	}
	delete(w.charged, uid)
	delete(w.releaseAt, uid)
}

// usage is what pod counts against each resource of hard: a flavor's only when the pod
// is on that flavor.
func (w *UsageWatcher) usage(pod *corev1.Pod) corev1.ResourceList {
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	out := corev1.ResourceList{}
	for name := range w.hard {
		base, flavor, _ := strings.Cut(string(name), flavorMark)
		if flavor != "" && !onFlavor(pod, w.flavors[flavor]) {
			continue
		}
		switch corev1.ResourceName(base) {
		case corev1.ResourcePods, "count/pods":
			out[name] = *resource.NewQuantity(1, resource.DecimalSI)
		default:
			out[name] = reqs[corev1.ResourceName(strings.TrimPrefix(base, "requests."))]
		}
	}
	return out
}

// onFlavor reports whether the pod's nodeSelector selects every one of a flavor's labels.
func onFlavor(pod *corev1.Pod, labels map[string]string) bool {
	for k, v := range labels {
		if got, ok := pod.Spec.NodeSelector[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func (w *UsageWatcher) observe(typ watch.EventType, pod *corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events++
	w.lastRV = pod.ResourceVersion
	if typ == watch.Deleted {
		delete(w.pods, pod.UID)
	} else {
		w.pods[pod.UID] = pod
		s := State(pod)
		if seen := w.states[pod.Name]; len(seen) == 0 || seen[len(seen)-1] != s {
			w.states[pod.Name] = append(seen, s)
		}
		if !hasGate(pod) && !w.admittedBy[pod.UID] {
			w.admittedBy[pod.UID] = true
			w.admitted = append(w.admitted, Admission{Pod: pod.Name, Namespace: pod.Namespace, At: time.Now(), ResourceVersion: pod.ResourceVersion})
		}
	}
	w.uncharge(pod.UID)
	// Pods being deleted stop counting when their grace period ends, with or without
	// an event of their own then.
	now := time.Now()
	for uid, at := range w.releaseAt {
		if now.After(at) {
			w.uncharge(uid)
		}
	}
	if ok, releaseAt := charges(typ, pod, now); ok {
		if !releaseAt.IsZero() {
			w.releaseAt[pod.UID] = releaseAt
		}
		c := w.usage(pod)
		w.charged[pod.UID] = c
		for name, q := range c {
			u := w.used[name]
			u.Add(q)
			w.used[name] = u
		}
	}
	var over []string
	var overNames []corev1.ResourceName
	for name, limit := range w.hard {
		u := w.used[name]
		if p := w.peak[name]; u.Cmp(p) > 0 {
			w.peak[name] = u.DeepCopy()
		}
		if u.Cmp(limit) > 0 {
			over = append(over, fmt.Sprintf("%s %s > %s", name, u.String(), limit.String()))
			overNames = append(overNames, name)
		}
	}
	if len(over) > 0 {
		// The pods that use what is over: on a flavor, only that flavor's.
		var names []string
		for uid, c := range w.charged {
			if slices.ContainsFunc(overNames, func(r corev1.ResourceName) bool { q := c[r]; return !q.IsZero() }) {
				names = append(names, w.pods[uid].Name)
			}
		}
		slices.Sort(over)
		slices.Sort(names)
		w.violations = append(w.violations, fmt.Sprintf("at resourceVersion %s (%s %s): %s, admitted pods %s",
			pod.ResourceVersion, typ, pod.Name, strings.Join(over, ", "), strings.Join(names, ", ")))
	}
}

// Report returns copies of what the watcher saw so far.
func (w *UsageWatcher) Report() UsageReport {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := UsageReport{
		States: map[string][]string{}, Admitted: slices.Clone(w.admitted),
		Used: w.used.DeepCopy(), Peak: w.peak.DeepCopy(),
		Violations: slices.Clone(w.violations), Events: w.events,
	}
	for k, v := range w.states {
		r.States[k] = slices.Clone(v)
	}
	for _, p := range w.pods {
		if hasGate(p) {
			r.Gated++
		}
	}
	return r
}

// Stop ends the watch and waits for the watcher to return. It may be called again.
func (w *UsageWatcher) Stop() {
	w.cancel()
	<-w.done
}
