package quota

import (
	"cmp"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
)

// WaitReason returns why a gated pod waits, or false when the core does not hold it
// (unknown, or admitted).
func (r *Reads) WaitReason(uid types.UID) (Reason, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pods.get(uid)
	if p == nil || p.phase != phaseWaiting {
		return Reason{}, false
	}
	return r.waitReason(p), true
}

// WaitCode returns just the code of WaitReason, cheaply (no message, no queue
// position): callers that announce reasons on transitions only should poll this and
// ask WaitReason when the code changed.
func (r *Reads) WaitCode(uid types.UID) (ReasonCode, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pods.get(uid)
	if p == nil || p.phase != phaseWaiting {
		return "", false
	}
	w := r.currentWait(p)
	return w.reported(), true
}

// WaitingByCode counts the gated pods the core holds by the code of why they wait, as
// last decided (Queued for a pod not evaluated since it changed): cheaper than a
// WaitCode for each, for metrics.
func (r *Reads) WaitingByCode() map[ReasonCode]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[ReasonCode]int{}
	for p := range r.pods.all() {
		if p.phase != phaseWaiting {
			continue
		}
		code := p.wait.reported()
		switch {
		case p.inBackoff && !p.parked:
			code = CodeBackoff
		case code == "":
			code = CodeQueued
		}
		out[code]++
	}
	return out
}

// currentWait is why the pod waits now: its park reason, its backoff, a covering budget
// that admits nothing, the reason its last evaluation gave, or a StrictFIFO head ahead.
func (r *Reads) currentWait(p *podState) waitInfo {
	w := p.wait
	switch {
	case p.parked:
	case p.inBackoff:
		w = waitInfo{code: CodeBackoff}
	default:
		// Budgets that closed since the pod was last evaluated, or that were never
		// evaluated because they admit nothing, say so now.
		for _, b := range p.cover {
			if !b.place.Admitting() {
				w = waitInfo{code: CodeBudgetClosed, budget: b}
				break
			}
		}
		if w.budget != nil && (!r.topology.Alive(w.budget) || (w.code == CodeBudgetClosed && w.budget.place.Admitting())) {
			w = waitInfo{} // that budget is gone; the next Admit looks again
		}
		if w.code == "" {
			if bw, blocked := r.admit.blocked(p.cover, func(h *podState) bool { return h == p || (p.group != nil && h.group == p.group) }); blocked {
				w = bw
			}
		}
	}
	if w.code == "" {
		w = waitInfo{code: CodeQueued}
	}
	return w
}

func (r *Reads) waitReason(p *podState) Reason {
	return r.waitMessage(p, false)
}

