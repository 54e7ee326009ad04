package controller

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/pkg/quota"
)

// Pod events say why a pod waits, on transitions only: when the reason's code changes
// (InsufficientQuota, BudgetClosed, RequestsExceedHard, ...), not when only its numbers
// or queue position move.

// noteGated marks a gated pod whose wait reason should be announced after the next
// admission round.
func (c *Controller) noteGated(pod *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, seen := c.waiting[pod.UID]; !seen {
		c.waiting[pod.UID] = waitingPod{ref: quota.PodRef{UID: pod.UID, Namespace: pod.Namespace, Name: pod.Name}}
	}
}

func (c *Controller) forgetWaiting(pod *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.waiting, pod.UID)
}

// waitingPod is the last wait reason announced for a pod.
type waitingPod struct {
	ref  quota.PodRef
	code quota.ReasonCode
}

// announceWaiting emits a Waiting event for every gated pod whose reason code changed
// since its last event.
func (c *Controller) announceWaiting() {
	c.mu.Lock()
	var changed []waitingPod
	var msgs []quota.Reason
	for uid, w := range c.waiting {
		r, ok := c.core.WaitReason(uid)
		if !ok || r.Code == w.code || r.Code == quota.CodeQueued {
			continue
		}
		w.code = r.Code
		c.waiting[uid] = w
		changed = append(changed, w)
		msgs = append(msgs, r)
	}
	c.mu.Unlock()
	for i, w := range changed {
		eventType := corev1.EventTypeNormal
		if msgs[i].Code == quota.CodeNeverFits || msgs[i].Code == quota.CodeGroupInvalid {
			eventType = corev1.EventTypeWarning
		}
		ref := &corev1.Pod{}
		ref.Namespace, ref.Name, ref.UID = w.ref.Namespace, w.ref.Name, types.UID(w.ref.UID)
		ref.APIVersion, ref.Kind = "v1", "Pod"
		c.recorder.Eventf(ref, nil, eventType, string(msgs[i].Code), "Queue", "Waiting: %s", msgs[i].Message)
	}
}
