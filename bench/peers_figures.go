package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
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

// createToUngateArms is takeTurns with each time running from the start of the create
// call, not its return: what a user waits between `kubectl create` and a pod the
// scheduler may place.
func (e *env) createToUngateArms(ctx context.Context, timers []*createTimer, samples int) ([][]time.Duration, error) {
	for _, t := range timers {
		t.fromCall = true
	}
	return e.takeTurns(ctx, timers, samples)
}

// createToUngateQuotagateAndBare measures three arms taking turns: quotagate's gate added
// by its gate policy (what admission.mode auto picks on this API server), by its webhook
// (served in this process), each in a namespace whose Budget has room for every pod,
// and the bare client's: pods created with the baseline gate, which a bare watch removes
// as soon as it reads the pod. It returns the three arms' samples in that order.
func (e *env) createToUngateQuotagateAndBare(ctx context.Context, samples int) (out [3][]time.Duration, err error) {
	var (
		timers []*createTimer
		undos  []func() error
	)
	defer func() {
		for _, t := range timers {
			t.pw.stop()
		}
		for _, undo := range undos {
			err = errors.Join(err, undo())
		}
	}()
	for _, m := range []admissionMode{policyMode(), webhookMode()} {
		t, undo, aerr := e.quotagateCreateArm(ctx, m)
		if aerr != nil {
			return out, aerr
		}
		timers, undos = append(timers, t), append(undos, undo)
	}
	ns, err := e.newNamespace(ctx, "c2u-bare", false)
	if err != nil {
		return out, err
	}
	wctx, cancel := context.WithCancel(ctx)
	watcher, err := e.startBareWatcher(wctx, ns, false)
	if err != nil {
		cancel()
		return out, err
	}
	undos = append(undos, func() error {
		cancel()
		return <-watcher
	})
	t, err := e.newCreateTimer(ctx, ns, baselineGate, []string{baselineGate, holdGate})
	if err != nil {
		return out, err
	}
	timers = append(timers, t)
	arms, err := e.createToUngateArms(ctx, timers, samples)
	if err != nil {
		return out, err
	}
	copy(out[:], arms)
	return out, nil
}

// quotagateCreateArm is a namespace whose Budget has room for every pod, with quotagate's
// gate added at admission in mode m, and a timer of its creates. undo unregisters m.
func (e *env) quotagateCreateArm(ctx context.Context, m admissionMode) (_ *createTimer, undo func() error, err error) {
	ns, err := e.newNamespace(ctx, "c2u-qg-"+m.Name, true)
	if err != nil {
		return nil, nil, err
	}
	if err := e.createBudget(ctx, ns, "1000"); err != nil {
		return nil, nil, err
	}
	if undo, err = m.register(ctx, e, ns); err != nil {
		return nil, nil, err
	}
	t, err := e.newCreateTimer(ctx, ns, v1alpha1.SchedulingGate, []string{holdGate})
	if err != nil {
		return nil, nil, errors.Join(err, undo())
	}
	return t, undo, nil
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
	pw, err := watchPods(ctx, e.client, ns, kueueGate)
	if err != nil {
		return nil, err
	}
	defer pw.stop()
	t := &createTimer{e: e, ns: ns, gate: kueueGate, spec: kueueSpec(podSpec{prefix: "p", cpu: "10m", gates: []string{holdGate}}), pw: pw}
	arms, err := e.createToUngateArms(ctx, []*createTimer{t}, samples)
	if err != nil {
		return nil, err
	}
	return arms[0], nil
}

// parkedMemory creates n gated pods behind a Budget with no room, waits until the manager
// counts them all, and returns the resident memory of pid then. While the pods are still
// there it calls also (nil: nothing), for another process's memory with the same pods.
func (e *env) parkedMemory(ctx context.Context, n, pid int, also func(context.Context) error) (memory, error) {
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
	if also != nil {
		if err := also(ctx); err != nil {
			return memory{}, err
		}
	}
	return m, e.deletePods(ctx, ns)
}
