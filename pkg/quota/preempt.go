package quota

import (
	"cmp"
	"iter"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
)

// Preemption (docs/budgets.md, "Taking lent quota back: preemption" and "Priorities:
// the order, and a ceiling"). When a unit does not fit, the core may decide that
// admitted pods must go to make room for it:
//
//   - Reclaim: the unit waits for lent quota (NoLendableQuota) and asks for no more than
//     its budgets' own hard. Pods of the siblings that use more than their hard of what
//     it needs are taken back, while their budget still borrows, and only as far as
//     each sibling keeps its own hard (reclaimFloor): a victim that would free part
//     of it is skipped for a smaller one.
//   - WithinBudget (opt-in, preemption.withinBudget: LowerPriority): the unit does not
//     fit in such a budget; its admitted pods of lower priority are taken.
//
// Victims are chosen in the order of compareVictims (those a PodDisruptionBudget
// refused last; before them, those admitted by borrowing first, then lowest priority
// first, then most recently admitted first), a group as a whole; the choice stops at
// the first set that makes room, and then drops every victim that is not needed (each
// victim left is needed: the set is minimal, though not always the smallest possible).
// Victims are chosen for a unit only once it has waited the preemption cooldown of its
// namespace, which backs off while the namespace's preemptors vanish
// (preemptions.cooldownOf): until then decide chooses nobody and says until when.
// The core only decides: Preemptions hands the decisions to the controller, which
// evicts through the Eviction API and asks PreemptionNeeded before each try, so an
// eviction that a PodDisruptionBudget blocks is retried only while the preemptor still
// waits; a refused eviction is reported (EvictionBlocked), and other
// victims are chosen in its place when they make room. Pods already on their way out
// (terminating, or chosen before and still needed) count as gone before anything new is
// chosen, so the same room is never taken twice. The preemptor keeps waiting, with its
// claim on the family (lenderClaims), until the victims end and release their charge;
// what they free is then not lent back before it is admitted.

// PreemptionReason says why a pod is preempted.
type PreemptionReason string

const (
	// PreemptReclaim: the victim's budget borrows quota the preemptor's budget lent.
	PreemptReclaim PreemptionReason = "Reclaim"
	// PreemptWithinBudget: the victim has a lower priority, in the same budget.
	PreemptWithinBudget PreemptionReason = "WithinBudget"
)

// Preemption is one decision to evict an admitted pod to make room for a gated one.
type Preemption struct {
	Victim    PodRef           `json:"victim"`
	Preemptor PodRef           `json:"preemptor"`
	Reason    PreemptionReason `json:"reason"`
	// Budget is where the room is made: the preemptor's budget that lent the quota
	// (Reclaim), or the budget both pods are in (WithinBudget).
	Budget BudgetKey `json:"budget"`
	// From is the victim's budget the quota is taken from: the borrower (Reclaim), or
	// Budget (WithinBudget).
	From BudgetKey `json:"from"`
	// Parent is the ClusterBudget under which Budget lent the quota (Reclaim; zero for
	// WithinBudget).
	Parent BudgetKey `json:"parent,omitzero"`
	// VictimMessage says it in words for the victim's events, and PreemptorMessage for the
	// preemptor's: each names pods and Budgets of the other pod's namespace only when it
	// is the same namespace (docs/guarantees.md, "Tenants see only their own").
	VictimMessage    string `json:"victimMessage"`
	PreemptorMessage string `json:"preemptorMessage"`
	// BlockedTimeout is Budget's spec.preemption.blockedTimeout: how long the victim's
	// PodDisruptionBudget may refuse its eviction, when EvictionBlocked finds no other
	// victim, before it is deleted despite it; 0 waits for ever.
	BlockedTimeout time.Duration `json:"blockedTimeout,omitempty"`
}

// By names the budget that preempts, in a sentence that readers of namespace ns see
// (BudgetFor): Budget, and for a reclaim the ClusterBudget it lent under.
func (p Preemption) By(ns string) string {
	if p.Reason == PreemptReclaim && p.Parent.Name != "" {
		return BudgetFor(ns, p.Budget) + " under " + p.Parent.Describe()
	}
	return BudgetFor(ns, p.Budget)
}

// victim is a pod the core decided to preempt, while that is still needed: for unit
// (its first pod is the preemptor), which adds adds[b] to each budget b of budgets; or,
// with no unit, to bring overHard back within its ceiling after a window ended
// (reclaimOverHard).
type victim struct {
	reason   PreemptionReason
	unit     []*podState
	budgets  []*budget
	adds     map[*budget]amount.List
	made     *roomMade // the preemptor's record, for its backoff (nil: the cooldown is off)
	overHard *budget   // set for PreemptWindowEnd, with no unit
	overrun  *budget   // set for PreemptMaxRuntime, with no unit
}

func (v *victim) preemptor() *podState { return v.unit[0] }

