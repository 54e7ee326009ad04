package quota

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// Preemption in TestRandomizedAdmission: budgets get random preemption policies and
// fair-sharing weights; every
// preemption the core decides is checked against the model when it is handed out, and
// evicted later (or blocked for a while, as a PodDisruptionBudget would) only while the
// core still says it is needed.

func (w *world) randomPreemption(b *Budget) {
	b.Reclaim = []v1alpha1.ReclaimPolicy{"", v1alpha1.ReclaimAny, v1alpha1.ReclaimLowerPriority, v1alpha1.ReclaimNever}[w.rng.IntN(4)]
	if w.rng.IntN(3) == 0 {
		b.WithinBudget = v1alpha1.WithinBudgetLowerPriority
	}
	if w.rng.IntN(2) == 0 {
		q := resource.MustParse([]string{"0", "0.5", "1", "3"}[w.rng.IntN(4)])
		b.Weight = &q
	}
}

// checkPreemptions checks what the last Admit decided to preempt, and queues the
// evictions:
//
//   - the victim is ungated in the API server and charged to the budget it gives room back from; the pod it
//     makes room for is gated and waits;
//   - Reclaim: both budgets have the same parent, the victim's budget may borrow and uses
//     more than its hard, and the preemptor's budget allows it (LowerPriority: only a
//     victim of lower priority);
//   - WithinBudget: the budget allows it and the victim's priority is lower;
//   - WindowEnd: for no pod; the budget names a window that ended with Reclaim and is
//     over its ceiling with every other victim gone (checkWindowEnd);
//   - a group is preempted whole: every running member is a victim at once.
func (w *world) checkPreemptions() error {
	ps := w.q.Preemptions()
	batch := map[types.UID]bool{}
	for _, p := range ps {
		batch[p.Victim.UID] = true
	}
	used := w.usedAll()
	gone := w.goneBefore(used, batch)
	for _, p := range ps {
		if by := w.pods[p.Preemptor.UID]; p.Reason == PreemptReclaim && by != nil {
			w.reclaimed[p.Victim.UID] = reclaim{from: p.From, lacks: w.lacks(by, p.Budget, gone)}
		} else {
			delete(w.reclaimed, p.Victim.UID)
		}
	}
	for _, p := range ps {
		v := w.pods[p.Victim.UID]
		if v == nil || v.gated() {
			return fmt.Errorf("preempting %s, which the API server does not show ungated", p.Victim)
		}
		if p.Reason == PreemptWindowEnd {
			if err := w.checkWindowEnd(p, ps); err != nil {
				return err
			}
			delete(w.victimOf, p.Victim.UID) // no preemptor waits for it
		} else if err := w.checkPreemptor(p, used); err != nil {
			return err
		}
		if v.groupName != "" {
			for _, m := range w.pods {
				// A member whose eviction is under way (refused and tried again, or
				// applied unheard) goes with the group, though not handed out again.
				underWay := slices.Contains(w.evicting, m.obj.UID) || slices.Contains(w.unheard, m.obj.UID)
				if m.groupName == v.groupName && m.obj.Namespace == v.obj.Namespace && m.state == mRunning && m.lastView.UID != "" && !m.lastView.Gated && !batch[m.obj.UID] && !underWay {
					return fmt.Errorf("preempting %s of group %s but not its running member %s", p.Victim, v.groupName, m.obj.Name)
				}
			}
		}
		w.logf("preempt %s for %s (%s, %s from %s)", p.Victim, p.Preemptor, p.Reason, p.Budget.Describe(), p.From.Describe())
		// A victim decided again while its eviction is under way (retried, or applied
		// unheard) is the same eviction, not a second one.
		// One decided again after evict dropped it, in the same round (another's refusal
		// chose it back), is queued anew.
		if (!slices.Contains(w.evicting, p.Victim.UID) || w.dropped[p.Victim.UID]) && !slices.Contains(w.unheard, p.Victim.UID) {
			w.evicting = append(w.evicting, p.Victim.UID)
			delete(w.dropped, p.Victim.UID)
		}
	}
	// After every step, every borrower keeps its hard through reclaim.
	for _, k := range w.budgetKeys() {
		if len(w.budgets[k].BorrowingLimit) > 0 {
			if err := w.notBelowHard(k, used); err != nil {
				return err
			}
		}
	}
	return w.checkChurn()
}

