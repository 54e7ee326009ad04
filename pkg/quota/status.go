package quota

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota/hours"
	"github.com/quotagate/quotagate/pkg/quota/internal/topology"
)

// BudgetStatus is what the core knows about one budget, for its status subresource.
type BudgetStatus struct {
	// State is the effective state: Open, Closing or Closed.
	State v1alpha1.BudgetState `json:"state"`
	// StateReason is Active, Closed, ClosedByParent, or the problem's reason.
	StateReason string `json:"stateReason"`
	// StateMessage explains StateReason in a sentence.
	StateMessage string `json:"stateMessage"`
	// Problem is set when the budget cannot work (reason InvalidSpec, ParentNotFound or
	// ParentCycle): the Ready condition is False with it.
	Problem *Problem `json:"problem,omitempty"`
	// Hard is the normalized hard; Used and Pending are restricted to its names, like
	// ResourceQuota's status. Used includes reservations not yet confirmed, and for a
	// parent the pods of its whole subtree.
	Hard    corev1.ResourceList `json:"hard"`
	Used    corev1.ResourceList `json:"used"`
	Pending corev1.ResourceList `json:"pending"`
	// Borrowed is what it uses beyond Hard, by borrowing from the budgets under its
	// parent (nil when nothing is).
	Borrowed corev1.ResourceList `json:"borrowed,omitempty"`
	// Lent is the part of Hard its siblings use by borrowing (nil when none; lent).
	Lent corev1.ResourceList `json:"lent,omitempty"`
	// AdmittedPods counts charged pods (admitted or running, not terminal).
	AdmittedPods int32 `json:"admittedPods"`
	// GatedPods counts the gated pods it covers.
	GatedPods int32 `json:"gatedPods"`
	// NeverFit lists the gated pods that request more than Hard, or leave unset a
	// value it tracks (CodeMustSpecify), by namespace/name.
	NeverFit []NeverFitPod `json:"neverFit,omitempty"`
	// Flavors is what it holds and uses per flavor, in the order of its spec.flavors
	// (nil when it has none).
	Flavors []FlavorStatus `json:"flavors,omitempty"`
	// ReclaimingAfter names the window (Budget.ReclaimAfter) whose end the budget is
	// still evicting back to its ceiling from; "" when it is not reclaiming.
	ReclaimingAfter string `json:"reclaimingAfter,omitempty"`
	// Usage is what its pods used of its hours (spec.usageLimits) and what the running
	// ones reserved, now; nil when it has none.
	Usage *hours.State `json:"usage,omitempty"`
	// FairSharing is what its pods used, decayed with its parent's usageHalfLife, and
	// the share that adds; nil when its parent has no usageHalfLife.
	FairSharing *FairSharingStatus `json:"fairSharing,omitempty"`
}

// FairSharingStatus is a budget's memory under a parent with usageHalfLife
// (docs/budgets.md, "Fair sharing with memory").
type FairSharingStatus struct {
	// AsOf is when Used was computed.
	AsOf time.Time `json:"asOf"`
	// Used is what its pods used, per resource of the parent, in resource-hours
	// decayed with the parent's usageHalfLife.
	Used map[corev1.ResourceName]float64 `json:"used,omitempty"`
	// Share is what Used adds to its share when the budgets under the parent compete.
	Share float64 `json:"share"`
}

// Problem is why a budget admits nothing, for its Ready condition (the topology's).
type Problem = topology.Problem

// NeverFitPod is a gated pod (or group) that requests more than a budget's hard, or
// (Unset set) leaves unset a value the budget tracks.
type NeverFitPod struct {
	Pod       PodRef              `json:"pod"`
	Group     string              `json:"group,omitempty"`
	Resource  corev1.ResourceName `json:"resource"`
	Requested resource.Quantity   `json:"requested"`
	Hard      resource.Quantity   `json:"hard"`
	// Unset is ResourceQuota's "must specify ..." for the pod (or, in a group, the
	// member named Member) under this budget; Requested is then zero.
	Unset  string `json:"unset,omitempty"`
	Member string `json:"member,omitempty"`
}

