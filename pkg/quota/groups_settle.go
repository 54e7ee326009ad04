package quota

import "github.com/quotagate/quotagate/pkg/quota/internal/amount"

// How the queue places a group's gated members and admits a group (docs/budgets.md,
// "Groups: all or nothing"); the group's own accounting is the group's (group.sync).

// neverFits returns why a group whose members' sum (each claim counted once, charged
// already or not: the budget holds it while they run) exceeds a covering budget's hard,
// or one of whose members leaves unset what a covering budget tracks (unsetPark), can
// never be admitted: the first such budget, the budgets taken in the order the members
// (by UID) name them.
func neverFits(waiting []*podState) *waitInfo {
	for _, m := range waiting {
		if w := unsetPark(m.pod.Unset, m.cover, m.pod.PodRef); w != nil {
			return w
		}
	}
	budgets, sums := unitSums(waiting, false)
	for _, b := range budgets {
		if r, over := b.ledger.NeverFits(sums[b]); over {
			return &waitInfo{code: CodeNeverFits, budget: b, resource: r, requested: sums[b][r]}
		}
	}
	if !inBorrowingFamily(budgets) {
		return nil
	}
	if w, never := familyNeverFits(budgets, sumsDemand(sums)); never {
		return &w
	}
	return nil
}

// groupWaitCounts returns how many members the group of a pod parked as incomplete
// has and wants, now: members that come and go do not re-park the others.
func groupWaitCounts(p *podState, w *waitInfo) (have, want int) {
	if g := p.group; g != nil {
		return g.have(), g.size
	}
	return w.have, w.want
}

// unitCharges returns the budgets that cover any of the pods, in first-seen order, and
// the sum each of them would be charged.
func unitCharges(pods []*podState) ([]*budget, map[*budget]amount.List) {
	return unitSums(pods, true)
}

// unitSums is unitCharges; without lessCharged, a claim a budget charges already (for
// a pod that runs) is counted too: what the unit uses of the budget once admitted,
// which is what must fit its ceiling (neverFits), however long that pod runs.
func unitSums(pods []*podState, lessCharged bool) ([]*budget, map[*budget]amount.List) {
	var order []*budget
	sums := map[*budget]amount.List{}
	// counted are the claims a member before counted, per budget: a claim that several
	// members use is charged once (ClaimCharge), and so is counted once here.
	var counted map[*budget]map[string]bool
	for _, p := range pods {
		claims := p.claims()
		for _, b := range p.cover {
			sum, ok := sums[b]
			if !ok {
				sum = amount.List{}
				sums[b] = sum
				order = append(order, b)
			}
			if len(claims) == 0 {
				sum.Add(p.usage())
				continue
			}
			if counted == nil {
				counted = map[*budget]map[string]bool{}
			}
			if counted[b] == nil {
				counted[b] = map[string]bool{}
			}
			// Less the claims b charges already (ledger.Ledger.Unshared) or a member before
			// counted here; nil while nothing is taken off.
			var add amount.List
			for _, c := range claims {
				if lessCharged && b.ledger.ChargesClaim(c.Key) || counted[b][c.Key] {
					if add == nil {
						add = p.usage().Clone() // usage is shared: never written
					}
					add.Sub(c.Usage)
				}
				counted[b][c.Key] = true
			}
			if add == nil {
				add = p.usage()
			}
			sum.Add(add)
		}
	}
	return order, sums
}

func (pl *placer) joinGroup(p *podState) { pl.groups.join(p) }

// leaveGroup takes the pod out of its group and re-settles the members left behind.
func (pl *placer) leaveGroup(p *podState) {
	if g := pl.groups.leave(p); g != nil {
		pl.settleChange(g, p)
	}
}

// settleMember re-places a group member after anything about it changed: it came,
// was seen running, or is gated again (after a failed ungate, a changed spec, a
// changed coverage).
func (pl *placer) settleMember(p *podState) { pl.settleChange(p.group, p) }

// settleChange brings the group up to date after p (a member, or one that just left)
// changed: only p is placed when the group's placement stays as it was, else every
// gated member is re-placed (settleGroup).
func (pl *placer) settleChange(g *group, p *podState) {
	g.sync(p)
	if p.group == g && p.phase == phaseWaiting {
		pl.startPark(p)
	}
	if !pl.keepPlacement(g) {
		pl.settleGroup(g)
		return
	}
	if p.group == g && p.phase == phaseWaiting {
		pl.agenda.detach(p)
		pl.place(p, pl.memberPark(g, p))
	}
	if len(g.moved) > 0 {
		// A part of a CompositePodGroup's gang started or stopped going: its
		// members, and only they, are placed again.
		for _, m := range g.movedMembers() {
			if m != p {
				pl.agenda.detach(m)
				pl.place(m, pl.memberPark(g, m))
			}
		}
	}
	if g.placed == placedQueued {
		pl.kick(g)
	}
}

