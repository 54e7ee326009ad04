package figures

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/bench/report"
)

// reactionResult is the reaction figure: latency samples in milliseconds.
type reactionResult struct {
	Quotagate []float64 `json:"quotagateMillis"`
	Baseline  []float64 `json:"baselineMillis"`
	// Flavors is how many Flavors the flavored chain's budget is split over (0: no such
	// arm), and Flavored its samples (ReactionOverFlavors).
	Flavors  int       `json:"flavors,omitempty"`
	Flavored []float64 `json:"flavoredMillis,omitempty"`
}

// succeed marks a pod Succeeded through the status subresource, as a kubelet would.
func (e *Env) succeed(ctx context.Context, ns, name string) error {
	_, err := e.Client.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType,
		[]byte(`{"status":{"phase":"Succeeded"}}`), metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("marking %s/%s Succeeded: %w", ns, name, err)
	}
	return nil
}

// ChainLatencies runs reps rounds on a namespace where one pod at a time is admitted:
// each round marks the admitted pod Succeeded and measures, from the watch, the time
// from that status event to the next pod's ungate event.
func (e *Env) ChainLatencies(ctx context.Context, ns string, pw *PodWatch, reps int) ([]time.Duration, error) {
	return e.chainFrom(ctx, ns, pw, 0, reps)
}

// chainFrom is ChainLatencies where the chain starts at the from-th pod released: the
// from pods before it hold quota and never end.
func (e *Env) chainFrom(ctx context.Context, ns string, pw *PodWatch, from, reps int) ([]time.Duration, error) {
	var out []time.Duration
	for i := range reps {
		if err := e.pause(ctx); err != nil {
			return nil, err
		}
		j := from + i
		pw.Mu.Lock()
		cur := pw.Order[j]
		pw.Mu.Unlock()
		if err := e.succeed(ctx, ns, cur); err != nil {
			return nil, err
		}
		err := pw.WaitFor(ctx, "the next pod to be released", func(pw *PodWatch) bool {
			_, done := pw.terminal[cur]
			return done && len(pw.Order) >= j+2
		})
		if err != nil {
			return nil, err
		}
		pw.Mu.Lock()
		if n := len(pw.Order); n > j+2 {
			pw.Mu.Unlock()
			return nil, fmt.Errorf("%d pods released after %d ended: the budget admits one at a time", n-from, i+1)
		}
		out = append(out, pw.Ungated[pw.Order[j+1]].Sub(pw.terminal[cur]))
		pw.Mu.Unlock()
	}
	return out, nil
}

// ReactionByQuotagate: a Budget of one CPU, pods of one CPU each, reps+1 of them.
func (e *Env) ReactionByQuotagate(ctx context.Context, reps int) ([]time.Duration, error) {
	ns, err := e.NewNamespace(ctx, "reaction-qg", true)
	if err != nil {
		return nil, err
	}
	return e.ReactionInNamespace(ctx, ns, reps)
}

// ReactionInNamespace runs the quotagate chain in ns, an opted-in namespace with a
// ServiceAccount and nothing else yet.
func (e *Env) ReactionInNamespace(ctx context.Context, ns string, reps int) ([]time.Duration, error) {
	return e.ReactionBehind(ctx, ns, 0, reps)
}

// ReactionBehind is ReactionInNamespace with depth more pods queued behind the chain's:
// every round's next pod is the head of a queue of at least depth pods.
func (e *Env) ReactionBehind(ctx context.Context, ns string, depth, reps int) ([]time.Duration, error) {
	if err := e.CreateBudget(ctx, ns, "1"); err != nil {
		return nil, err
	}
	pw, err := WatchPods(ctx, e.Client, ns, v1alpha1.SchedulingGate)
	if err != nil {
		return nil, err
	}
	defer pw.Stop()
	spec := PodSpec{Prefix: "p", CPU: "1", Gates: []string{v1alpha1.SchedulingGate, HoldGate}}
	if err := e.CreatePods(ctx, ns, spec, 0, depth+reps+1); err != nil {
		return nil, err
	}
	if err := e.WaitGated(ctx, ns, depth+reps); err != nil {
		return nil, err
	}
	// The budget's status may count the gated pods before the watch shows the first
	// one admitted (a loaded machine did): the chain starts from that one.
	if err := pw.WaitFor(ctx, "the chain's first pod to be admitted", func(pw *PodWatch) bool { return len(pw.Order) >= 1 }); err != nil {
		return nil, err
	}
	out, err := e.ChainLatencies(ctx, ns, pw, reps)
	if err != nil {
		return nil, err
	}
	return out, e.DeletePods(ctx, ns)
}

