//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// podWatcher follows every pod of a namespace through a watch, which delivers changes
// in the order etcd made them: after each event its view is the namespace at that
// revision. It records each pod's states and checks, at every revision, that the
// admitted (ungated), non-terminal pods fit in the budget.
type podWatcher struct {
	mu         sync.Mutex
	pods       map[string]*corev1.Pod
	states     map[string][]string // pod name -> distinct states in the order seen
	ungated    []string            // pod names in the order their gate went away
	peakCPU    resource.Quantity
	peakPods   int
	violations []string
	hardCPU    resource.Quantity
	hardPods   int
}

// state is what `kubectl get pods` would summarise: SchedulingGated while the pod has
// the quotagate gate, then its phase.
func state(pod *corev1.Pod) string {
	if hasGate(pod) {
		return "SchedulingGated"
	}
	return string(pod.Status.Phase)
}

func hasGate(pod *corev1.Pod) bool {
	return slices.ContainsFunc(pod.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool {
		return g.Name == v1alpha1.SchedulingGate
	})
}

func admitted(pod *corev1.Pod) bool {
	return !hasGate(pod) && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// watchPods starts a watcher on namespace; it stops with ctx.
func watchPods(ctx context.Context, t *testing.T, cs kubernetes.Interface, namespace string, hardCPU string, hardPods int) *podWatcher {
	t.Helper()
	w := &podWatcher{
		pods: map[string]*corev1.Pod{}, states: map[string][]string{},
		hardCPU: resource.MustParse(hardCPU), hardPods: hardPods,
	}
	watcher, err := cs.CoreV1().Pods(namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("Watching pods: %v", err)
	}
	go func() {
		defer watcher.Stop()
		for ev := range watcher.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			w.observe(ev.Type, pod)
		}
	}()
	return w
}

func (w *podWatcher) observe(typ watch.EventType, pod *corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	prev := w.pods[pod.Name]
	if typ == watch.Deleted {
		delete(w.pods, pod.Name)
	} else {
		w.pods[pod.Name] = pod
		s := state(pod)
		if seen := w.states[pod.Name]; len(seen) == 0 || seen[len(seen)-1] != s {
			w.states[pod.Name] = append(seen, s)
		}
		if prev != nil && hasGate(prev) && !hasGate(pod) {
			w.ungated = append(w.ungated, pod.Name)
		}
	}
	var cpu resource.Quantity
	var names []string
	for _, p := range w.pods {
		if admitted(p) {
			reqs := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
			cpu.Add(*reqs.Cpu())
			names = append(names, p.Name)
		}
	}
	if cpu.Cmp(w.peakCPU) > 0 {
		w.peakCPU = cpu
	}
	w.peakPods = max(w.peakPods, len(names))
	if cpu.Cmp(w.hardCPU) > 0 || len(names) > w.hardPods {
		slices.Sort(names)
		w.violations = append(w.violations, fmt.Sprintf("at resourceVersion %s: %s CPU in %d admitted pods (%s), hard is %s CPU and %d pods",
			pod.ResourceVersion, cpu.String(), len(names), strings.Join(names, ", "), w.hardCPU.String(), w.hardPods))
	}
}

// snapshot returns copies of what the watcher saw.
func (w *podWatcher) snapshot() (states map[string][]string, ungated []string, peakCPU resource.Quantity, peakPods int, violations []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	states = map[string][]string{}
	for k, v := range w.states {
		states[k] = slices.Clone(v)
	}
	return states, slices.Clone(w.ungated), w.peakCPU.DeepCopy(), w.peakPods, slices.Clone(w.violations)
}

// waitFor polls cond every 100 ms until it returns true or timeout passes, then fails
// the test with the last message cond gave.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, msg := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Timed out after %v waiting for %s: %s", timeout, what, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
