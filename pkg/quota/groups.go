package quota

import (
	"container/heap"
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
//
// Cost. A group can have thousands of members, and every change to one of them is
// handled under the core's only lock, so a change must not cost a pass over the group.
// The group keeps what its decisions need up to date as members change (the gated
// members in a heap by their own order key, how many give each group-size, what the
// gated members would charge each budget), and remembers how its gated members are
// placed (settleMember). A change that leaves that placement as it is (the usual case:
// one more member of a group still incomplete) places just the member that changed; a
// change that alters it (the group becomes complete, never fits, starts, or gets a new
// best member) re-places every gated member once (settleGroup). So forming a group of n
// costs O(n log n), not O(n² log n).

type groupKey struct{ namespace, name string }

type group struct {
	key     groupKey
	members map[types.UID]*podState // non-terminal members
	sizes   map[int]int             // how many members give each group-size
	sizeOf  map[*podState]int       // the group-size each member gave when it joined
	size    int                     // the largest group-size a member gives

	// The gated members, by their own order key (best first), with what each adds to
	// the budgets that cover it: updated by sync whenever a member changes.
	waiting memberHeap
	recs    map[*podState]*memberRec
	charges map[*budget]*budgetCharge
	covered int // gated members that some budget covers

	// order is the place in admission order that every gated member shares: the own
	// key of the best gated member when they were last placed. It changes only while
	// none of them is in a queue heap, since the heaps compare members by it.
	order  orderKey
	placed placement
}

// placement is how a group's gated members are placed, so that a change to one member
// that keeps it can place just that member.
type placement uint8

const (
	// placedAnyhow: nothing that a single member's change can keep (no gated member,
	// never fits, admitted without quota, held): the next change re-places them all.
	placedAnyhow placement = iota
	// placedIncomplete: all parked because the group has fewer members than its size.
	placedIncomplete
	// placedQueued: all in the queues (active, backoff or inadmissible) under g.order.
	placedQueued
)

// memberRec is one gated member as the group accounts it: its own key and what it
// adds to each budget that covered it when it was recorded.
type memberRec struct {
	pod   *podState
	key   orderKey
	cover []*budget
	usage corev1.ResourceList
	index int // in group.waiting
}

type budgetCharge struct {
	members int
	sum     corev1.ResourceList
}

func newGroup(k groupKey) *group {
	return &group{
		key:     k,
		members: map[types.UID]*podState{},
		sizes:   map[int]int{},
		sizeOf:  map[*podState]int{},
		recs:    map[*podState]*memberRec{},
		charges: map[*budget]*budgetCharge{},
	}
}

// started reports whether some member is admitted or running.
func (g *group) started() bool { return len(g.recs) < len(g.members) }

// waitingByUID returns the gated members, by UID (a deterministic order for placing
// and admitting them).
func (g *group) waitingByUID() []*podState {
	out := make([]*podState, len(g.waiting))
	for i, r := range g.waiting {
		out[i] = r.pod
	}
	slices.SortFunc(out, func(a, b *podState) int { return cmpUID(a.pod.UID, b.pod.UID) })
	return out
}

// best is the own key of the best gated member (the group's place in admission order).
func (g *group) best() (orderKey, bool) {
	if len(g.waiting) == 0 {
		return orderKey{}, false
	}
	return g.waiting[0].key, true
}

// sync brings the group's accounting of p up to date after p changed: p is recorded
// as a gated member while it is a gated member of g, with its current key, coverage
// and usage.
func (g *group) sync(p *podState) {
	if r := g.recs[p]; r != nil {
		heap.Remove(&g.waiting, r.index)
		delete(g.recs, p)
		g.account(r, -1)
	}
	if p.group != g || p.phase != phaseWaiting || g.members[p.pod.UID] != p {
		return
	}
	r := &memberRec{pod: p, key: ownKey(&p.pod), cover: p.cover, usage: p.pod.Usage}
	g.recs[p] = r
	heap.Push(&g.waiting, r)
	g.account(r, +1)
}

func (g *group) account(r *memberRec, sign int) {
	if len(r.cover) > 0 {
		g.covered += sign
	}
	for _, b := range r.cover {
		c := g.charges[b]
		if c == nil {
			c = &budgetCharge{sum: corev1.ResourceList{}}
			g.charges[b] = c
		}
		c.members += sign
		if sign > 0 {
			addTo(c.sum, r.usage)
		} else {
			subtractFrom(c.sum, r.usage)
		}
		if c.members == 0 {
			delete(g.charges, b)
		}
	}
}

// mayNeverFit reports whether the gated members' sum exceeds the hard of a budget that
// covers some of them. It is a quick check on the running sums; settleGroup computes
// the reason itself.
func (g *group) mayNeverFit() bool {
	for b, c := range g.charges {
		if _, over := firstExcess(b.hardNames, b.hard, nil, c.sum); over {
			return true
		}
	}
	return false
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
		g = newGroup(k)
		q.groups[k] = g
	}
	g.members[p.pod.UID] = p
	p.group = g
	g.sizeOf[p] = p.pod.GroupSize
	g.sizes[p.pod.GroupSize]++
	g.size = max(g.size, p.pod.GroupSize)
}

