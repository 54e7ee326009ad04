package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/gates"
)

// newKueueNamespace creates a namespace Kueue manages and waits for its default
// ServiceAccount.
func (e *env) newKueueNamespace(ctx context.Context, what string) (string, error) {
	ns, err := e.newNamespace(ctx, what, false)
	if err != nil {
		return "", err
	}
	n, err := e.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[kueueNamespaceLabel] = "true"
	if _, err := e.client.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		return "", fmt.Errorf("labelling namespace %s for Kueue: %w", ns, err)
	}
	return ns, nil
}

// releaseByKueue is releaseByQuotagate for Kueue: n plain pods in a LocalQueue whose
// ClusterQueue has no cpu quota, then the quota raised to fit them all; the time runs
// from that write to the last pod's ungate event. rss, when set, is called with the pods
// pending, before the raise.
func (e *env) releaseByKueue(ctx context.Context, o releaseOpts, rss func() error) (releaseRun, error) {
	var run releaseRun
	ns, err := e.newKueueNamespace(ctx, "release-kueue")
	if err != nil {
		return run, err
	}
	if err := e.kueueQueues(ctx, ns, "0"); err != nil {
		return run, err
	}
	pw, err := watchPods(ctx, e.client, ns, kueueGate)
	if err != nil {
		return run, err
	}
	defer pw.stop()
	spec := podSpec{prefix: "p", cpu: fmt.Sprintf("%dm", podCPUMilli), gates: []string{holdGate}}
	if err := e.createPods(ctx, ns, kueueSpec(spec), 0, o.n); err != nil {
		return run, err
	}
	if err := e.waitKueuePending(ctx, ns, o.n); err != nil {
		return run, err
	}
	if _, err := e.waitEventsSettled(ctx, ns); err != nil {
		return run, err
	}
	if rss != nil {
		if err := rss(); err != nil {
			return run, err
		}
	}
	before := e.meter.sample()
	start := time.Now()
	if err := e.setKueueCPU(ctx, ns, fmt.Sprintf("%dm", o.n*podCPUMilli)); err != nil {
		return run, err
	}
	if err := pw.waitFor(ctx, "Kueue to release every pod", o.done); err != nil {
		return run, err
	}
	run.cpu = e.meter.since(before)
	pw.mu.Lock()
	run.took = o.last(pw).Sub(start)
	run.first = o.first(pw).Sub(start)
	pw.mu.Unlock()
	return run, e.deletePods(ctx, ns)
}

// reactionByKueue is reactionByQuotagate for Kueue: a ClusterQueue of one CPU, pods of
// one CPU each.
func (e *env) reactionByKueue(ctx context.Context, reps int) ([]time.Duration, error) {
	ns, err := e.newKueueNamespace(ctx, "reaction-kueue")
	if err != nil {
		return nil, err
	}
	if err := e.kueueQueues(ctx, ns, "1"); err != nil {
		return nil, err
	}
	pw, err := watchPods(ctx, e.client, ns, kueueGate)
	if err != nil {
		return nil, err
	}
	defer pw.stop()
	spec := kueueSpec(podSpec{prefix: "p", cpu: "1", gates: []string{holdGate}})
	if err := e.createPods(ctx, ns, spec, 0, reps+1); err != nil {
		return nil, err
	}
	if err := e.waitKueuePending(ctx, ns, reps); err != nil {
		return nil, err
	}
	if err := pw.waitFor(ctx, "Kueue to release the first pod", func(pw *podWatch) bool { return len(pw.order) == 1 }); err != nil {
		return nil, err
	}
	out, err := e.chainLatencies(ctx, ns, pw, reps)
	if err != nil {
		return nil, err
	}
	return out, e.deletePods(ctx, ns)
}

