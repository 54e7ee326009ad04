package controller

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/loglevel"
	"github.com/quotagate/quotagate/pkg/gates"
	"github.com/quotagate/quotagate/pkg/quota"
)

// maxFencedTries bounds how often one ungate is re-sent at once, fenced on a newer
// version, after the pod changed under it; beyond that the pod backs off.
const maxFencedTries = 3

// ungate removes the gate of one admitted pod and reports the outcome to the core.
//
// The ResourceClaims the pod is charged for are pinned first (claimPins): a pod whose
// claims are not all pinned is not ungated (NotSent), so it never runs with a claim it
// was not charged for.
//
// Each attempt is fenced: the patch tests the pod's resourceVersion as well as the
// gate, so it can apply only to the version it was built from (gates.UngatePatch).
// When the answer is anything but success, the patch may still have applied (a lost
// response, a timeout, a retry whose test fails because the first try removed the
// gate), so the pod is read fresh from the API server: seen without the gate, it is
// ungated; seen gated at a newer version, the attempt can never apply and the ungate
// is sent again on that version; otherwise the outcome stays unknown and the core keeps
// the charge until it is settled (see quota.AdmissionQueue.Done).
func (c *Controller) ungate(ctx context.Context, a quota.Admission) {
	defer c.wake()
	logger := log.FromContext(ctx).WithValues("pod", klog.KRef(a.Pod.Namespace, a.Pod.Name))
	var nodeLabels map[string]string
	var tolerations []corev1.Toleration
	if a.Flavor != nil {
		logger = logger.WithValues("flavor", a.Flavor.Name)
		nodeLabels, tolerations = a.Flavor.NodeLabels, a.Flavor.Tolerations
	}
	cached, ok := c.cachedPod(a.Pod)
	if !ok {
		// Deleted (and maybe re-created under the same name) since the decision.
		c.core.Done(a.Pod.UID, quota.Gone, "")
		return
	}
	pod, view := cached.patchTarget(), cached.view
	pinned := false
	if len(a.Claims) > 0 {
		c.pins.begin(a.Pod.UID)
		defer c.pins.end(a.Pod.UID, a.Claims)
	}
	// Read before the patch: once the informer shows the pod ungated, it is no longer
	// known as waiting.
	since := c.waits.waitStart(a)
	budgets := keyStrings(a.Budgets)
	for try := 1; ; try++ {
		if !gates.HasGate(pod, c.opts.Gate) {
			// Seen without the gate: an earlier attempt (or someone else) removed it.
			// The view reaches the core through the informer, or through observe.
			c.core.Done(a.Pod.UID, quota.Ungated, "")
			return
		}
		now := c.opts.Clock.Now()
		if !a.Fits(view) {
			// The version to patch has other scheduling directives than the one the core
			// decided on (a gated pod's may change): patched, the pod could run on nodes
			// of a flavor it is not charged on. Nothing is sent; the core decides again on
			// what it asks now (Admission.Fits).
			c.core.Done(a.Pod.UID, quota.NotSent, pod.ResourceVersion)
			logger.V(loglevel.Events).Info("Not ungating the pod: its scheduling directives changed since the decision; deciding again")
			return
		}
		// The cached pod knows whether the real pod has annotations (patchTarget),
		// so the patch adds keys one by one then, never the whole map. It knows its
		// nodeSelector and tolerations too, so the patch adds only what the flavor's
		// are missing.
		patch, _, conflict := gates.UngatePatchOnFlavor(pod, c.opts.Gate, admissionRecord(a, now), nodeLabels, tolerations)
		attempt := pod.ResourceVersion
		if conflict != nil {
			// The core chooses only flavors a pod does not contradict, so the pod's
			// nodeSelector grew since the choice (a gated pod's may). Nothing is sent, and
			// the patch must not overwrite the owner's selector. The core gives the charge
			// back (unless an earlier attempt may still apply) and decides again.
			c.core.Done(a.Pod.UID, quota.NotSent, attempt)
			logger.V(loglevel.Events).Info("Not ungating the pod: its nodeSelector contradicts the flavor it was admitted on; deciding again", "reason", conflict.Error())
			return
		}
		if len(a.Claims) > 0 {
			if !pinned {
				if err := c.pins.pinClaims(ctx, a.Claims); err != nil {
					c.core.Done(a.Pod.UID, quota.NotSent, attempt)
					c.metrics.ungateErrors.WithLabelValues(reasonClaimNotPinned).Inc()
					logger.V(loglevel.Events).Info("Not ungating the pod: a ResourceClaim it is charged for is not pinned; deciding again", "reason", err.Error())
					return
				}
				pinned = true
			}
			c.pins.sending(a.Pod.UID, attempt)
		}
		err := c.patch(ctx, pod, patch)
		reason := classify(err)
		switch reason {
		case "":
			c.core.Done(a.Pod.UID, quota.Ungated, "")
			c.admitted(pod, a, since, now)
			logger.V(loglevel.Events).Info("Ungated pod", "budgets", budgets, "waited", now.Sub(since))
			return
		case reasonNotFound:
			c.core.Done(a.Pod.UID, quota.Gone, "")
			return
		}
		c.metrics.ungateErrors.WithLabelValues(reason).Inc()
		fresh, gone, gerr := c.readFresh(ctx, a.Pod)
		switch {
		case gone:
			c.core.Done(a.Pod.UID, quota.Gone, "")
			return
		case gerr != nil:
			c.core.Done(a.Pod.UID, quota.Unknown, attempt)
			logger.Error(err, "Ungate outcome unknown; the charge stays until it is known", "reason", reason, "readError", gerr.Error())
			return
		}
		c.observe(fresh)
		if !gates.HasGate(fresh, c.opts.Gate) {
			c.core.Done(a.Pod.UID, quota.Ungated, "")
			c.admitted(fresh, a, since, now)
			logger.V(loglevel.Events).Info("Ungated pod; the patch applied although its answer was an error", "reason", reason)
			return
		}
		if fresh.ResourceVersion != attempt && try < maxFencedTries {
			// The pod changed under the patch (usually the answer is a failed test
			// op), so the patch did not apply and never will: send it again on the
			// version just read, with the charge still held.
			pod, view = fresh, quota.NewPod(fresh, c.opts.Gate, c.opts.Clock.Now())
			continue
		}
		// Still gated: when the fresh read is newer than the attempt, the core now
		// knows the attempt failed and gives the charge back; when it is not, the
		// attempt may still be in flight, and the core keeps the charge and retries.
		c.core.Done(a.Pod.UID, quota.Unknown, attempt)
		logger.V(loglevel.Details).Info("Ungate did not apply; backing off", "reason", reason, "error", err.Error())
		return
	}
}