// Status returns the status of a budget, or false if the core does not know it.
func (r *Reads) Status(key BudgetKey) (BudgetStatus, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.topology.Lookup(key)
	if b == nil {
		return BudgetStatus{}, false
	}
	state, reason := b.state()
	hard, used, pending := b.ledger.Totals()
	st := BudgetStatus{
		State:        state,
		StateReason:  reason,
		StateMessage: stateMessage(b),
		Hard:         hard,
		Used:         used,
		Pending:      pending,
		AdmittedPods: int32(b.ledger.Admitted()),
		GatedPods:    int32(b.queues.gated()),
	}
	if r.admit.reclaiming(b) {
		st.ReclaimingAfter = b.spec.ReclaimAfter
	}
	st.Usage = r.admit.hoursState(b)
	st.FairSharing = r.admit.memoryState(b)
	if b.place.Problem() != nil {
		p := *b.place.Problem() // a copy: the status outlives the lock
		st.Problem = &p
	}
	if borrowed := b.ledger.Borrowed(); len(borrowed) > 0 {
		st.Borrowed = borrowed
	}
	if lent := b.lent(); len(lent) > 0 {
		st.Lent = lent
	}
	for e := range b.queues.in(queueParked) {
		w := e.pod.wait
		if (w.code != CodeNeverFits && w.code != CodeMustSpecify) || w.budget != b {
			continue
		}
		hard, _, _ := b.ledger.LimitsOf(w.resource)
		st.NeverFit = append(st.NeverFit, NeverFitPod{
			Pod:       e.pod.pod.PodRef,
			Group:     e.pod.pod.Group,
			Resource:  w.resource,
			Requested: w.requested.Quantity(e.pod.writtenFormat(w.resource)),
			Hard:      hard,
			Unset:     w.unset,
			Member:    w.ahead.Name,
		})
	}
	slices.SortFunc(st.NeverFit, func(a, b NeverFitPod) int { return a.Pod.Compare(b.Pod) })
	st.Flavors = splitFlavors(b, &st)
	return st, true
}

// splitFlavors moves the flavored entries of a status's lists (r@flavor, flavorIndex)
// to the flavors they are of, in the order of the budget's spec.flavors.
func splitFlavors(b *budget, st *BudgetStatus) []FlavorStatus {
	if len(b.spec.Flavors) == 0 {
		return nil
	}
	out := make([]FlavorStatus, len(b.spec.Flavors))
	at := make(map[string]int, len(out))
	for i, f := range b.spec.Flavors {
		out[i].Name = f.Name
		at[f.Name] = i
	}
	for _, l := range []struct {
		from *corev1.ResourceList
		to   func(*FlavorStatus) *corev1.ResourceList
	}{
		{&st.Hard, func(f *FlavorStatus) *corev1.ResourceList { return &f.Hard }},
		{&st.Used, func(f *FlavorStatus) *corev1.ResourceList { return &f.Used }},
		{&st.Borrowed, func(f *FlavorStatus) *corev1.ResourceList { return &f.Borrowed }},
		{&st.Lent, func(f *FlavorStatus) *corev1.ResourceList { return &f.Lent }},
	} {
		for r, q := range *l.from {
			base, name := splitFlavor(r)
			if name == "" {
				continue
			}
			delete(*l.from, r)
			i, ok := at[name]
			if !ok {
				continue
			}
			to := l.to(&out[i])
			if *to == nil {
				*to = corev1.ResourceList{}
			}
			(*to)[base] = q
		}
		if *l.from != nil && len(*l.from) == 0 && l.from != &st.Hard && l.from != &st.Used {
			*l.from = nil
		}
	}
	return out
}

// stateMessage explains the effective state in a sentence for the Ready condition. It
// does not depend on other budgets' counts, so that it changes only when this budget's
// status is marked dirty.
func stateMessage(b *budget) string {
	switch by := b.place.ClosedBy(); {
	case b.place.Admitting():
		return "admitting pods that fit"
	case b.place.Problem() != nil:
		return b.place.Problem().Message
	case !b.specOpen():
		if n := b.ledger.Admitted(); n > 0 {
			return fmt.Sprintf("spec.state is Closed; %d admitted pods still run", n)
		}
		return "spec.state is Closed"
	case by != nil:
		why := "its spec.state is Closed"
		if p := by.place.Problem(); p != nil {
			why = p.Message
		}
		return fmt.Sprintf("%s, an ancestor, admits nothing: %s", by.key.Describe(), why)
	}
	return ""
}

// DirtyStatuses returns, and forgets, the budgets whose status may have changed since
// the last call, so the controller writes status only then.
func (q *AdmissionQueue) DirtyStatuses() []BudgetKey {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.agenda.takeStatuses()
}