// ReactionByBareClient: the same chain, where the reacting controller is a bare watch
// that ungates the next pod as soon as it reads a pod's terminal status.
func (e *Env) ReactionByBareClient(ctx context.Context, reps int) ([]time.Duration, error) {
	return e.BareReactionBehind(ctx, "reaction-bare", 0, reps)
}

// BareReactionBehind is ReactionByBareClient in a namespace named after what, with depth
// more pods queued behind the chain's (ReactionBehind).
func (e *Env) BareReactionBehind(ctx context.Context, what string, depth, reps int) ([]time.Duration, error) {
	ns, err := e.NewNamespace(ctx, what, false)
	if err != nil {
		return nil, err
	}
	pw, err := WatchPods(ctx, e.Client, ns, BaselineGate)
	if err != nil {
		return nil, err
	}
	defer pw.Stop()
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	reactor, err := e.startReactor(rctx, ns, depth+reps+1)
	if err != nil {
		return nil, err
	}
	spec := PodSpec{Prefix: "p", CPU: "1", Gates: []string{BaselineGate, HoldGate}}
	if err := e.CreatePods(ctx, ns, spec, 0, depth+reps+1); err != nil {
		return nil, err
	}
	if err := pw.WaitFor(ctx, "the first pod to be released", func(pw *PodWatch) bool { return len(pw.Order) == 1 }); err != nil {
		return nil, err
	}
	out, err := e.ChainLatencies(ctx, ns, pw, reps)
	if err != nil {
		return nil, err
	}
	cancel()
	if err := <-reactor; err != nil {
		return nil, err
	}
	return out, e.DeletePods(ctx, ns)
}

// startReactor watches ns; once it has seen all n pods it ungates the first, and after
// that the next one each time a pod turns terminal. It reports its error, or nil when
// ctx ends, on the returned channel.
func (e *Env) startReactor(ctx context.Context, ns string, n int) (<-chan error, error) {
	w, err := resumingWatch(ctx, e.Client, ns)
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() {
		defer w.Stop()
		var queue []*corev1.Pod
		released := 0
		ended := map[string]bool{}
		release := func() error {
			if released >= len(queue) {
				return nil
			}
			released++
			return bareUngateOne(ctx, e.bare, queue[released-1], BaselineGate)
		}
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			var err error
			switch {
			case ev.Type == watch.Added:
				queue = append(queue, pod)
				if len(queue) == n {
					err = release()
				}
			case ev.Type == watch.Modified && !ended[pod.Name] &&
				(pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed):
				ended[pod.Name] = true
				err = release()
			}
			if err != nil && ctx.Err() == nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	return done, nil
}

// measureReaction runs the quotagate chain, then with flavors > 0 the flavored one,
// then the bare client's.
func (e *Env) measureReaction(ctx context.Context, reps, flavors int) (reactionResult, error) {
	q, err := e.ReactionByQuotagate(ctx, reps)
	if err != nil {
		return reactionResult{}, fmt.Errorf("quotagate: %w", err)
	}
	r := reactionResult{Quotagate: report.Millis(q), Flavors: flavors}
	if flavors > 0 {
		f, err := e.ReactionOverFlavors(ctx, flavors, reps)
		if err != nil {
			return reactionResult{}, fmt.Errorf("quotagate with %d flavors: %w", flavors, err)
		}
		r.Flavored = report.Millis(f)
	}
	b, err := e.ReactionByBareClient(ctx, reps)
	if err != nil {
		return reactionResult{}, fmt.Errorf("bare client: %w", err)
	}
	r.Baseline = report.Millis(b)
	return r, nil
}