// createToUngate creates samples pods in ns one after another, each into room, and
// returns for each the time from the start of its create call to the watch event
// that shows it without gate: what a user waits between `kubectl create` and a pod
// the scheduler may place.
func (e *env) createToUngate(ctx context.Context, ns, gate string, spec podSpec, samples int) ([]time.Duration, error) {
	pw, err := watchPods(ctx, e.client, ns, gate)
	if err != nil {
		return nil, err
	}
	defer pw.stop()
	out := make([]time.Duration, 0, samples)
	for i := range samples {
		pod := spec.pod(ns, i)
		start := time.Now()
		if _, err := e.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("creating pod %d in %s: %w", i, ns, err)
		}
		err := pw.waitFor(ctx, "pod "+pod.Name+" to lose gate "+gate, func(pw *podWatch) bool {
			_, ok := pw.ungated[pod.Name]
			return ok
		})
		if err != nil {
			return nil, err
		}
		pw.mu.Lock()
		out = append(out, pw.ungated[pod.Name].Sub(start))
		pw.mu.Unlock()
	}
	return out, e.deletePods(ctx, ns)
}

// createToUngateQuotagate: the gate added at admission in mode m (the shipped gate
// policy, or the shipped webhook served in this process), a Budget with room for every
// pod, the manager removes it.
func (e *env) createToUngateQuotagate(ctx context.Context, m admissionMode, samples int) (_ []time.Duration, err error) {
	ns, err := e.newNamespace(ctx, "c2u-qg-"+m.Name, true)
	if err != nil {
		return nil, err
	}
	if err := e.createBudget(ctx, ns, "1000"); err != nil {
		return nil, err
	}
	undo, err := m.register(ctx, e, ns)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, undo()) }()
	return e.createToUngate(ctx, ns, v1alpha1.SchedulingGate, podSpec{prefix: "p", cpu: "10m", gates: []string{holdGate}}, samples)
}

// createToUngateKueue: Kueue's webhook adds its gate, a ClusterQueue with room for
// every pod, Kueue removes it.
func (e *env) createToUngateKueue(ctx context.Context, samples int) ([]time.Duration, error) {
	ns, err := e.newKueueNamespace(ctx, "c2u-kueue")
	if err != nil {
		return nil, err
	}
	if err := e.kueueQueues(ctx, ns, "1000"); err != nil {
		return nil, err
	}
	return e.createToUngate(ctx, ns, kueueGate, kueueSpec(podSpec{prefix: "p", cpu: "10m", gates: []string{holdGate}}), samples)
}

// createToUngateBare: pods created with the baseline gate, and a bare watch that
// removes it as soon as it reads the pod.
func (e *env) createToUngateBare(ctx context.Context, samples int) ([]time.Duration, error) {
	ns, err := e.newNamespace(ctx, "c2u-bare", false)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := resumingWatch(rctx, e.client, ns)
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type != watch.Added || !gates.HasGate(pod, baselineGate) {
				continue
			}
			if err := bareUngateOne(rctx, e.bare, pod, baselineGate); err != nil && rctx.Err() == nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	out, err := e.createToUngate(ctx, ns, baselineGate, podSpec{prefix: "p", cpu: "10m", gates: []string{baselineGate, holdGate}}, samples)
	cancel()
	if werr := <-done; err == nil {
		err = werr
	}
	return out, err
}

// parkedMemory creates n gated pods behind a Budget with no room, waits until the manager
// counts them all, and returns the resident memory of pid then.
func (e *env) parkedMemory(ctx context.Context, n, pid int) (memory, error) {
	ns, err := e.newNamespace(ctx, "memory-qg", true)
	if err != nil {
		return memory{}, err
	}
	if err := e.createBudget(ctx, ns, "0"); err != nil {
		return memory{}, err
	}
	spec := podSpec{prefix: "p", cpu: fmt.Sprintf("%dm", podCPUMilli), gates: []string{v1alpha1.SchedulingGate, holdGate}}
	if err := e.createPods(ctx, ns, spec, 0, n); err != nil {
		return memory{}, err
	}
	if err := e.waitGated(ctx, ns, n); err != nil {
		return memory{}, err
	}
	if _, err := e.waitEventsSettled(ctx, ns); err != nil {
		return memory{}, err
	}
	m, err := processMemory(pid)
	if err != nil {
		return memory{}, err
	}
	return m, e.deletePods(ctx, ns)
}