// admissionRecord is what the ungate patch writes into the pod's annotations: when it was
// admitted, by which budgets, borrowing beyond which, on which flavor. Only the manager
// may write these (v1alpha1.ManagerWritten, which the gate guard enforces).
func admissionRecord(a quota.Admission, now time.Time) map[string]string {
	record := map[string]string{
		v1alpha1.AdmittedAtAnnotation:     now.UTC().Format(time.RFC3339),
		v1alpha1.AdmittedByAnnotation:     strings.Join(keyStrings(a.Budgets), ","),
		v1alpha1.AdmittedLabelsAnnotation: quota.AdmittedLabelsText(a.Labels),
	}
	if len(a.Borrowing) > 0 {
		record[v1alpha1.BorrowingAnnotation] = strings.Join(keyStrings(a.Borrowing), ",")
	}
	if a.Flavor != nil {
		record[v1alpha1.FlavorAnnotation] = a.Flavor.Name
	}
	if a.MaxRuntime > 0 {
		record[v1alpha1.AdmittedMaxRuntimeAnnotation] = a.MaxRuntime.String()
	}
	return record
}

// cachedPod finds the pod in the pod informer's cache; false when it is not there, or
// another pod has its name now.
func (c *Controller) cachedPod(ref quota.PodRef) (*cachedPod, bool) {
	obj, ok, err := c.pods.GetByKey(ref.Namespace + "/" + ref.Name)
	if err != nil || !ok {
		return nil, false
	}
	pod, ok := obj.(*cachedPod)
	if !ok || pod.view.UID != ref.UID {
		return nil, false
	}
	return pod, true
}

// patch sends one ungate patch with the controller's timeout, so that a lost response
// cannot hold a worker (or, across a failover, an attempt in flight) for long.
func (c *Controller) patch(ctx context.Context, pod *corev1.Pod, patch []byte) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.UngateTimeout)
	defer cancel()
	return c.client.Patch(ctx, pod, client.RawPatch(types.JSONPatchType, patch))
}

// readFresh reads the pod from the API server, not the cache (a quorum read). gone
// reports that it no longer exists, or that another pod now has its name.
func (c *Controller) readFresh(ctx context.Context, ref quota.PodRef) (pod *corev1.Pod, gone bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.UngateTimeout)
	defer cancel()
	pod = &corev1.Pod{}
	err = c.apiReader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, pod)
	switch {
	case apierrors.IsNotFound(err):
		return nil, true, nil
	case err != nil:
		return nil, false, err
	case pod.UID != ref.UID:
		return nil, true, nil
	}
	return pod, false, nil
}

// admitted records a successful admission: the wait-time metric, the tally of its
// budgets' next Admitted event and, only with PodAdmittedEvents, an event on the pod.
// By default the ungate patch is the admission's only API write.
func (c *Controller) admitted(pod *corev1.Pod, a quota.Admission, since, now time.Time) {
	wait := max(now.Sub(since), 0)
	c.metrics.admitted(a.Budgets, wait)
	c.estimates.ObserveError(a.Pod.UID, a.Budgets, now)
	c.waits.forget(a.Pod.UID)
	c.tallies.add(a.Budgets, wait, now)
	if c.opts.PodAdmittedEvents {
		c.recorder.Eventf(pod, nil, corev1.EventTypeNormal, "Admitted", "Ungate",
			"Admitted%s after %s: %s", onFlavor(a), wait.Round(time.Millisecond), a.Reason.Message)
	}
}

// onFlavor is " on flavor F" for an admission on flavor F, for its event; empty without
// one.
func onFlavor(a quota.Admission) string {
	if a.Flavor == nil {
		return ""
	}
	return " on flavor " + a.Flavor.Name
}

// keyStrings are the budgets' keys as the annotations write them: namespace/name, or
// name for a ClusterBudget.
func keyStrings(keys []quota.BudgetKey) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.String()
	}
	return out
}