// wakes is the budget whose pods counted the victim as leaving: the preemptor's, or
// the budget brought back within its ceiling.
func (v *victim) wakes() *budget {
	if v.overHard != nil {
		return v.overHard
	}
	if v.overrun != nil {
		return v.overrun
	}
	return v.preemptor().wait.budget
}
func (v *victim) add(b *budget) amount.List { return v.adds[b] }

// Preemptions returns the preemptions decided since the last call, in the order they
// were decided. Before each eviction, ask PreemptionNeeded.
func (q *AdmissionQueue) Preemptions() []Preemption {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.preemptions.take()
}

// decide decides whether admitted pods must go to make room for a unit that failed
// with w; see the comment at the top of the file. When victims would make room but the
// unit has not waited its cooldown yet, it chooses nobody and says until when
// (preemptions.cooldownOf).
func (pr *preemptions) decide(unit []*podState, budgets []*budget, add demand, w waitInfo) preemptPending {
	reason, chosen, from, ok := pr.plan(unit, budgets, add, w)
	if !ok || len(chosen) == 0 {
		return preemptPending{}
	}
	room := roomBudget(reason, w, budgets)
	if p := pr.pending(unit, room); !p.at.IsZero() {
		return p
	}
	rec := &victim{reason: reason, unit: slices.Clone(unit), budgets: slices.Clone(budgets), adds: map[*budget]amount.List{}, made: pr.roomFor(unit, room)}
	for _, b := range budgets {
		rec.adds[b] = add(b)
	}
	for _, c := range chosen {
		for _, v := range c {
			pr.victims[v], v.preemption.kept = rec, true
			pr.decided = append(pr.decided, preemption(reason, v, unit[0], w, room, from[c[0]]))
		}
	}
	return preemptPending{}
}

// roomBudget is where preemption makes room for a unit that waits with w: the member of
// w's family among its budgets that lent the quota (Reclaim), or w's budget
// (WithinBudget).
func roomBudget(reason PreemptionReason, w waitInfo, budgets []*budget) *budget {
	if reason == PreemptReclaim {
		for _, b := range budgets {
			if b.place.Parent() == w.budget {
				return b
			}
		}
	}
	return w.budget
}

// makesRoom reports whether preemption makes room for a unit that failed with w: pods
// already leaving do, or victims may be chosen (decide would evict them).
func (pr *preemptions) makesRoom(unit []*podState, budgets []*budget, add demand, w waitInfo) bool {
	_, _, _, ok := pr.plan(unit, budgets, add, w)
	return ok
}

// plan chooses the victims whose eviction makes room for a unit that failed with w,
// without evicting them, and from which budget each victim unit borrows (Reclaim). ok
// is false when preemption cannot make room; it is true with no victims when the pods
// already leaving make it.
func (pr *preemptions) plan(unit []*podState, budgets []*budget, add demand, w waitInfo) (PreemptionReason, [][]*podState, map[*podState]*budget, bool) {
	reason, lowerOnly, ok := preemptionKind(unit, budgets, add, w)
	if !ok {
		return "", nil, nil, false
	}
	// What is on its way out counts as gone already.
	going := pr.stillGoing()
	hide(going)
	defer show(going)
	// What leaves is first for the pods that wait for it already: they count as
	// admitted, while asking whether the unit fits (only then: a budget whose pods
	// wait does not borrow because of them).
	claims := pr.claims(unit, w)
	fits := func() bool { return pr.fitsAfter(claims, budgets, add, w) }
	if fits() {
		return reason, nil, nil, true // it waits for pods already leaving
	}
	var floor reclaimFloor
	var scarce []corev1.ResourceName
	if reason == PreemptReclaim {
		floor, scarce = pr.reclaimFloor(claims, budgets, add, w)
	}
	var chosen [][]*podState
	from := map[*podState]*budget{} // Reclaim: the member a victim unit borrows through
	for _, cand := range pr.candidates(reason, lowerOnly, unit, budgets, w) {
		c := cand.unit
		if reason == PreemptReclaim {
			if from[c[0]] = borrowsScarce(c[0], w.budget, scarce); from[c[0]] == nil {
				continue // its budget is within its hard now: nothing of it is borrowed
			}
		}
		hide(c)
		if !floor.holds() {
			show(c) // it would take a sibling below its hard: a smaller victim may not
			continue
		}
		chosen = append(chosen, c)
		if fits() {
			break
		}
	}
	defer func() {
		for _, c := range chosen {
			show(c)
		}
	}()
	if !fits() {
		return "", nil, nil, false // even all of them would not make room: evict nobody
	}
	// Drop every victim the others make room without, latest choice kept.
	for i := len(chosen) - 2; i >= 0; i-- {
		show(chosen[i])
		if fits() {
			chosen = slices.Delete(chosen, i, i+1)
			continue
		}
		hide(chosen[i])
	}
	return reason, chosen, from, true
}

