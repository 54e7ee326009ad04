package controller

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/quotagate/quotagate/internal/loglevel"
	"github.com/quotagate/quotagate/pkg/quota"
)

// Preemption: the core decides which admitted pods must go (quota.AdmissionQueue.Preemptions); the
// controller evicts them through the Eviction API, so PodDisruptionBudgets are
// honoured. An eviction a PDB refuses makes the core choose other victims first
// (quota.EvictionBlocked); with none left, the victim is tried again, and deleted
// despite the PDB only when the waiting pod's budget sets
// spec.preemption.blockedTimeout and that long has passed since the first refusal:
// the only pod deletion the manager makes.
//
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups="",resources=pods,verbs=delete

// Event reasons of preemption.
const (
	eventPreempted         = "Preempted"
	eventPreempting        = "Preempting"
	eventPreemptionBlocked = "PreemptionBlocked"
	eventPreemptionForced  = "PreemptionForced"
)

// The tries of an eviction that failed are spaced from evictRetryFirst, doubling up to
// evictRetryMax: a PodDisruptionBudget that allows no disruption now may allow one once
// another of its pods is ready again.
const (
	evictRetryFirst = time.Second
	evictRetryMax   = time.Minute
)

// evictor carries out the core's preemptions: one goroutine per victim, under the
// admission loop, which starts them (start) each round. It shares nothing with the
// rest of the controller but the core, the API client and the event recorder.
type evictor struct {
	core     *quota.AdmissionQueue
	client   client.Client
	recorder recorder.EventRecorder
	metrics  *metrics
	clock    clock.Clock
	// timeout bounds each request (the manager's --ungate-timeout).
	timeout time.Duration
	// wake asks the admission loop for another round; readFresh reads a pod from the
	// API server itself (Controller.readFresh).
	wake      func()
	readFresh func(ctx context.Context, ref quota.PodRef) (*corev1.Pod, bool, error)

	// mu guards evicting: the victims whose eviction is under way, each with the next
	// decision for it queued, if any.
	mu       sync.Mutex
	evicting map[types.UID]*quota.Preemption
}

// newEvictor returns the evictor of c, once c has its client and recorder.
func (c *Controller) newEvictor() *evictor {
	return &evictor{
		core: c.core, client: c.client, recorder: c.recorder, metrics: c.metrics,
		clock: c.opts.Clock, timeout: c.opts.UngateTimeout,
		wake: c.wake, readFresh: c.readFresh,
		evicting: map[types.UID]*quota.Preemption{},
	}
}

// start starts an eviction for each preemption the core decided. A victim whose
// eviction is under way gets the new decision queued: the goroutine at work on it takes
// it up when it is done with the old one.
func (e *evictor) start(ctx context.Context, wg *sync.WaitGroup) {
	for _, p := range e.core.Preemptions() {
		uid := p.Victim.UID
		e.mu.Lock()
		_, busy := e.evicting[uid]
		if busy {
			e.evicting[uid] = &p
		} else {
			e.evicting[uid] = nil
		}
		e.mu.Unlock()
		if busy {
			continue
		}
		wg.Go(func() {
			for next := &p; next != nil; {
				e.preempt(ctx, *next)
				e.mu.Lock()
				if next = e.evicting[uid]; next == nil {
					delete(e.evicting, uid)
				} else {
					e.evicting[uid] = nil
				}
				e.mu.Unlock()
			}
		})
	}
}