// checkPreemptor checks a preemption that makes room for a waiting pod (Reclaim,
// WithinBudget) against the pod it makes room for, the budgets' policies and the
// preemption cooldown.
func (w *world) checkPreemptor(p Preemption, used map[BudgetKey]corev1.ResourceList) error {
	v, by := w.pods[p.Victim.UID], w.pods[p.Preemptor.UID]
	if by == nil || by.state != mGated {
		return fmt.Errorf("preempting %s for %s, which is not gated", p.Victim, p.Preemptor)
	}
	if code, waiting := w.q.Reader().WaitCode(p.Preemptor.UID); !waiting || (code != CodeNoLendable && code != CodeInsufficient) {
		return fmt.Errorf("preempting %s for %s, which does not wait for capacity (%s)", p.Victim, p.Preemptor, code)
	}
	if !slices.Contains(w.charged(v), p.From) {
		return fmt.Errorf("preempting %s, which is not charged to %s", p.Victim, p.From.Describe())
	}
	lower := v.priority() < by.priority() // clamped at the ceiling
	b, from := w.budgets[p.Budget], w.budgets[p.From]
	switch p.Reason {
	case PreemptReclaim:
		if from.Parent == "" || from.Parent != b.Parent || len(from.BorrowingLimit) == 0 {
			return fmt.Errorf("reclaim for %s from %s: not a borrower under the same parent", p.Budget.Describe(), p.From.Describe())
		}
		if b.Reclaim == v1alpha1.ReclaimNever || (b.Reclaim == v1alpha1.ReclaimLowerPriority && !lower) {
			return fmt.Errorf("reclaim of %s for %s against %s's policy %q", p.Victim, p.Preemptor, p.Budget.Describe(), b.Reclaim)
		}
		if !w.usesBeyondHard(p.From, used) {
			return fmt.Errorf("reclaim of %s: %s does not use more than its hard", p.Victim, p.From.Describe())
		}
	case PreemptWithinBudget:
		if b.WithinBudget != v1alpha1.WithinBudgetLowerPriority || !lower || p.Budget != p.From {
			return fmt.Errorf("%s preempted within %s for %s: not allowed, or not of lower priority", p.Victim, p.Budget.Describe(), p.Preemptor)
		}
	default:
		return fmt.Errorf("preemption with unknown reason %q", p.Reason)
	}
	return w.checkCooldown(p)
}

// notBelowHard checks the floor of a reclaim as docs/budgets.md ("Taking lent quota
// back") words it: with the accepted evictions and the victims the core still needs
// gone (this batch's and earlier ones, asked again now), the borrower keeps its hard of
// each resource it uses beyond hard, and all it has of each one that a pod its victims
// make room for lacks (or what its own WithinBudget victims leave). A resource neither
// borrowed nor lacked may go below hard: nobody takes it. (Pods are whole: the core
// skips a victim that frees part of what the borrower keeps.) A reclaim protects the
// budget it takes from, not a budget of another family the victim is also charged to
// (a ClusterBudget over the same namespace): the victim ran there only by borrowing.
//
// Only the accepted evictions the core was told of count as gone: one applied unheard
// and not retried (evictUnheard) is leaving, but the core, never told, counts it running
// until the pod goes; it may choose it again as a victim (counted once, below) or spare
// it and choose another, as it would if the pod stayed.
func (w *world) notBelowHard(from BudgetKey, used map[BudgetKey]corev1.ResourceList) error {
	left := used[from].DeepCopy()
	for _, uid := range w.accepted {
		if slices.Contains(w.untold, uid) {
			continue
		}
		if p := w.pods[uid]; p != nil && slices.Contains(w.charged(p), from) {
			subtractFrom(left, p.usage)
		}
	}
	mine, reclaimed := corev1.ResourceList{}, corev1.ResourceList{}
	var names []string
	var lacked []corev1.ResourceName // by the pods the reclaims from it make room for
	seen := map[types.UID]bool{}
	for _, uid := range slices.Concat(w.evicting, w.unheard) {
		p := w.pods[uid]
		if p == nil || seen[uid] || !slices.Contains(w.charged(p), from) || !w.q.PreemptionNeeded(uid) {
			continue
		}
		seen[uid] = true
		names = append(names, p.obj.Name)
		switch rc, ok := w.reclaimed[uid]; {
		case !ok:
			addTo(mine, p.usage) // WithinBudget: its own pod takes the room
		case rc.from == from:
			addTo(reclaimed, p.usage)
			lacked = append(lacked, rc.lacks...)
		}
	}
	hard, _ := NormalizeHard(w.budgets[from].Hard)
	for r, h := range hard {
		if q := reclaimed[r]; q.IsZero() {
			continue
		}
		before := left[r].DeepCopy()
		before.Sub(mine[r])
		var floor resource.Quantity
		switch {
		case before.Cmp(h) > 0:
			floor = h // it borrows r: down to its hard, no further
		case slices.Contains(lacked, r):
			floor = before // within its hard, and lacked: none of it
		default:
			continue // neither borrowed nor lacked: it may go below its hard
		}
		after := before.DeepCopy()
		after.Sub(reclaimed[r])
		if after.Cmp(floor) < 0 {
			u := used[from][r]
			return fmt.Errorf("reclaim victims %v would take %s to %s %s, below %s (hard %s, used %s, accepted evictions leave %s; lacked: %v)", names, from.Describe(), after.String(), r, floor.String(), h.String(), u.String(), left.Name(r, resource.DecimalSI).String(), lacked)
		}
	}
	return nil
}