// fitsAfter reports whether a unit that waits with w fits once claims are served: they
// count as admitted while it asks (only then: a budget whose pods wait does not borrow
// because of them). A unit that waits for lent quota fits only within its own hard:
// after the pods ahead of it, it would borrow, and there is nothing to reclaim.
func (pr *preemptions) fitsAfter(claims []*podState, budgets []*budget, add demand, w waitInfo) bool {
	claim(claims)
	defer unclaim(claims)
	if w.code == CodeNoLendable && borrowsUnder(w.budget, budgets, add) {
		return false
	}
	_, over := pr.core.capacityWait(budgets, add)
	return !over
}

// claims are the pods that wait for room already being made, other than unit's: the
// units of live preemptions, and for a reclaim the family's pods ahead of the unit in
// admission order that wait for lent quota within their own hard (each, in turn, while
// it still fits there). Pods behind it claim nothing: what is taken back goes to the
// first in order, as every admission does.
func (pr *preemptions) claims(unit []*podState, w waitInfo) []*podState {
	var out []*podState
	seen := map[*podState]bool{}
	for _, p := range unit {
		seen[p] = true
	}
	for _, v := range pr.victims {
		for _, p := range v.unit {
			if !seen[p] && p.phase == phaseWaiting && !p.forgotten {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	if w.code == CodeNoLendable {
		f := w.budget
		claim(out)
		defer func() { unclaim(out) }()
		for _, p := range pr.core.lendWaiters(f) {
			if seen[p] || p.order.Compare(&unit[0].order) >= 0 || p.inBackoff || pr.core.stuck(p) {
				continue
			}
			if !borrowsUnder(f, p.cover, usageDemand(p.waitUsage())) {
				seen[p] = true
				out = append(out, p)
				claim(out[len(out)-1:]) // the next is tested after it
			}
		}
	}
	return slices.Clip(out)
}

// claim charges waiting pods to the ledgers of their budgets as if admitted (on the
// flavor each waits on), and unclaim takes that back: to ask whether a unit would fit
// after them.
func claim(pods []*podState) {
	for _, p := range pods {
		for _, b := range p.cover {
			b.ledger.Charge(p.pod.UID, p, p.waitUsage(), p.pod.Usage, p.claims())
		}
	}
}

func unclaim(pods []*podState) {
	for _, p := range pods {
		for _, b := range p.cover {
			b.ledger.Release(p.pod.UID, p.waitUsage(), p.claims())
		}
	}
}

// preemptionKind says whether preemption answers a unit's wait w, and how: Reclaim
// for a wait on lent quota when the unit asks for no more than its budgets' own hard
// and they allow it (lowerOnly: only pods of lower priority than the unit's lowest),
// WithinBudget for a budget that does not fit and preempts lower priorities. ok is
// false otherwise.
func preemptionKind(unit []*podState, budgets []*budget, add demand, w waitInfo) (reason PreemptionReason, lowerOnly bool, ok bool) {
	switch {
	case w.code == CodeNoLendable:
		if borrowsUnder(w.budget, budgets, add) {
			return "", false, false // it would borrow itself: borrowers do not reclaim
		}
		for _, c := range budgets {
			if c.place.Parent() != w.budget {
				continue
			}
			switch c.spec.Reclaim {
			case "", v1alpha1.ReclaimAny:
			case v1alpha1.ReclaimLowerPriority:
				lowerOnly = true
			default: // Never, or a value past an older CRD: evict nobody
				return "", false, false
			}
		}
		return PreemptReclaim, lowerOnly, true
	case w.code == CodeInsufficient && w.budget.spec.WithinBudget == v1alpha1.WithinBudgetLowerPriority:
		return PreemptWithinBudget, true, true
	}
	return "", false, false
}

// borrowsUnder reports whether a unit would take a member of f's family among budgets
// beyond its hard.
func borrowsUnder(f *budget, budgets []*budget, add demand) bool {
	for _, c := range budgets {
		if c.place.Parent() != f {
			continue
		}
		if _, over := c.ledger.ExcessOverHard(add(c)); over {
			return true
		}
	}
	return false
}

// candidates returns what may be preempted for the unit, as candidates (a group's
// running members together), in the order they are to be chosen: the pods of the
// siblings that borrow (Reclaim) or of the budget (WithinBudget), of lower priority
// than the unit's lowest when lowerOnly, filtered and ordered by victimCandidates.
func (pr *preemptions) candidates(reason PreemptionReason, lowerOnly bool, unit []*podState, budgets []*budget, w waitInfo) []victimCandidate {
	prio := slices.MinFunc(unit, func(a, b *podState) int { return cmp.Compare(a.pod.Priority, b.pod.Priority) }).pod.Priority
	var pods []*podState
	take := func(from iter.Seq[*podState]) {
		for p := range from {
			if !lowerOnly || p.pod.Priority < prio {
				pods = append(pods, p)
			}
		}
	}
	if reason == PreemptReclaim {
		for _, s := range w.budget.place.Children() {
			if !slices.Contains(budgets, s) && s.ledger.Borrows() {
				take(s.ledger.Charged())
			}
		}
	} else {
		take(w.budget.ledger.Charged())
	}
	return pr.victimCandidates(pods, unit)
}
