package figures

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/quotagate/quotagate/pkg/gates"
)

// PodWatch watches the pods of one namespace and records when each event arrived: the
// first event that shows a pod without gate, Running, or terminal. Arrival times are
// taken in this process as the event is read, so two of them measure what a user would
// see between two changes, including the API server's watch delivery.
type PodWatch struct {
	gate   string
	cancel context.CancelFunc
	done   chan struct{}

	// Mu guards what the watch has seen, below: hold it to read Err, Ungated, Order or
	// Running.
	Mu       sync.Mutex
	Err      error
	added    int
	Ungated  map[string]time.Time
	Order    []string // pods in the order they lost the gate
	Running  map[string]time.Time
	terminal map[string]time.Time
	changed  chan struct{} // one pending signal at most
}

// resumingWatch watches the pods of ns from now on, and resumes from the last event
// seen if the API server closes the watch (it drops watchers it finds too slow, which a
// busy machine can make this one).
func resumingWatch(ctx context.Context, c kubernetes.Interface, ns string) (watch.Interface, error) {
	pods := c.CoreV1().Pods(ns)
	l, err := pods.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of %s: %w", ns, err)
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, l.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return pods.Watch(ctx, o)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("watching the pods of %s: %w", ns, err)
	}
	return w, nil
}

// WatchPods starts watching ns before the caller creates any pod in it.
func WatchPods(ctx context.Context, c kubernetes.Interface, ns, gate string) (*PodWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	w, err := resumingWatch(ctx, c, ns)
	if err != nil {
		cancel()
		return nil, err
	}
	pw := &PodWatch{
		gate: gate, cancel: cancel, done: make(chan struct{}),
		Ungated: map[string]time.Time{}, Running: map[string]time.Time{}, terminal: map[string]time.Time{},
		changed: make(chan struct{}, 1),
	}
	go func() {
		defer close(pw.done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			at := time.Now()
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				if ev.Type == watch.Error {
					pw.fail(fmt.Errorf("watch of %s: %v", ns, ev.Object))
					return
				}
				continue
			}
			pw.observe(ev.Type, pod, at)
		}
		if ctx.Err() == nil {
			pw.fail(fmt.Errorf("the watch of %s ended early", ns))
		}
	}()
	return pw, nil
}

func (pw *PodWatch) observe(typ watch.EventType, pod *corev1.Pod, at time.Time) {
	pw.Mu.Lock()
	defer pw.Mu.Unlock()
	if typ == watch.Added {
		pw.added++
	}
	if typ != watch.Deleted {
		if _, seen := pw.Ungated[pod.Name]; !seen && !gates.HasGate(pod, pw.gate) {
			pw.Ungated[pod.Name] = at
			pw.Order = append(pw.Order, pod.Name)
		}
		if _, seen := pw.Running[pod.Name]; !seen && pod.Status.Phase == corev1.PodRunning {
			pw.Running[pod.Name] = at
		}
		if _, seen := pw.terminal[pod.Name]; !seen && (pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed) {
			pw.terminal[pod.Name] = at
		}
	}
	pw.signal()
}

func (pw *PodWatch) fail(err error) {
	pw.Mu.Lock()
	defer pw.Mu.Unlock()
	if pw.Err == nil {
		pw.Err = err
	}
	pw.signal()
}

func (pw *PodWatch) signal() {
	select {
	case pw.changed <- struct{}{}:
	default:
	}
}

// waitFor blocks until cond, called with the watch's lock held, holds.
func (pw *PodWatch) WaitFor(ctx context.Context, what string, cond func(pw *PodWatch) bool) error {
	ctx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	for {
		pw.Mu.Lock()
		ok, err := cond(pw), pw.Err
		pw.Mu.Unlock()
		if ok {
			return nil
		}
		if err != nil {
			return err
		}
		select {
		case <-pw.changed:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		}
	}
}

// LastOf is the latest time in m; m must not be empty.
func LastOf(m map[string]time.Time) time.Time {
	var last time.Time
	for _, t := range m {
		if t.After(last) {
			last = t
		}
	}
	return last
}

// FirstOf is the earliest time in m; m must not be empty.
func FirstOf(m map[string]time.Time) time.Time {
	var first time.Time
	for _, t := range m {
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	return first
}

// Ended is a copy of when each pod was first seen Succeeded or Failed, by name.
func (pw *PodWatch) Ended() map[string]time.Time {
	pw.Mu.Lock()
	defer pw.Mu.Unlock()
	return maps.Clone(pw.terminal)
}

func (pw *PodWatch) Stop() {
	pw.cancel()
	<-pw.done
}
