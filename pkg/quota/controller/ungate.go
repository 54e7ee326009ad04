package controller

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/gates"
	"github.com/quotagate/quotagate/pkg/quota"
)

// ungate removes the gate of one admitted pod and reports the outcome to the core.
func (c *Controller) ungate(ctx context.Context, a quota.Admission) {
	logger := log.FromContext(ctx).WithValues("pod", klog.KRef(a.Pod.Namespace, a.Pod.Name))
	pod := &corev1.Pod{}
	if err := c.reader.Get(ctx, client.ObjectKey{Namespace: a.Pod.Namespace, Name: a.Pod.Name}, pod); err != nil || pod.UID != a.Pod.UID {
		// Deleted (and maybe re-created under the same name) since the decision.
		c.core.Done(a.Pod.UID, quota.Gone)
		c.wake()
		return
	}
	budgets := make([]string, len(a.Budgets))
	for i, b := range a.Budgets {
		budgets[i] = b.String()
	}
	now := c.opts.Clock.Now()
	// The stripped pod keeps a marker annotation when the real pod has any (StripPod),
	// so the patch adds keys one by one then, never the whole map.
	patch, ok := gates.UngatePatch(pod, c.opts.Gate, map[string]string{
		v1alpha1.AdmittedAtAnnotation: now.UTC().Format(time.RFC3339),
		v1alpha1.AdmittedByAnnotation: strings.Join(budgets, ","),
	})
	if !ok {
		// The cache already shows the pod without our gate: the informer's update is
		// on its way, and it will charge the pod as running.
		c.core.Done(a.Pod.UID, quota.Conflict)
		c.wake()
		return
	}
	err := c.client.Patch(ctx, pod, client.RawPatch(types.JSONPatchType, patch))
	out, reason := classify(err)
	switch out {
	case outcomeOK:
		c.core.Done(a.Pod.UID, quota.Ungated)
		wait := now.Sub(a.Created)
		c.metrics.podWait.Observe(wait.Seconds())
		c.forgetWaiting(pod)
		c.recorder.Eventf(pod, nil, corev1.EventTypeNormal, "Admitted", "Ungate",
			"Admitted after %s: %s", wait.Round(time.Millisecond), a.Reason.Message)
		logger.V(2).Info("Ungated pod", "budgets", budgets, "waited", wait)
	case outcomeGone:
		c.core.Done(a.Pod.UID, quota.Gone)
	case outcomeConflict:
		c.metrics.ungateErrors.WithLabelValues(reason).Inc()
		c.core.Done(a.Pod.UID, quota.Conflict)
		logger.V(4).Info("Ungate patch conflicted; waiting for the informer", "reason", reason)
	default:
		c.metrics.ungateErrors.WithLabelValues(reason).Inc()
		c.core.Done(a.Pod.UID, quota.Failed)
		logger.Error(err, "Ungate patch failed; backing off", "reason", reason)
	}
	c.wake()
}
