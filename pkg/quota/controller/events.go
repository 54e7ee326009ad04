package controller

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/quotagate/quotagate/pkg/quota"
)

// waitNotices tells gated pods why they wait: a Waiting event when the reason's code
// changes (InsufficientQuota, BudgetClosed, RequestsExceedHard, MustSpecifyResources,
// ...), not when only its numbers or queue position move, and the pod's condition
// (podConditions) when its cause changes. It keeps, for every gated pod the manager
// saw, what it last told it and when the manager first saw it gated (waitStart). The
// informer handlers note the pods (noteGated, forget); the status writer announces
// (announce), after each admission round.
type waitNotices struct {
	core       *quota.AdmissionQueue
	clock      clock.Clock
	perBudget  int // Options.WaitingEventsPerBudget
	conditions *podConditions
	recorder   recorder.EventRecorder // set with the manager's (SetupWithManager)

	mu      sync.Mutex
	waiting map[types.UID]waitingPod // gated pods, with the last wait reason announced
}

func newWaitNotices(core *quota.AdmissionQueue, clk clock.Clock, perBudget int, conditions *podConditions) *waitNotices {
	return &waitNotices{core: core, clock: clk, perBudget: perBudget, conditions: conditions, waiting: map[types.UID]waitingPod{}}
}

// noteGated marks a gated pod whose wait reason should be announced after the next
// admission round, and records when this manager first saw it gated: the start of the
// wait it reports (waitStart). A pod of the informer's initial list (initialList) was
// there before the manager started, so its wait starts at its creationTimestamp.
func (n *waitNotices) noteGated(pod quota.PodRef, initialList bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, seen := n.waiting[pod.UID]; !seen {
		w := waitingPod{ref: pod}
		if !initialList {
			w.firstSeen = n.clock.Now().UnixNano()
		}
		n.waiting[pod.UID] = w
	}
}

// waitStart is when the wait of an admitted pod began: when this manager first saw it
// gated, or, for a pod it found gated at startup (or no longer knows as waiting), its
// creationTimestamp, which has a resolution of one second.
func (n *waitNotices) waitStart(a quota.Admission) time.Time {
	n.mu.Lock()
	w, ok := n.waiting[a.Pod.UID]
	n.mu.Unlock()
	if !ok || w.firstSeen == 0 {
		return a.Created
	}
	return time.Unix(0, w.firstSeen)
}

// forget drops a pod that no longer waits: admitted, ungated by someone else, or gone.
func (n *waitNotices) forget(uid types.UID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.waiting, uid)
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

// announce emits a Waiting event for the gated pods whose reason code changed
// since their last event, and sets the condition of those whose cause changed
// (podConditions), when they are among the first Options.WaitingEventsPerBudget pods
// of a budget's queue (quota.AtHead): a queue of 50,000 pods costs a few events, not
// 50,000 writes and the events client-go keeps of them. A pod further back gets its
// event and condition once it reaches the head; until then its reason is in the
// visibility API and `kubectl quotagate why`. A pod that carries the condition has it
// kept current wherever it is in the queue. It polls the cheap WaitCause and builds the
// sentences only for the pods it announces: the events' (with the queue positions) in
// one WaitReasons call, the conditions' (without) in one WaitConditions call.
func (n *waitNotices) announce() {
	n.mu.Lock()
	var changed []types.UID
	for uid, w := range n.waiting {
		cause, ok := n.core.Reader().WaitCause(uid)
		if !ok || cause == w.cause || cause.Code() == quota.CodeQueued {
			continue
		}
		changed = append(changed, uid)
	}
	n.mu.Unlock()
	if len(changed) == 0 {
		return
	}
	heads := n.core.Reader().AtHead(changed, n.perBudget)
	uids := changed[:0]
	for _, uid := range changed {
		if heads[uid] || n.conditions.carries(uid) {
			uids = append(uids, uid)
		}
	}
	if len(uids) == 0 {
		return
	}
	// One call for the round: a budget many of them wait in is sorted once for their
	// positions, not counted again for each pod.
	reasons := n.core.Reader().WaitReasons(uids)
	lasting := n.core.Reader().WaitConditions(uids)
	var announce []waitingPod
	var conditions []waitingPod
	n.mu.Lock()
	for _, uid := range uids {
		w, known := n.waiting[uid]
		r, waits := reasons[uid]
		l, stillWaits := lasting[uid]
		if !known || !waits || !stillWaits || r.Code == quota.CodeQueued || l.Code != r.Code {
			continue
		}
		cause, ok := n.core.Reader().WaitCause(uid)
		if !ok || cause.Code() != r.Code {
			continue // moved on since: the next round sees it
		}
		if w.code != r.Code && heads[uid] {
			w.code = r.Code
			announce = append(announce, w)
		}
		w.cause = cause
		n.waiting[uid] = w
		conditions = append(conditions, w)
	}
	n.mu.Unlock()
	for _, w := range conditions {
		l := lasting[w.ref.UID]
		n.conditions.set(w.ref, &condition{reason: string(l.Code), message: l.Message})
	}
	for _, w := range announce {
		r := reasons[w.ref.UID]
		eventType := corev1.EventTypeNormal
		if r.Code == quota.CodeNeverFits || r.Code == quota.CodeMustSpecify || r.Code == quota.CodeGroupInvalid || r.Code == quota.CodeStartInvalid ||
			r.Code == quota.CodeDependencyFailed || r.Code == quota.CodeDependencyCycle || r.Code == quota.CodeDependencyInvalid {
			eventType = corev1.EventTypeWarning
		}
		n.recorder.Eventf(podRef(w.ref), nil, eventType, string(r.Code), "Queue", "Waiting: %s", r.Message)
	}
}
