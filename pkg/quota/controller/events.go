package controller

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/pkg/quota"
)

// Pod events say why a pod waits, on transitions only: when the reason's code changes
// (InsufficientQuota, BudgetClosed, RequestsExceedHard, MustSpecifyResources, ...), not
// when only its numbers or queue position move.

// noteGated marks a gated pod whose wait reason should be announced after the next
// admission round, and records when this manager first saw it gated: the start of the
// wait it reports (waitStart). A pod of the informer's initial list (initialList) was
// there before the manager started, so its wait starts at its creationTimestamp.
func (c *Controller) noteGated(pod quota.PodRef, initialList bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, seen := c.waiting[pod.UID]; !seen {
		w := waitingPod{ref: pod}
		if !initialList {
			w.firstSeen = c.opts.Clock.Now().UnixNano()
		}
		c.waiting[pod.UID] = w
	}
}

// waitStart is when the wait of an admitted pod began: when this manager first saw it
// gated, or, for a pod it found gated at startup (or no longer knows as waiting), its
// creationTimestamp, which has a resolution of one second.
func (c *Controller) waitStart(a quota.Admission) time.Time {
	c.mu.Lock()
	w, ok := c.waiting[a.Pod.UID]
	c.mu.Unlock()
	if !ok || w.firstSeen == 0 {
		return a.Created
	}
	return time.Unix(0, w.firstSeen)
}

func (c *Controller) forgetWaiting(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.waiting, uid)
}

// waitingPod is the last wait reason announced for a pod (its code, in a Waiting event)
// and the cause its condition was last set for, and when the manager first saw it gated
// (Unix nanoseconds; 0 when that was at startup).
type waitingPod struct {
	ref       quota.PodRef
	code      quota.ReasonCode
	cause     quota.WaitCause
	firstSeen int64
}

// announceWaiting emits a Waiting event for the gated pods whose reason code changed
// since their last event, and sets the condition of those whose cause changed
// (podConditions), when they are among the first Options.WaitingEventsPerBudget pods
// of a budget's queue (quota.AtHead): a queue of 50,000 pods costs a few events, not
// 50,000 writes and the events client-go keeps of them. A pod further back gets its
// event and condition once it reaches the head; until then its reason is in the
// visibility API and `kubectl quotagate why`. A pod that carries the condition has it
// kept current wherever it is in the queue. It polls the cheap WaitCause and builds the
// sentences only for the pods it announces: the events' (with the queue positions) in
// one WaitReasons call, the conditions' (without) in one WaitConditions call.
func (c *Controller) announceWaiting() {
	c.mu.Lock()
	var changed []types.UID
	for uid, w := range c.waiting {
		cause, ok := c.core.Reader().WaitCause(uid)
		if !ok || cause == w.cause || cause.Code() == quota.CodeQueued {
			continue
		}
		changed = append(changed, uid)
	}
	c.mu.Unlock()
	if len(changed) == 0 {
		return
	}
	heads := c.core.Reader().AtHead(changed, c.opts.WaitingEventsPerBudget)
	uids := changed[:0]
	for _, uid := range changed {
		if heads[uid] || c.conditions.carries(uid) {
			uids = append(uids, uid)
		}
	}
	if len(uids) == 0 {
		return
	}
	// One call for the round: a budget many of them wait in is sorted once for their
	// positions, not counted again for each pod.
	reasons := c.core.Reader().WaitReasons(uids)
	lasting := c.core.Reader().WaitConditions(uids)
	var announce []waitingPod
	var conditions []waitingPod
	c.mu.Lock()
	for _, uid := range uids {
		w, known := c.waiting[uid]
		r, waits := reasons[uid]
		l, stillWaits := lasting[uid]
		if !known || !waits || !stillWaits || r.Code == quota.CodeQueued || l.Code != r.Code {
			continue
		}
		cause, ok := c.core.Reader().WaitCause(uid)
		if !ok || cause.Code() != r.Code {
			continue // moved on since: the next round sees it
		}
		if w.code != r.Code && heads[uid] {
			w.code = r.Code
			announce = append(announce, w)
		}
		w.cause = cause
		c.waiting[uid] = w
		conditions = append(conditions, w)
	}
	c.mu.Unlock()
	for _, w := range conditions {
		l := lasting[w.ref.UID]
		c.conditions.set(w.ref, &condition{reason: string(l.Code), message: l.Message})
	}
	for _, w := range announce {
		r := reasons[w.ref.UID]
		eventType := corev1.EventTypeNormal
		if r.Code == quota.CodeNeverFits || r.Code == quota.CodeMustSpecify || r.Code == quota.CodeGroupInvalid || r.Code == quota.CodeStartInvalid ||
			r.Code == quota.CodeDependencyFailed || r.Code == quota.CodeDependencyCycle || r.Code == quota.CodeDependencyInvalid {
			eventType = corev1.EventTypeWarning
		}
		c.recorder.Eventf(podRef(w.ref), nil, eventType, string(r.Code), "Queue", "Waiting: %s", r.Message)
	}
}
