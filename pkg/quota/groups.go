package quota

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Groups (DESIGN: Groups). Pods with the same quotagate.io/group label in one namespace
// are admitted all together once group-size of them are gated and their sum fits every
// budget that covers any of them. Nothing is reserved for a group until the whole group
// fits, so two half-fitting groups cannot deadlock each other.
//
// A group is "started" once any member is admitted (or was running when first seen,
// say after a manager restart): its remaining gated members are then admitted together
// as soon as they fit, without waiting for group-size again; they belong to a group
// that already runs. When members disagree on group-size, the largest wins.

type groupKey struct{ namespace, name string }

type group struct {
	key     groupKey
	members map[types.UID]*podState // non-terminal members
	size    int
}

// started reports whether some member is admitted or running.
func (g *group) started() bool {
	for _, m := range g.members {
		if m.phase != phaseWaiting {
			return true
		}
	}
	return false
}

// waiting returns the gated members, by UID.
func (g *group) waiting() []*podState {
	var out []*podState
	for _, m := range g.members {
		if m.phase == phaseWaiting {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b *podState) int { return cmpUID(a.pod.UID, b.pod.UID) })
	return out
}

func cmpUID(a, b types.UID) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (q *AdmissionQueue) joinGroup(p *podState) {
	if p.pod.Group == "" || p.pod.GroupError != "" {
		return
	}
	k := groupKey{namespace: p.pod.Namespace, name: p.pod.Group}
	g := q.groups[k]
	if g == nil {
		g = &group{key: k, members: map[types.UID]*podState{}}
		q.groups[k] = g
	}
	g.members[p.pod.UID] = p
	p.group = g
}

// leaveGroup takes the pod out of its group and re-settles the members left behind.
func (q *AdmissionQueue) leaveGroup(p *podState) {
	g := p.group
	if g == nil {
		return
	}
	delete(g.members, p.pod.UID)
	p.group = nil
	if len(g.members) == 0 {
		delete(q.groups, g.key)
		return
	}
	q.settleGroup(g)
}

// settleGroup re-places every gated member of the group after a change to the group
// (a member came, went, was admitted or failed): parked while the group is incomplete
// or can never fit, queued otherwise; admitted at once when no budget covers any of
// them or their namespace is not opted in.
func (q *AdmissionQueue) settleGroup(g *group) {
	waiting := g.waiting()
	for _, m := range waiting {
		q.detach(m)
	}
	if len(waiting) == 0 {
		return
	}
	g.size = 0
	for _, m := range g.members {
		g.size = max(g.size, m.pod.GroupSize)
	}
	best := ownKey(&waiting[0].pod)
	for _, m := range waiting[1:] {
		if k := ownKey(&m.pod); keyLess(k, best) {
			best = k
		}
	}
	for _, m := range waiting {
		m.order = best
	}

	var ready []*podState
	for _, m := range waiting {
		if !m.inBackoff {
			ready = append(ready, m)
		}
	}
	park := q.groupPark(g, waiting)
	var reason Reason
	switch {
	case len(ready) == 0:
	case q.released(g.key.namespace):
		reason = q.releaseReason(g.key.namespace)
	case park == nil && !q.opts.holdUncovered && allUncovered(waiting) && (len(ready) == len(waiting) || g.started()):
		reason = noBudgetReason()
	}
	if reason.Code != "" && q.admitNow(ready, reason) {
		for _, m := range waiting {
			if m.inBackoff {
				q.place(m, nil)
			}
		}
		return
	}
	for _, m := range waiting {
		q.place(m, park)
	}
}

func allUncovered(ms []*podState) bool {
	for _, m := range ms {
		if len(m.cover) > 0 {
			return false
		}
	}
	return true
}

func keyLess(a, b orderKey) bool {
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	if a.created != b.created {
		return a.created < b.created
	}
	return a.uid < b.uid
}

// groupPark returns why the group's gated members cannot be queued, or nil.
func (q *AdmissionQueue) groupPark(g *group, waiting []*podState) *waitInfo {
	if !g.started() && len(waiting) < g.size {
		return &waitInfo{code: CodeGroupIncomplete, have: len(g.members), want: g.size}
	}
	budgets, sums := unitCharges(waiting)
	for _, b := range budgets {
		if r, over := firstExcess(b.hardNames, b.hard, nil, sums[b]); over {
			return &waitInfo{code: CodeNeverFits, budget: b, resource: r, requested: sums[b][r]}
		}
	}
	return nil
}

// unitCharges returns the budgets that cover any of the pods, in first-seen order, and
// the sum each of them would be charged.
func unitCharges(pods []*podState) ([]*budget, map[*budget]corev1.ResourceList) {
	var order []*budget
	sums := map[*budget]corev1.ResourceList{}
	for _, p := range pods {
		for _, b := range p.cover {
			sum, ok := sums[b]
			if !ok {
				sum = corev1.ResourceList{}
				sums[b] = sum
				order = append(order, b)
			}
			addTo(sum, p.pod.Usage)
		}
	}
	return order, sums
}

// evaluateGroup decides for the whole group that p belongs to: all its ready gated
// members are admitted in one step, or none is.
func (q *AdmissionQueue) evaluateGroup(g *group) {
	var cands []*podState
	for _, m := range g.waiting() {
		if !m.inBackoff && !m.parked {
			cands = append(cands, m)
		}
	}
	if !g.started() && len(cands) < g.size {
		q.fail(cands, waitInfo{code: CodeGroupBackoff})
		return
	}
	budgets, sums := unitCharges(cands)
	if w, blocked := q.blocked(budgets, func(h *podState) bool { return h.group == g }); blocked {
		q.fail(cands, w)
		return
	}
	for _, b := range budgets {
		if r, over := firstExcess(b.hardNames, b.hard, b.used, sums[b]); over {
			q.fail(cands, waitInfo{code: CodeInsufficient, budget: b, resource: r, requested: sums[b][r]})
			return
		}
	}
	q.admitUnit(cands, Reason{Code: CodeFits, Message: fitsMessage(g, budgets)})
}