// leaveGroup takes the pod out of its group and re-settles the members left behind.
func (q *AdmissionQueue) leaveGroup(p *podState) {
	g := p.group
	if g == nil {
		return
	}
	delete(g.members, p.pod.UID)
	p.group = nil
	// The size it gave when it joined: its spec may have changed since.
	size := g.sizeOf[p]
	delete(g.sizeOf, p)
	if g.sizes[size]--; g.sizes[size] == 0 {
		delete(g.sizes, size)
		if size == g.size {
			g.size = 0
			for s := range g.sizes {
				g.size = max(g.size, s)
			}
		}
	}
	if len(g.members) == 0 {
		delete(q.groups, g.key)
		return
	}
	q.settleChange(g, p)
}

// settleMember re-places a group member after anything about it changed: it came,
// was seen running, or is gated again (after a failed ungate, a changed spec, a
// changed coverage).
func (q *AdmissionQueue) settleMember(p *podState) { q.settleChange(p.group, p) }

// settleChange brings the group up to date after p (a member, or one that just left)
// changed: only p is placed when the group's placement stays as it was, else every
// gated member is re-placed (settleGroup).
func (q *AdmissionQueue) settleChange(g *group, p *podState) {
	g.sync(p)
	if !q.keepPlacement(g) {
		q.settleGroup(g)
		return
	}
	if p.group == g && p.phase == phaseWaiting {
		q.detach(p)
		q.place(p, q.groupPark(g))
	}
	if g.placed == placedQueued {
		q.kick(g)
	}
}

// keepPlacement reports whether the group's gated members may stay where they are
// after a change to one of them: settleGroup would place them the same way (an
// incomplete group stays incomplete; a queued group stays queued under the same key).
// It costs O(budgets the group touches), not a pass over the members.
func (q *AdmissionQueue) keepPlacement(g *group) bool {
	best, ok := g.best()
	if !ok || q.released(g.key.namespace) {
		return false
	}
	park := q.groupPark(g)
	switch g.placed {
	case placedIncomplete:
		if park == nil || park.code != CodeGroupIncomplete {
			return false
		}
		g.order = best // every gated member is parked: no heap compares them
		return true
	case placedQueued:
		// A group no budget covers may be admitted at once: settleGroup decides.
		return park == nil && g.covered > 0 && best == g.order && !g.mayNeverFit()
	}
	return false
}

// kick makes sure a queued group gets evaluated again after a change: settleGroup would
// move every gated member back to active, but evaluateGroup looks at all of them
// whichever queue they are in, so one member in active is enough.
func (q *AdmissionQueue) kick(g *group) {
	for _, r := range g.waiting {
		m := r.pod
		if m.inBackoff || m.parked || len(m.entries) == 0 {
			continue
		}
		q.moveAll(m, queueInadmissible, queueActive)
		return
	}
}

// settleGroup re-places every gated member of the group: parked while the group is
// incomplete or can never fit, queued otherwise; admitted at once when no budget
// covers any of them or their namespace is not opted in.
func (q *AdmissionQueue) settleGroup(g *group) {
	g.placed = placedAnyhow
	waiting := g.waitingByUID()
	for _, m := range waiting {
		q.detach(m)
	}
	if len(waiting) == 0 {
		return
	}
	g.order, _ = g.best()

	var ready []*podState
	for _, m := range waiting {
		if !m.inBackoff {
			ready = append(ready, m)
		}
	}
	park := q.groupPark(g)
	if park == nil && g.mayNeverFit() {
		park = neverFits(waiting)
	}
	var reason Reason
	switch {
	case len(ready) == 0:
	case q.released(g.key.namespace):
		reason = q.releaseReason(g.key.namespace)
	case park == nil && !q.opts.holdUncovered && g.covered == 0 && (len(ready) == len(waiting) || g.started()):
		reason = noBudgetReason()
	}
	if reason.Code != "" && q.admitNow(ready, reason) {
		for _, m := range ready {
			g.sync(m)
		}
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
	switch {
	case park == nil:
		g.placed = placedQueued
	case park.code == CodeGroupIncomplete:
		g.placed = placedIncomplete
	}
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

// groupPark returns why the group's gated members wait for members: fewer of them
// exist than the group's size (and none runs). A group that can never fit is found
// by settleGroup (neverFits).
func (q *AdmissionQueue) groupPark(g *group) *waitInfo {
	if !g.started() && len(g.waiting) < g.size {
		return &waitInfo{code: CodeGroupIncomplete, have: len(g.members), want: g.size}
	}
	return nil
}

// neverFits returns why a group whose members' sum exceeds a covering budget's hard
// can never be admitted: the first such budget, the budgets taken in the order the
// members (by UID) name them.
func neverFits(waiting []*podState) *waitInfo {
	budgets, sums := unitCharges(waiting)
	for _, b := range budgets {
		if r, over := firstExcess(b.hardNames, b.hard, nil, sums[b]); over {
			return &waitInfo{code: CodeNeverFits, budget: b, resource: r, requested: sums[b][r]}
		}
	}
	return nil
}

// groupWaitCounts returns how many members the group of a pod parked as incomplete
// has and wants, now: members that come and go do not re-park the others.
func groupWaitCounts(p *podState, w *waitInfo) (have, want int) {
	if g := p.group; g != nil {
		return len(g.members), g.size
	}
	return w.have, w.want
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
// members are admitted in one step, or none is. It runs once per evaluation of the
// group, not once per member.
func (q *AdmissionQueue) evaluateGroup(g *group) {
	var cands []*podState
	for _, r := range g.waiting {
		if m := r.pod; !m.inBackoff && !m.parked {
			cands = append(cands, m)
		}
	}
	slices.SortFunc(cands, func(a, b *podState) int { return cmpUID(a.pod.UID, b.pod.UID) })
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
	for _, m := range cands {
		g.sync(m)
	}
}