// keepPlacement reports whether the group's gated members may stay where they are
// after a change to one of them: settleGroup would place them the same way (an
// incomplete group stays incomplete; a queued group stays queued under the same key).
// It costs O(budgets the group touches), not a pass over the members.
func (pl *placer) keepPlacement(g *group) bool {
	best, ok := g.best()
	if !ok || pl.released(g.key.namespace) {
		return false
	}
	park := pl.groupPark(g)
	switch g.placed {
	case placedIncomplete:
		if park == nil || park.code != CodeGroupIncomplete {
			return false
		}
		g.order = best   // every gated member is parked: no heap compares them
		g.movedMembers() // parked by the group, whatever their parts
		return true
	case placedQueued:
		// A group no budget covers may be admitted at once: settleGroup decides. So may
		// a gang whose members that may go are all uncovered (goersUncovered).
		return park == nil && g.covered > 0 && !g.goersUncovered() && best == g.order && !g.mayNeverFit()
	}
	return false
}

// kick makes sure a queued group gets evaluated again after a change: settleGroup would
// move every gated member back to active, but evaluateGroup looks at all of them
// whichever queue they are in, so one member in active is enough.
func (pl *placer) kick(g *group) {
	for _, r := range g.waiting.Items() {
		m := r.pod
		if m.inBackoff || m.parked || !m.queued.any() {
			continue
		}
		pl.agenda.moveAll(m, queueInadmissible, queueActive)
		return
	}
}

// settleGroup re-places every gated member of the group: parked while the group is
// incomplete or can never fit, queued otherwise; admitted at once when no budget
// covers any of them or their namespace is not opted in.
func (pl *placer) settleGroup(g *group) {
	g.placed = placedAnyhow
	g.placedParts()
	waiting := g.waitingByUID()
	for _, m := range waiting {
		pl.agenda.detach(m)
	}
	if len(waiting) == 0 {
		return
	}
	g.order, _ = g.best()

	var ready []*podState
	for _, m := range waiting {
		pl.startPark(m)
		if !m.inBackoff {
			ready = append(ready, m)
		}
	}
	park := pl.groupPark(g)
	if park == nil && g.mayNeverFit() {
		park = neverFits(g.mayGo(waiting))
	}
	var reason Reason
	switch {
	case len(ready) == 0:
	case pl.released(g.key.namespace):
		reason = releaseReason(g.key.namespace)
	case park == nil && !pl.opts.holdUncovered && (g.covered == 0 || g.goersUncovered()) && (len(ready) == len(waiting) || g.started()):
		reason = noBudgetReason()
	}
	if reason.Code == CodeNoBudget && g.parts != nil {
		// A CompositePodGroup's gang takes its complete parts only, budget or not:
		// kube-scheduler would hold the others' pods short of their minCount.
		if ready, _ = g.completeUnit(ready); len(ready) == 0 {
			reason = Reason{}
		}
	}
	if reason.Code != "" && pl.admit.admitNow(ready, reason) {
		for _, m := range ready {
			g.sync(m)
		}
		for _, m := range waiting {
			if g.recs[m] != nil {
				// Backing off, or in a part that is not complete, which it waits for.
				var park *waitInfo
				if g.parts != nil {
					park = g.partPark(m)
				}
				pl.place(m, park)
			}
		}
		return
	}
	for _, m := range waiting {
		if park == nil && g.parts != nil {
			pl.place(m, g.partPark(m))
			continue
		}
		pl.place(m, park)
	}
	switch {
	case park == nil:
		g.placed = placedQueued
	case park.code == CodeGroupIncomplete:
		g.placed = placedIncomplete
	}
}

// memberPark is why a gated member waits for its group, or nil: the group's
// groupPark, else, in a CompositePodGroup's gang, its own part's (partPark).
func (pl *placer) memberPark(g *group, p *podState) *waitInfo {
	if w := pl.groupPark(g); w != nil || g.parts == nil {
		return w
	}
	return g.partPark(p)
}

// groupPark returns why the group's gated members wait for members: their namespace
// is not known yet (namespacePark), fewer of them exist than the group's size (and
// none runs), or uncovered pods are held and a gated member is covered by no budget
// (the group is admitted all together or not at all, and that member may not go: the
// others are parked, so that they block no StrictFIFO queue meanwhile). A group that can never fit is found
// by settleGroup (neverFits).
func (pl *placer) groupPark(g *group) *waitInfo {
	if w := pl.namespacePark(g.key.namespace); w != nil {
		return w
	}
	if !g.started() && !g.complete() {
		return &waitInfo{code: CodeGroupIncomplete, have: g.have(), want: g.size}
	}
	if len(pl.starts) > 0 {
		if w := pl.memberStartWait(g); w != nil {
			return w
		}
	}
	if pl.dependent {
		if w := memberDependencyWait(g); w != nil {
			return w
		}
	}
	if pl.opts.holdUncovered && g.covered < g.waiting.Len() {
		w := &waitInfo{code: CodeUncovered}
		for _, r := range g.waiting.Items() {
			if len(r.cover) == 0 && (w.ahead.UID == "" || r.pod.pod.UID < w.ahead.UID) {
				w.ahead = r.pod.pod.PodRef
			}
		}
		return w
	}
	return nil
}
