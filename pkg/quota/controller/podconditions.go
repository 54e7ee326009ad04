package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/loglevel"
	"github.com/quotagate/quotagate/pkg/quota"
)

// The pod condition v1alpha1.PodConditionAdmitted says why a gated pod waits, as
// kube-scheduler's PodScheduled condition says why it cannot place a pod: status False,
// the reason's code as its reason and the reason's lasting sentence (no queue position,
// no free amount) as its message. Events tell the history; the condition is what holds
// now, so `kubectl describe pod` shows the current reason among the Conditions.
//
// The condition is written, with a patch of pods/status, to the pods that get Waiting
// events (the head of each budget's queue) when their reason changes, and kept current
// on every pod that carries it; it is removed once the pod is no longer gated. A pod
// that never reached the head of a queue never carries it, so it costs no write.
//
// Writes are level-based: podConditions holds, per pod, what the pod carries (as last
// written, or as the informer first showed it) and what it should carry, and one
// goroutine writes the difference, one pod at a time, latest wish first. A failed or
// lost write leaves the difference, and is retried after a backoff; the ungate never
// waits for it.

// condition is what the quotagate condition of a pod says (reason and message); nil
// stands for no condition.
type condition struct {
	reason, message string
}

func sameCondition(a, b *condition) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// conditionOf returns the quotagate condition a pod carries while it waits (status
// False), or nil.
func conditionOf(pod *corev1.Pod) *condition {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1alpha1.PodConditionAdmitted && c.Status == corev1.ConditionFalse {
			return &condition{reason: c.Reason, message: c.Message}
		}
	}
	return nil
}

// Backoff of a pod whose condition write failed.
const (
	conditionRetryMin = 500 * time.Millisecond
	conditionRetryMax = 30 * time.Second
)

// podConditions writes the quotagate condition of pods (see above).
type podConditions struct {
	client client.Client
	clock  clock.Clock
	kick   chan struct{}

	// mu guards pods and dirty.
	mu sync.Mutex
	// pods are the pods that carry the condition or should: dropped once neither.
	pods map[types.UID]*podCondition
	// dirty are the pods of pods whose condition may differ from their wish.
	dirty map[types.UID]struct{}
}

// podCondition is one pod's condition: what it carries (onPod) and should (want).
type podCondition struct {
	ref   quota.PodRef
	onPod *condition
	want  *condition
	// failures counts the writes that failed in a row; retryAt is when to try again.
	failures int
	retryAt  time.Time
}

func newPodConditions(c client.Client, clk clock.Clock) *podConditions {
	return &podConditions{client: c, clock: clk, kick: make(chan struct{}, 1), pods: map[types.UID]*podCondition{}, dirty: map[types.UID]struct{}{}}
}

// set asks for the pod to carry want (nil: no condition).
func (w *podConditions) set(ref quota.PodRef, want *condition) {
	w.mu.Lock()
	defer w.mu.Unlock()
	pc, ok := w.pods[ref.UID]
	if !ok {
		if want == nil {
			return // carries none, as far as this manager knows
		}
		pc = &podCondition{ref: ref}
		w.pods[ref.UID] = pc
	}
	if sameCondition(pc.want, want) {
		return
	}
	pc.want = want
	w.dirty[ref.UID] = struct{}{}
	w.signal()
}

// observe records what the informer shows of a pod: the condition it carries, taken
// when this manager meets the pod (a previous leader may have written it), and whether
// it still waits; a pod that no longer waits should carry none.
func (w *podConditions) observe(ref quota.PodRef, onPod *condition, waiting bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	pc, ok := w.pods[ref.UID]
	if !ok {
		if onPod == nil {
			return
		}
		// The pod carries what it should until this manager decides otherwise.
		pc = &podCondition{ref: ref, onPod: onPod, want: onPod}
		w.pods[ref.UID] = pc
	}
	if !waiting && pc.want != nil {
		pc.want = nil
		w.dirty[ref.UID] = struct{}{}
		w.signal()
	}
}