// preempt evicts the victim of one preemption, trying again while the core still needs
// it (PreemptionNeeded): until the eviction is accepted, the victim or the pod it makes
// room for is gone, or the manager stops leading. An eviction that
// a PodDisruptionBudget refuses is reported (events on both pods, a metric) and tried
// again later, unless other victims are chosen in its place, or the budget's
// blockedTimeout lets it be deleted (forceEvict).
func (e *evictor) preempt(ctx context.Context, p quota.Preemption) {
	logger := log.FromContext(ctx).WithValues("pod", klog.KRef(p.Victim.Namespace, p.Victim.Name),
		"preemptor", klog.KRef(p.Preemptor.Namespace, p.Preemptor.Name), "reason", p.Reason)
	// Each event names the other pod as related too: events of one pod that differ only
	// in their message would otherwise be merged into one series, and a pod that
	// preempts two victims, one after the other, would show only the first.
	victim, preemptor := podRef(p.Victim), podRef(p.Preemptor)
	// A pod of another namespace is neither named nor related: whoever reads
	// a pod's events may not read the other namespace (docs/guarantees.md,
	// "Tenants see only their own").
	var relatedOfVictim, relatedOfPreemptor runtime.Object
	if p.Victim.Namespace == p.Preemptor.Namespace {
		relatedOfVictim, relatedOfPreemptor = preemptor, victim
	}
	reported := false
	for retry := evictRetryFirst; ; retry = min(2*retry, evictRetryMax) {
		if !e.core.PreemptionNeeded(p.Victim.UID) {
			logger.V(loglevel.Details).Info("Preemption no longer needed")
			e.wake() // the core may decide again for the pods that counted on it
			return
		}
		err := e.evict(ctx, p.Victim)
		evicted := err == nil
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && !apierrors.IsTooManyRequests(err) {
			// An error does not prove that the eviction was not applied (a timeout, a
			// lost answer): the victim read fresh says whether it is on its way out.
			evicted = e.evictionApplied(ctx, p.Victim)
		}
		switch {
		case evicted:
			if err != nil {
				e.metrics.preemptionsBlocked.WithLabelValues(string(p.Reason)).Inc()
				logger.V(loglevel.Events).Info("Eviction answered with an error, but applied", "error", err.Error())
			}
			e.core.Evicted(p.Victim.UID)
			e.metrics.preemptions.WithLabelValues(string(p.Reason)).Inc()
			logger.V(loglevel.Events).Info("Preempted", "budget", p.Budget.String(), "from", p.From.String())
			if noPreemptor(p) {
				e.recorder.Eventf(victim, nil, corev1.EventTypeNormal, eventPreempted, "Evict",
					"Evicted by %s: %s", p.By(p.Victim.Namespace), p.VictimMessage)
			} else {
				e.recorder.Eventf(victim, relatedOfVictim, corev1.EventTypeNormal, eventPreempted, "Evict",
					"Evicted by %s to make room for %s: %s", p.By(p.Victim.Namespace), quota.PodFor(p.Victim.Namespace, p.Preemptor), p.VictimMessage)
				e.recorder.Eventf(preemptor, relatedOfPreemptor, corev1.EventTypeNormal, eventPreempting, "Evict",
					"Evicted %s by %s to make room: %s", quota.PodFor(p.Preemptor.Namespace, p.Victim), p.By(p.Preemptor.Namespace), p.PreemptorMessage)
			}
			e.wake()
			return
		case apierrors.IsNotFound(err):
			// Gone (ended, or deleted by someone else): nothing to evict, nothing to
			// report, but the core counts it as leaving until its deletion is seen.
			e.core.Evicted(p.Victim.UID)
			return
		case apierrors.IsConflict(err):
			// Another pod has its name now (the UID precondition): ours is gone too,
			// and the pod the informer sees next is not to be evicted.
			return
		case apierrors.IsTooManyRequests(err):
			e.metrics.preemptionsBlocked.WithLabelValues(string(p.Reason)).Inc()
			retryIt, since := e.core.EvictionBlocked(p.Victim.UID)
			if !retryIt {
				// Other victims make room without it (their evictions start with the
				// next round), or it is no longer needed.
				logger.V(loglevel.Events).Info("Eviction refused; other victims chosen instead", "error", err.Error())
				e.wake()
				return
			}
			if p.BlockedTimeout > 0 {
				if left := p.BlockedTimeout - e.clock.Since(since); left <= 0 {
					if e.forceEvict(ctx, p, victim, preemptor, relatedOfVictim, relatedOfPreemptor) {
						return
					}
				} else {
					retry = min(retry, left)
				}
			}
			if !reported && noPreemptor(p) {
				reported = true
				e.recorder.Eventf(victim, nil, corev1.EventTypeWarning, eventPreemptionBlocked, "Evict",
					"Eviction by %s refused, will retry: %s", p.By(p.Victim.Namespace), err.Error())
			}
			if !reported {
				reported = true
				msg := err.Error()
				e.recorder.Eventf(victim, relatedOfVictim, corev1.EventTypeWarning, eventPreemptionBlocked, "Evict",
					"Eviction by %s to make room for %s refused, will retry: %s", p.By(p.Victim.Namespace), quota.PodFor(p.Victim.Namespace, p.Preemptor), msg)
				// The refusal names the victim's PodDisruptionBudget: said to the victim's
				// namespace only.
				if p.Victim.Namespace != p.Preemptor.Namespace {
					msg = "refused by a PodDisruptionBudget"
				}
				e.recorder.Eventf(preemptor, relatedOfPreemptor, corev1.EventTypeWarning, eventPreemptionBlocked, "Evict",
					"Eviction of %s by %s refused, will retry: %s", quota.PodFor(p.Preemptor.Namespace, p.Victim), p.By(p.Preemptor.Namespace), msg)
			}
			logger.V(loglevel.Events).Info("Eviction refused, will retry", "error", err.Error())
		default:
			e.metrics.preemptionsBlocked.WithLabelValues(string(p.Reason)).Inc()
			logger.Error(err, "Eviction failed, will retry")
		}
		select {
		case <-ctx.Done():
			return
		case <-e.clock.After(retry):
		}
	}
}

