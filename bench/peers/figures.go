package peers

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/bench/figures"
)

// newKueueNamespace creates a namespace Kueue manages and waits for its default
// ServiceAccount.
func (e *env) newKueueNamespace(ctx context.Context, what string) (string, error) {
	ns, err := e.NewNamespace(ctx, what, false)
	if err != nil {
		return "", err
	}
	n, err := e.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[kueueNamespaceLabel] = "true"
	if _, err := e.Client.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		return "", fmt.Errorf("labelling namespace %s for Kueue: %w", ns, err)
	}
	return ns, nil
}

// releaseByKueue is releaseByQuotagate for Kueue: n plain pods in a LocalQueue whose
// ClusterQueue has no cpu quota, then the quota raised to fit them all; the time runs
// from that write to the last pod's ungate event. rss, when set, is called with the pods
// pending, before the raise.
func (e *env) releaseByKueue(ctx context.Context, o figures.ReleaseOpts, rss func() error) (figures.ReleaseRun, error) {
	var run figures.ReleaseRun
	ns, err := e.newKueueNamespace(ctx, "release-kueue")
	if err != nil {
		return run, err
	}
	if err := e.kueueQueues(ctx, ns, "0"); err != nil {
		return run, err
	}
	pw, err := figures.WatchPods(ctx, e.Client, ns, kueueGate)
	if err != nil {
		return run, err
	}
	defer pw.Stop()
	spec := figures.PodSpec{Prefix: "p", CPU: fmt.Sprintf("%dm", figures.PodCPUMilli), Gates: []string{figures.HoldGate}}
	if err := e.CreatePods(ctx, ns, kueueSpec(spec), 0, o.N); err != nil {
		return run, err
	}
	if err := e.waitKueuePending(ctx, ns, o.N); err != nil {
		return run, err
	}
	if _, err := e.WaitEventsSettled(ctx, ns); err != nil {
		return run, err
	}
	if rss != nil {
		if err := rss(); err != nil {
			return run, err
		}
	}
	before := e.Meter.Sample()
	start := time.Now()
	if err := e.setKueueCPU(ctx, ns, fmt.Sprintf("%dm", o.N*figures.PodCPUMilli)); err != nil {
		return run, err
	}
	if err := pw.WaitFor(ctx, "Kueue to release every pod", o.Done); err != nil {
		return run, err
	}
	run.CPU = e.Meter.Since(before)
	run.Took, run.First = o.Times(pw, start)
	return run, e.DeletePods(ctx, ns)
}

// reactionByKueue is reactionByQuotagate for Kueue: a ClusterQueue of one CPU, pods of
// one CPU each, in a namespace named after what, with depth more pods queued behind the
// chain's (figures.ReactionBehind).
func (e *env) reactionByKueue(ctx context.Context, what string, depth, reps int) ([]time.Duration, error) {
	ns, err := e.newKueueNamespace(ctx, what)
	if err != nil {
		return nil, err
	}
	if err := e.kueueQueues(ctx, ns, "1"); err != nil {
		return nil, err
	}
	pw, err := figures.WatchPods(ctx, e.Client, ns, kueueGate)
	if err != nil {
		return nil, err
	}
	defer pw.Stop()
	spec := kueueSpec(figures.PodSpec{Prefix: "p", CPU: "1", Gates: []string{figures.HoldGate}})
	if err := e.CreatePods(ctx, ns, spec, 0, depth+reps+1); err != nil {
		return nil, err
	}
	if err := e.waitKueuePending(ctx, ns, depth+reps); err != nil {
		return nil, err
	}
	if err := pw.WaitFor(ctx, "Kueue to release the first pod", func(pw *figures.PodWatch) bool { return len(pw.Order) == 1 }); err != nil {
		return nil, err
	}
	out, err := e.ChainLatencies(ctx, ns, pw, reps)
	if err != nil {
		return nil, err
	}
	return out, e.DeletePods(ctx, ns)
}

// createToUngateArms is takeTurns with each time running from the start of the create
// call, not its return: what a user waits between `kubectl create` and a pod the
// scheduler may place.
func (e *env) createToUngateArms(ctx context.Context, timers []*figures.CreateTimer, samples int) ([][]time.Duration, error) {
	for _, t := range timers {
		t.FromCall = true
	}
	return e.TakeTurns(ctx, timers, samples)
}