// forget drops a deleted pod.
func (w *podConditions) forget(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pods, uid)
	delete(w.dirty, uid)
}

// carries reports whether the pod carries the condition, or is to.
func (w *podConditions) carries(uid types.UID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	pc, ok := w.pods[uid]
	return ok && (pc.onPod != nil || pc.want != nil)
}

func (w *podConditions) signal() { signal(w.kick) }

// run writes conditions until ctx ends (the leader only).
func (w *podConditions) run(ctx context.Context) {
	timer := w.clock.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := w.writeDue(ctx)
		resetTimer(timer, next)
		select {
		case <-ctx.Done():
			return
		case <-w.kick:
		case <-timer.C():
		}
	}
}

// writeDue writes every pod whose condition differs from its wish and is not backing
// off, and returns how long until the next backoff ends (an hour when none waits).
func (w *podConditions) writeDue(ctx context.Context) time.Duration {
	for ctx.Err() == nil {
		pc, want, wait, ok := w.nextDue()
		if !ok {
			return wait
		}
		err := w.write(ctx, pc.ref, pc.onPod, want)
		w.done(ctx, pc.ref, want, err)
	}
	return time.Hour
}

// nextDue returns a pod to write and what to write, or false and how long until the
// first backoff ends. Pods that are clean are dropped on the way.
func (w *podConditions) nextDue() (pc podCondition, want *condition, wait time.Duration, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	wait = time.Hour
	for uid := range w.dirty {
		p, known := w.pods[uid]
		switch {
		case !known:
			delete(w.dirty, uid)
		case sameCondition(p.onPod, p.want):
			delete(w.dirty, uid)
			if p.onPod == nil {
				delete(w.pods, uid)
			}
		case p.retryAt.After(now):
			wait = min(wait, p.retryAt.Sub(now))
		default:
			return *p, p.want, 0, true
		}
	}
	return podCondition{}, nil, wait, false
}

// done records the outcome of writing want to a pod.
func (w *podConditions) done(ctx context.Context, ref quota.PodRef, want *condition, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	pc, ok := w.pods[ref.UID]
	if !ok {
		return // deleted meanwhile
	}
	switch reason := classify(err); reason {
	case "":
		pc.onPod, pc.failures, pc.retryAt = want, 0, time.Time{}
	case reasonNotFound:
		delete(w.pods, ref.UID)
		delete(w.dirty, ref.UID)
	default:
		// The write may have applied (a lost answer): writing want again is harmless.
		pc.failures++
		backoff := min(conditionRetryMin<<min(pc.failures-1, 16), conditionRetryMax)
		pc.retryAt = w.clock.Now().Add(backoff)
		log.FromContext(ctx).V(loglevel.Events).Info("Writing the pod's condition failed; will retry",
			"pod", klog.KRef(ref.Namespace, ref.Name), "reason", reason, "retryIn", backoff, "err", err.Error())
	}
}

// write patches the pod's status to carry want, given that it carries onPod.
func (w *podConditions) write(ctx context.Context, ref quota.PodRef, onPod, want *condition) error {
	patch, err := conditionPatch(onPod, want, w.clock.Now())
	if err != nil {
		return err
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name}}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return w.client.Status().Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, patch))
}

// conditionPatch is the strategic merge patch of pods/status that makes a pod that
// carries onPod carry want: the condition set (its lastTransitionTime only when it
// appears, since it stays False while the reason changes), or deleted.
func conditionPatch(onPod, want *condition, now time.Time) ([]byte, error) {
	var item map[string]any
	if want == nil {
		item = map[string]any{"type": v1alpha1.PodConditionAdmitted, "$patch": "delete"}
	} else {
		item = map[string]any{
			"type": v1alpha1.PodConditionAdmitted, "status": corev1.ConditionFalse,
			"reason": want.reason, "message": want.message,
		}
		if onPod == nil {
			item["lastTransitionTime"] = metav1.NewTime(now)
		}
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []any{item}}})
	if err != nil {
		return nil, fmt.Errorf("building the condition patch: %w", err)
	}
	return patch, nil
}