// reclaim is what the model records of a victim decided by reclaim: the budget it is
// taken from, and what the pod it makes room for lacks (lacks).
type reclaim struct {
	from  BudgetKey
	lacks []corev1.ResourceName
}

// goneBefore is used with the pods on their way out before a batch of decisions gone:
// the accepted evictions the core was told of, and the victims of earlier batches it
// still needs (the core counts them gone before it chooses more).
func (w *world) goneBefore(used map[BudgetKey]corev1.ResourceList, batch map[types.UID]bool) map[BudgetKey]corev1.ResourceList {
	out := map[BudgetKey]corev1.ResourceList{}
	for k, u := range used {
		out[k] = u.DeepCopy()
	}
	for uid := range w.goingBefore(batch) {
		for _, k := range w.charged(w.pods[uid]) {
			subtractFrom(out[k], w.pods[uid].usage)
		}
	}
	return out
}

// goingBefore are the pods goneBefore counts as gone: evictions accepted, and victims
// the core still needs, but for batch and those applied unheard the core was not told.
func (w *world) goingBefore(batch map[types.UID]bool) map[types.UID]bool {
	out := map[types.UID]bool{}
	for _, uid := range slices.Concat(w.accepted, w.evicting, w.unheard) {
		p := w.pods[uid]
		if p == nil || out[uid] || batch[uid] || slices.Contains(w.untold, uid) {
			continue
		}
		if !slices.Contains(w.accepted, uid) && !w.q.PreemptionNeeded(uid) {
			continue
		}
		out[uid] = true
	}
	return out
}

// lacks is the model's "the waiting pod lacks" (docs/budgets.md, "Taking lent quota
// back"): the resources of which the unit of by (with its gated group mates) does not
// fit, each alone, with used: over the hard of a member of lender's family that covers
// it (a reclaim makes room only within hard), over the ceiling of another budget that
// covers it, or over what the family lends. (The core also serves first the family's
// pods ahead of it; the model leaves them out.)
func (w *world) lacks(by *mPod, lender BudgetKey, used map[BudgetKey]corev1.ResourceList) []corev1.ResourceName {
	parent := w.budgets[lender].Parent
	unit := by.usage.DeepCopy()
	for _, m := range w.pods {
		if by.groupName != "" && m != by && m.groupName == by.groupName && m.obj.Namespace == by.obj.Namespace && m.state == mGated {
			addTo(unit, m.usage)
		}
	}
	cover := w.cover(by.obj)
	var out []corev1.ResourceName
	for r, q := range unit {
		if q.IsZero() {
			continue
		}
		view := maps.Clone(used)
		over := false
		for _, k := range cover {
			u := used[k][r].DeepCopy()
			u.Add(q)
			view[k] = corev1.ResourceList{r: u}
			limit := w.ceiling(k)
			if w.budgets[k].Parent == parent {
				limit, _ = NormalizeHard(w.budgets[k].Hard)
			}
			if h, ok := limit[r]; ok && u.Cmp(h) > 0 {
				over = true
			}
		}
		if above, pool := w.familyAbove(BudgetKey{Name: parent}, r, view); over || above.Cmp(pool) > 0 {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

func (w *world) usesBeyondHard(k BudgetKey, used map[BudgetKey]corev1.ResourceList) bool {
	hard, _ := NormalizeHard(w.budgets[k].Hard)
	for r, h := range hard {
		if u := used[k][r]; u.Cmp(h) > 0 {
			return true
		}
	}
	return false
}