// createToUngateQuotagateAndBare measures three arms taking turns: quotagate's gate added
// by its gate policy (what admission.mode auto picks on this API server), by its webhook
// (served in this process), each in a namespace whose Budget has room for every pod,
// and the bare client's: pods created with the baseline gate, which a bare watch removes
// as soon as it reads the pod. It returns the three arms' samples in that order.
func (e *env) createToUngateQuotagateAndBare(ctx context.Context, samples int) (out [3][]time.Duration, err error) {
	var (
		timers []*figures.CreateTimer
		undos  []func() error
	)
	defer func() {
		for _, t := range timers {
			t.Watch.Stop()
		}
		for _, undo := range undos {
			err = errors.Join(err, undo())
		}
	}()
	for _, m := range []figures.AdmissionMode{figures.PolicyMode(), figures.WebhookMode()} {
		t, undo, aerr := e.quotagateCreateArm(ctx, m)
		if aerr != nil {
			return out, aerr
		}
		timers, undos = append(timers, t), append(undos, undo)
	}
	ns, err := e.NewNamespace(ctx, "c2u-bare", false)
	if err != nil {
		return out, err
	}
	wctx, cancel := context.WithCancel(ctx)
	watcher, err := e.StartBareWatcher(wctx, ns, false)
	if err != nil {
		cancel()
		return out, err
	}
	undos = append(undos, func() error {
		cancel()
		return <-watcher
	})
	t, err := e.NewCreateTimer(ctx, ns, figures.BaselineGate, []string{figures.BaselineGate, figures.HoldGate})
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
func (e *env) quotagateCreateArm(ctx context.Context, m figures.AdmissionMode) (_ *figures.CreateTimer, undo func() error, err error) {
	ns, err := e.NewNamespace(ctx, "c2u-qg-"+m.Name, true)
	if err != nil {
		return nil, nil, err
	}
	if err := e.CreateBudget(ctx, ns, "1000"); err != nil {
		return nil, nil, err
	}
	if undo, err = m.Register(ctx, e.Env, ns); err != nil {
		return nil, nil, err
	}
	t, err := e.NewCreateTimer(ctx, ns, v1alpha1.SchedulingGate, []string{figures.HoldGate})
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
	pw, err := figures.WatchPods(ctx, e.Client, ns, kueueGate)
	if err != nil {
		return nil, err
	}
	defer pw.Stop()
	t := &figures.CreateTimer{Env: e.Env, NS: ns, Gate: kueueGate, Spec: kueueSpec(figures.PodSpec{Prefix: "p", CPU: "10m", Gates: []string{figures.HoldGate}}), Watch: pw}
	arms, err := e.createToUngateArms(ctx, []*figures.CreateTimer{t}, samples)
	if err != nil {
		return nil, err
	}
	return arms[0], nil
}

// parkedMemory creates n gated pods behind a Budget with no room, waits until the manager
// counts them all, and returns the resident memory of pid then. While the pods are still
// there it calls also (nil: nothing), for another process's memory with the same pods.
func (e *env) parkedMemory(ctx context.Context, n, pid int, also func(context.Context) error) (figures.Memory, error) {
	ns, err := e.NewNamespace(ctx, "memory-qg", true)
	if err != nil {
		return figures.Memory{}, err
	}
	if err := e.CreateBudget(ctx, ns, "0"); err != nil {
		return figures.Memory{}, err
	}
	spec := figures.PodSpec{Prefix: "p", CPU: fmt.Sprintf("%dm", figures.PodCPUMilli), Gates: []string{v1alpha1.SchedulingGate, figures.HoldGate}}
	if err := e.CreatePods(ctx, ns, spec, 0, n); err != nil {
		return figures.Memory{}, err
	}
	if err := e.WaitGated(ctx, ns, n); err != nil {
		return figures.Memory{}, err
	}
	if _, err := e.WaitEventsSettled(ctx, ns); err != nil {
		return figures.Memory{}, err
	}
	m, err := figures.ProcessMemory(pid)
	if err != nil {
		return figures.Memory{}, err
	}
	if also != nil {
		if err := also(ctx); err != nil {
			return figures.Memory{}, err
		}
	}
	return m, e.DeletePods(ctx, ns)
}