// forceEvict deletes a victim whose PodDisruptionBudget has refused its eviction for
// longer than the waiting pod's budget allows (spec.preemption.blockedTimeout), with
// no other victim left: the budget owner chose its hard over the borrower's PDB. The
// delete is preconditioned on the victim's UID. It reports whether the victim is gone
// or on its way out.
func (e *evictor) forceEvict(ctx context.Context, p quota.Preemption, victim, preemptor, relatedOfVictim, relatedOfPreemptor runtime.Object) bool {
	logger := log.FromContext(ctx).WithValues("pod", klog.KRef(p.Victim.Namespace, p.Victim.Name))
	dctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	uid := p.Victim.UID
	err := e.client.Delete(dctx, podRef(p.Victim), &client.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && !e.evictionApplied(ctx, p.Victim) {
		logger.Error(err, "Deleting a victim past its blockedTimeout failed, will retry")
		return false
	}
	e.core.Evicted(p.Victim.UID)
	e.metrics.preemptions.WithLabelValues(string(p.Reason)).Inc()
	logger.V(loglevel.Events).Info("Deleted despite its PodDisruptionBudget", "budget", p.Budget.String(), "blockedTimeout", p.BlockedTimeout)
	if noPreemptor(p) {
		e.recorder.Eventf(victim, nil, corev1.EventTypeWarning, eventPreemptionForced, "Delete",
			"Deleted by %s despite its PodDisruptionBudget, which refused its eviction for %s (the blockedTimeout of %s): %s",
			p.By(p.Victim.Namespace), p.BlockedTimeout, quota.BudgetFor(p.Victim.Namespace, p.Budget), p.VictimMessage)
		e.wake()
		return true
	}
	e.recorder.Eventf(victim, relatedOfVictim, corev1.EventTypeWarning, eventPreemptionForced, "Delete",
		"Deleted by %s despite its PodDisruptionBudget, which refused its eviction for %s (the blockedTimeout of %s), to make room for %s: %s",
		p.By(p.Victim.Namespace), p.BlockedTimeout, quota.BudgetFor(p.Victim.Namespace, p.Budget), quota.PodFor(p.Victim.Namespace, p.Preemptor), p.VictimMessage)
	e.recorder.Eventf(preemptor, relatedOfPreemptor, corev1.EventTypeWarning, eventPreemptionForced, "Delete",
		"Deleted %s by %s despite its PodDisruptionBudget after blockedTimeout %s: %s",
		quota.PodFor(p.Preemptor.Namespace, p.Victim), p.By(p.Preemptor.Namespace), p.BlockedTimeout, p.PreemptorMessage)
	e.wake()
	return true
}

// evict asks the API server to evict the pod, only if it is still the pod the core
// chose (a UID precondition: never a new pod that took its name).
func (e *evictor) evict(ctx context.Context, ref quota.PodRef) error {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	pod := podRef(ref)
	uid := ref.UID
	return e.client.SubResource("eviction").Create(ctx, pod, &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}},
	})
}

// evictionApplied reports whether an eviction whose answer was an error took effect
// after all: the victim, read fresh, is gone or terminating. When the read fails too,
// it reports false, and the next try finds out (evicting a terminating pod is
// accepted, a gone one is not found).
func (e *evictor) evictionApplied(ctx context.Context, ref quota.PodRef) bool {
	pod, gone, err := e.readFresh(ctx, ref)
	return err == nil && (gone || pod.DeletionTimestamp != nil)
}

// noPreemptor reports whether a preemption makes room for no pod: a budget brought back
// within its hard after a window ended (quota.PreemptWindowEnd).
func noPreemptor(p quota.Preemption) bool { return p.Preemptor.UID == "" }

// podRef is a pod object that names the pod, for events and subresources.
func podRef(ref quota.PodRef) *corev1.Pod {
	pod := &corev1.Pod{}
	pod.Namespace, pod.Name, pod.UID = ref.Namespace, ref.Name, ref.UID
	pod.APIVersion, pod.Kind = "v1", "Pod"
	return pod
}