// waitMessage is why p waits. With lasting, the message leaves out what changes while
// the reason holds (queue positions, free amounts, the pod ahead, backoff times): it
// is what the pod's condition says, rewritten only when the reason itself changes.
func (r *Reads) waitMessage(p *podState, lasting bool) Reason {
	w := r.currentWait(p)
	prefix := ""
	if p.group != nil && w.code != CodeGroupIncomplete {
		prefix = "group " + p.pod.Group + ": "
	}
	var msg string
	switch w.code {
	case CodeInsufficient:
		b := w.budget
		if lasting {
			msg = fmt.Sprintf("%s: %s requested, more than is free in %s", resourceText(w.resource), w.requested.Text(p.writtenFormat(w.resource)), b.key.Describe())
			break
		}
		free := amount.Max(b.ledger.Of(w.resource).Free(), amount.Amount{})
		msg = fmt.Sprintf("%s: %s requested, %s free in %s; %s", resourceText(w.resource), w.requested.Text(p.writtenFormat(w.resource)), w.budget.text(w.resource, free), b.key.Describe(), r.position(p, b))
	case CodeBudgetClosed:
		msg = closedMessage(w.budget)
	case CodeBehindHead:
		if lasting {
			msg = fmt.Sprintf("behind the head of StrictFIFO %s, which does not fit", w.budget.key.Describe())
			break
		}
		msg = fmt.Sprintf("behind %s in StrictFIFO %s; %s", r.aheadOf(p, w.ahead), w.budget.key.Describe(), r.position(p, w.budget))
	case CodeNeverFits:
		if w.family {
			pool, _ := w.budget.familyStatus(w.resource)
			msg = fmt.Sprintf("%s: %s requested, more than the budgets under %s keep for it and lend together (%s lent): it can never fit", resourceText(w.resource), w.requested.Text(p.writtenFormat(w.resource)), w.budget.key.Describe(), w.budget.text(w.resource, pool))
			break
		}
		hard, borrow, borrows := w.budget.ledger.LimitsOf(w.resource)
		limit := hard.String() + " hard"
		if borrows {
			limit = fmt.Sprintf("%s hard plus %s borrowingLimit", hard.String(), borrow.String())
		}
		msg = fmt.Sprintf("%s: %s requested, more than the %s of %s: it can never fit", resourceText(w.resource), w.requested.Text(p.writtenFormat(w.resource)), limit, w.budget.key.Describe())
	case CodeMustSpecify:
		msg = unsetMessage(&w)
	case CodeFairShare:
		ahead := r.aheadOf(p, w.ahead)
		if lasting {
			ahead = "a pod whose budget borrows less"
		}
		msg = fmt.Sprintf("it would borrow under %s, and %s goes first: its budget's borrowing is a smaller share of what the family lends (fair sharing)",
			w.budget.key.Describe(), ahead)
	case CodeNoLendable:
		if lasting {
			msg = fmt.Sprintf("%s: %s requested; the budgets under %s have no unused lendable quota left: waiting for borrowed quota to be returned",
				resourceText(w.resource), w.requested.Text(p.writtenFormat(w.resource)), w.budget.key.Describe())
			break
		}
		pool, above := w.budget.familyStatus(w.resource)
		msg = fmt.Sprintf("%s: %s requested; the budgets under %s use %s beyond what they keep for themselves, of the %s they lend: waiting for borrowed quota to be returned",
			resourceText(w.resource), w.requested.Text(p.writtenFormat(w.resource)), w.budget.key.Describe(), w.budget.text(w.resource, above), w.budget.text(w.resource, pool))
	case CodeGroupIncomplete:
		have, want := groupWaitCounts(p, &w)
		if len(p.pod.GroupParts) > 0 {
			if lasting {
				msg = fmt.Sprintf("group %s: waiting for %d of its child groups to be complete", p.pod.Group, want)
				break
			}
			msg = fmt.Sprintf("group %s: %d of %d child groups complete", p.pod.Group, have, want)
			break
		}
		if lasting {
			msg = fmt.Sprintf("group %s: waiting for all %d members to exist", p.pod.Group, want)
			break
		}
		msg = fmt.Sprintf("group %s: %d of %d members exist", p.pod.Group, have, want)
	case CodeGroupInvalid:
		msg = fmt.Sprintf("group %s: %s", p.pod.Group, p.pod.GroupError)
	case CodeClaimPending:
		msg = p.pod.ClaimsError
	case CodeUncountable:
		q := p.pod.Usage[w.resource]
		msg = fmt.Sprintf("%s: %s requested, beyond what quotagate counts exactly (at most %d units of one resource): it is never admitted; delete it and create it with a value in range", w.resource, q.String(), amount.MaxUnits)
	case CodeNoFlavor, CodeHoursExhausted:
		msg = w.detail
	case CodeNoMaxRuntime:
		msg = noMaxRuntimeMessage(p, &w)
	case CodeStartLater, CodeStartInvalid:
		msg = startMessage(p, &w)
	case CodeDependencyPending, CodeDependencyFailed, CodeDependencyCycle, CodeDependencyInvalid:
		msg = dependencyMessage(p, &w)
	case CodePodGroupPending:
		msg = w.detail
	case CodeGroupBackoff:
		msg = "waiting for members that back off after a failed ungate"
	case CodeGroupPartIncomplete:
		if msg = w.detail; p.group != nil && !lasting {
			msg = cmp.Or(p.group.partWaitMessage(p), msg)
		}
	case CodeBackoff:
		if lasting {
			msg = "backing off after a failed ungate; it is retried"
			break
		}
		msg = fmt.Sprintf("backoff until %s after a failed ungate", p.attempt.retryTime().UTC().Format(time.RFC3339Nano))
	case CodeUncovered:
		msg = "no Budget or ClusterBudget covers it, and uncovered pods are held"
		if w.ahead.UID != "" && w.ahead.UID != p.pod.UID {
			msg = fmt.Sprintf("no Budget or ClusterBudget covers member %s, and uncovered pods are held", w.ahead.Name)
		} else if hint := uncoveredHint(r.topology, &p.pod); hint != "" {
			msg += ": " + hint
		}
	case CodeNamespaceUnknown:
		msg = fmt.Sprintf("namespace %s has not been seen yet: which budgets cover it is decided once it is", p.pod.Namespace)
	default:
		msg = "queued, not evaluated yet"
		if len(p.cover) > 0 && !lasting {
			msg += "; " + r.position(p, p.cover[0]) + " in " + p.cover[0].key.Describe()
		}
	}
	if code := w.reported(); code != w.code {
		return Reason{Code: code, Message: prefix + msg + "; " + pendingMessage(p.pod.Namespace, w.preempt)}
	}
	return Reason{Code: w.code, Message: prefix + msg}
}

// WaitCause is what a gated pod's lasting reason (WaitConditions) depends on, as a
// value to compare: the reported code, the budget it names, and what else its sentence
// says that can change while the code holds (a budget's state, a flavor's detail). It
// is cheap to take for every waiting pod in every round.
type WaitCause struct {
	code     ReasonCode
	budget   BudgetKey
	resource corev1.ResourceName
	state    string
}

// Code is the cause's reason code.
func (c WaitCause) Code() ReasonCode { return c.code }

// WaitCause returns what the lasting reason of a gated pod depends on, or false when
// the core does not hold it (unknown, or admitted).
func (r *Reads) WaitCause(uid types.UID) (WaitCause, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pods.get(uid)
	if p == nil || p.phase != phaseWaiting {
		return WaitCause{}, false
	}
	w := r.currentWait(p)
	c := WaitCause{code: w.reported(), resource: w.resource}
	if w.budget != nil {
		c.budget = w.budget.key
	}
	switch w.code {
	case CodeBudgetClosed:
		c.state = closedMessage(w.budget)
	case CodeNoFlavor, CodeNoMaxRuntime:
		c.state = w.detail
	case CodeHoursExhausted:
		c.state = w.detail
	case CodeUncovered:
		c.state = string(w.ahead.UID) + uncoveredHint(r.topology, &p.pod)
	}
	if c.code == CodePreemptionPending {
		c.state = w.preempt.at.String()
	}
	return c, true
}

// WaitConditions returns, for the gated pods among uids, why each waits in its lasting
// form: the sentence without queue positions, free amounts or the pod ahead, which the
// pod's condition carries (pods whose reason changed, a few per round).
func (r *Reads) WaitConditions(uids []types.UID) map[types.UID]Reason {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[types.UID]Reason, len(uids))
	for _, uid := range uids {
		if p := r.pods.get(uid); p != nil && p.phase == phaseWaiting {
			out[uid] = r.waitMessage(p, true)
		}
	}
	return out
}
