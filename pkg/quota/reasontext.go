package quota

import (
	"fmt"
	"strings"
	"time"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// The sentences that wait reasons (Reads.waitReason) and admission reasons are made of: who
// and what they name, and how, for readers of the pod's namespace.

// pendingMessage says, for readers of namespace ns, that pods are evicted for a pod
// once its preemption cooldown ends, and why it is as long as it is.
func pendingMessage(ns string, pp preemptPending) string {
	msg := fmt.Sprintf("preemption pending: pods are evicted to make room for it in %s once it has waited %s, at %s",
		BudgetFor(ns, pp.budget), pp.cooldown, pp.at.UTC().Format(time.RFC3339))
	if pp.doublings > 0 {
		msg += fmt.Sprintf(" (the preemption cooldown of namespace %s, doubled %d time(s): pods of the namespace that evictions made room for went without using it)", ns, pp.doublings)
	}
	return msg
}

// aheadOf names the pod ahead of p for p's reason, which whoever may read p's
// namespace reads (events, the visibility API, the plugin): a pod of the same namespace
// by name, a pod of another namespace only by how it ranks ahead (docs/guarantees.md,
// "Tenants see only their own").
func (r *Reads) aheadOf(p *podState, ahead PodRef) string {
	if ahead.Namespace == p.pod.Namespace {
		return "pod " + ahead.String()
	}
	h := r.pods.get(ahead.UID)
	switch {
	case h == nil:
		return "a pod in another namespace"
	case h.pod.Priority > p.pod.Priority:
		return "a pod of higher priority in another namespace"
	case h.pod.Priority < p.pod.Priority:
		return "a pod of lower priority in another namespace"
	default:
		return "a pod of the same priority in another namespace"
	}
}

// PodFor names a pod in a sentence that readers of namespace ns see: by name when it is
// in ns, else as a pod of another namespace.
func PodFor(ns string, ref PodRef) string {
	if ref.Namespace == ns {
		return "pod " + ref.String()
	}
	return "a pod of another namespace"
}

// BudgetFor names a budget in a sentence that readers of namespace ns see: a
// ClusterBudget or a Budget of ns by name, a Budget of another namespace without it.
func BudgetFor(ns string, k BudgetKey) string {
	if k.IsCluster() || k.Namespace == ns {
		return k.Describe()
	}
	return "a Budget of another namespace"
}

// closedMessage says why a budget admits nothing: its own state or problem, or the
// ancestor that closes it.
func closedMessage(b *budget) string {
	if b.place.ClosedBy() != nil && b.place.Problem() == nil && b.specOpen() {
		a := b.place.ClosedBy()
		return fmt.Sprintf("%s (parent of %s)", stateSentence(a), b.key.Describe())
	}
	return stateSentence(b)
}

func stateSentence(b *budget) string {
	if b.place.Problem() != nil {
		return fmt.Sprintf("%s cannot admit pods: %s", b.key.Describe(), b.place.Problem().Message)
	}
	state, _ := b.state()
	return fmt.Sprintf("%s is %s", b.key.Describe(), state)
}

// position returns "position k of n": the pod's place among the gated pods of the
// budget, in admission order. Inside Snapshot and WaitReasons it reads the place they
// assigned (positionAll), O(budgets covering p); otherwise it counts the budget's pods,
// O(n): WaitReason is asked on demand only (a pod's reason code changed, a user asks),
// and WaitReasons serves a round of them.
func (r *Reads) position(p *podState, b *budget) string {
	k, n := rank(p, b)
	return fmt.Sprintf("position %d of %d", k, n)
}

func fitsMessage(g *group, budgets []*budget, f *Flavor) string {
	names := make([]string, len(budgets))
	for i, b := range budgets {
		names[i] = b.key.Describe()
	}
	msg := "fits in " + strings.Join(names, ", ")
	if g != nil {
		msg = fmt.Sprintf("group %s: all gated members fit in %s", g.key.name, strings.Join(names, ", "))
	}
	if f != nil {
		msg += " on flavor " + f.Name
	}
	return msg
}

func noBudgetReason() Reason {
	return Reason{Code: CodeNoBudget, Message: "no Budget or ClusterBudget covers it"}
}

func releaseReason(namespace string) Reason {
	return Reason{Code: CodeNamespaceNotEnabled, Message: fmt.Sprintf("namespace %s is not labelled %s=true: released without quota", namespace, v1alpha1.EnabledLabel)}
}

// startMessage is why a pod waits for its start rules (CodeStartLater,
// CodeStartInvalid): whose rule, and what it says.
func startMessage(p *podState, w *waitInfo) string {
	who := ""
	if w.ahead.UID != "" && w.ahead.UID != p.pod.UID {
		who = "member " + w.ahead.Name + ": "
	}
	if w.code == CodeStartInvalid {
		return who + w.detail + "; it waits until the annotation is fixed"
	}
	if w.budget != nil {
		return fmt.Sprintf("%s%s starts its pods %s (spec.start)", who, w.budget.key.Describe(), w.detail)
	}
	return fmt.Sprintf("%sstarts %s (its own start annotations)", who, w.detail)
}

// dependencyMessage is why a pod waits for what it, or a member of its group, waits for
// (CodeDependencyPending, CodeDependencyFailed, CodeDependencyCycle,
// CodeDependencyInvalid).
func dependencyMessage(p *podState, w *waitInfo) string {
	msg := w.detail
	if w.code == CodeDependencyInvalid {
		msg += "; it waits until the annotation is fixed"
	}
	if w.ahead.UID != "" && w.ahead.UID != p.pod.UID {
		msg = "member " + w.ahead.Name + ": " + msg
	}
	return msg
}
