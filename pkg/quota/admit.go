package quota

import (
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/pkg/quota/hours"
	"github.com/quotagate/quotagate/pkg/quota/internal/heap"
	"github.com/quotagate/quotagate/pkg/quota/internal/topology"
)

// admitter is the part that takes decisions: Admit's pass over the dirty budgets'
// heads, each unit admitted (charged, handed out) or failed with why it waits, and
// what the clock makes due. It owns the decisions not yet returned (out), the pods to
// admit without quota at the next Admit (immediate), the pods backing off, and when the
// inadmissible pods were last flushed. Placing a pod (where it waits) is the placement
// part's; the admitter asks it to place a pod again, or to forget one.
type admitter struct {
	opts        *options
	topology    *topology.Topology[*budget]
	agenda      *agenda
	charges     *charges
	families    *families
	preemptions *preemptions
	pods        *podIndex
	flavors     *flavorIndex
	hours       *hourBooks

	out       []Admission             // decided, not yet returned by Admit
	deciding  bool                    // inside Admit: decisions may be taken
	passes    passes                  // Admit's passes, for the family part's memo
	immediate map[types.UID]*podState // pods to admit without quota at the next Admit
	backoff   heap.Heap[*podState]    // pods waiting for their retry time
	cooldowns heap.Heap[*podState]    // pods waiting for their preemption cooldown to end
	lastFlush time.Time
}

func newAdmitter(o *options, t *topology.Topology[*budget], ag *agenda, c *charges, f *families, pr *preemptions, pods *podIndex, fl *flavorIndex, h *hourBooks) *admitter {
	a := &admitter{
		opts: o, topology: t, agenda: ag, charges: c, families: f, preemptions: pr, pods: pods, flavors: fl, hours: h,
		immediate: map[types.UID]*podState{},
		backoff: heap.New(func(p, o *podState) bool { return p.attempt.retryAt.Before(o.attempt.retryAt) },
			func(p *podState) *int { return &p.attempt.backoffIndex }),
		cooldowns: heap.New(func(p, o *podState) bool { return p.attempt.preemptAt.Before(o.attempt.preemptAt) },
			func(p *podState) *int { return &p.attempt.cooldownIndex }),
		lastFlush: o.clock.Now(),
	}
	f.countPassesWith(&a.passes)
	return a
}

// passes counts the admitter's passes over the dirty budgets (Admit, after its timers):
// the family part remembers what a family's waiting pods claim for one pass and asks
// here which pass is under way (families.lenderClaims), so that a pass that asks no
// family does not enter the family part.
type passes struct {
	n    uint64 // moves on at each pass's start and end
	open bool
}

func (c *passes) begin() { c.n++; c.open = true }
func (c *passes) end()   { c.n++; c.open = false }

// current is the pass under way, and whether one is.
func (c *passes) current() (uint64, bool) { return c.n, c.open }

// Admit evaluates the budgets whose queues changed since the last call (and whatever
// the clock made due: backoffs, grace periods, the periodic flush) and returns the
// pods to ungate, each already reserved. It is cheap when nothing changed: only dirty
// budgets are looked at, and only their heads. Done must be called for every
// admission returned.
//
// The admitter decides; the placer puts back in their queues the pods whose timers
// ended and those admitNow deferred to here. Decisions may be taken from the start
// (admitter.deciding): a pod placed again on the way may be admitted at once.
func (q *AdmissionQueue) Admit() []Admission {
	q.mu.Lock()
	defer q.mu.Unlock()
	defer q.admit.decide()()
	q.runTimers(q.opts.clock.Now())
	for _, p := range q.admit.takeImmediate() {
		if !p.forgotten && p.phase == phaseWaiting {
			q.place.settleWaiting(p)
		}
	}
	return q.admit.admit()
}

// decide lets the admitter take decisions until the function it returns is called.
func (a *admitter) decide() (done func()) {
	a.deciding = true
	return func() { a.deciding = false }
}

// takeImmediate returns the pods admitNow deferred to this Admit, by UID, and forgets
// them.
func (a *admitter) takeImmediate() []*podState {
	if len(a.immediate) == 0 {
		return nil
	}
	pending := slices.SortedFunc(maps.Values(a.immediate), compareUIDs)
	clear(a.immediate)
	return pending
}

// admit takes Admit's decisions: the dirty budgets' heads, until no wake is left to
// check, then the evictions due.
func (a *admitter) admit() []Admission {
	a.passes.begin()
	a.hours.beginPass()
	defer a.passes.end()
	for {
		for b := a.agenda.next(); b != nil; b = a.agenda.next() {
			e := b.queues.activeHead()
			if e == nil || !b.place.Admitting() || (b.strict() && !sameUnit(b.queues.strictHead(), e)) {
				a.agenda.pop()
				continue
			}
			a.evaluate(e.pod)
		}
		if !a.agenda.recheckWakes() {
			break
		}
	}
	a.preemptions.evictOverHard()
	if over := a.hours.overrun(); len(over) > 0 {
		a.preemptions.evictOverrun(over, a.pods.get)
	}
	out := a.out
	a.out = nil
	return out
}

// sameUnit reports whether two entries are the same pod or members of one group
// (evaluating one evaluates the whole group).
func sameUnit(a, b *entry) bool {
	return a == b || (a != nil && b != nil && a.pod.group != nil && a.pod.group == b.pod.group)
}

// evaluate decides for the pod at the head of an active queue (with its group, if it
// has one). Either way the pod leaves every active queue: admitted, or inadmissible
// everywhere with the reason.
func (a *admitter) evaluate(p *podState) {
	if p.group != nil {
		a.evaluateGroup(p.group)
		return
	}
	unit := []*podState{p}
	if w, blocked := a.blocked(p.cover, func(h *podState) bool { return h == p }); blocked {
		a.fail(unit, w)
		return
	}
	if w, waits := a.hours.wait(unit, p.cover); waits {
		a.fail(unit, w)
		return
	}
	var f *Flavor
	if anyFlavored(p.cover) {
		c, w, ok := a.flavors.choices(p.cover, &p.pod, p.usage())
		if !ok {
			a.fail(unit, w)
			return
		}
		var waits bool
		if f, waits = a.onFlavors(unit, p.cover, c, a.addsOnFlavor(p)); waits {
			return
		}
	} else if a.waitsForCapacity(unit, p.cover, p.adds, waitOn{}) {
		return
	}
	a.admitUnit(unit, f, Reason{Code: CodeFits, Message: fitsMessage(nil, p.cover, f)})
}

// evaluateGroup decides for the whole group that p belongs to: all its ready gated
// members are admitted in one step, or none is. It runs once per evaluation of the
// group, not once per member.
func (a *admitter) evaluateGroup(g *group) {
	var cands []*podState
	for _, r := range g.waiting.Items() {
		if m := r.pod; !m.inBackoff && !m.parked {
			cands = append(cands, m)
		}
	}
	slices.SortFunc(cands, compareUIDs)
	if g.parts != nil {
		// The members of parts that do not go are parked (partPark); the others may
		// still miss members that back off, or are parked for reasons of their own.
		unit, rest := g.completeUnit(cands)
		if len(unit) == 0 {
			a.fail(cands, waitInfo{code: CodeGroupBackoff})
			return
		}
		a.fail(rest, waitInfo{code: CodeGroupBackoff})
		cands = unit
	} else if !g.started() && len(cands) < g.size {
		a.fail(cands, waitInfo{code: CodeGroupBackoff})
		return
	}
	budgets, sums := unitCharges(cands)
	if w, blocked := a.blocked(budgets, func(h *podState) bool { return h.group == g }); blocked {
		a.fail(cands, w)
		return
	}
	if w, waits := a.hours.wait(cands, budgets); waits {
		a.fail(cands, w)
		return
	}
	var f *Flavor
	if anyFlavored(budgets) {
		c, w, ok := a.groupChoices(cands)
		if !ok {
			a.fail(cands, w)
			return
		}
		var waits bool
		if f, waits = a.onFlavors(cands, budgets, c, a.groupOnFlavor(cands, sums)); waits {
			return
		}
	} else if a.waitsForCapacity(cands, budgets, sumsDemand(sums), waitOn{}) {
		return
	}
	a.admitUnit(cands, f, Reason{Code: CodeFits, Message: fitsMessage(g, budgets, f)})
	for _, m := range cands {
		g.sync(m)
	}
}

// waitsForCapacity decides for a unit that nothing but capacity blocks, adding add(b)
// to each budget b of budgets: when it does not fit, it fails (and may preempt), and
// when it would borrow while a sibling with a smaller share goes first, it yields.
// It reports whether the unit waits; if not, the caller admits it. Only a unit with a
// borrowing family asks the family part, once. When it waits, it waits on on.
func (a *admitter) waitsForCapacity(unit []*podState, budgets []*budget, add demand, on waitOn) bool {
	var w waitInfo
	var over, yield bool
	if inBorrowingFamily(budgets) {
		w, over, yield = a.families.admits(unit[0], budgets, add, on.flavor)
	} else {
		w, over = ledgersWait(budgets, add)
	}
	w.flavor, w.anyFlavor = on.flavor, on.anyFlavor
	switch {
	case over:
		a.failOn(unit, w, on.flavor)
		if pending := a.preemptions.decide(unit, budgets, add, w); !pending.at.IsZero() {
			a.coolDown(unit, pending)
		}
	case yield:
		a.failOn(unit, w, on.flavor)
	}
	return over || yield
}

// waitOn is the flavor a unit that waits for capacity waits on (waitInfo.flavor), or
// that it waits on any of several (anyFlavor); zero for a unit with no flavors.
type waitOn struct {
	flavor    string
	anyFlavor bool
}

// capacityWait returns why a unit that adds add(b) to each budget b of budgets does not
// fit (over is false when it fits): the first budget that has no room for it, in the
// order of budgets, or its borrowing family (families.capacityWait).
func (a *admitter) capacityWait(budgets []*budget, add demand) (w waitInfo, over bool) {
	if inBorrowingFamily(budgets) {
		return a.families.capacityWait(budgets, add)
	}
	return ledgersWait(budgets, add)
}

// blocked returns why a unit may not be admitted now regardless of capacity: a
// covering budget does not admit, or a StrictFIFO budget has a pod of another unit at
// its head. Because admission order is one global order, the unit that is first
// everywhere is never blocked by order, so StrictFIFO budgets cannot wait on each other
// in a cycle.
func (a *admitter) blocked(cover []*budget, inUnit func(*podState) bool) (waitInfo, bool) {
	for _, b := range cover {
		if !b.place.Admitting() {
			return waitInfo{code: CodeBudgetClosed, budget: b}, true
		}
	}
	for _, b := range cover {
		if !b.strict() {
			continue
		}
		if h := b.queues.strictHead(); h != nil && !inUnit(h.pod) {
			return waitInfo{code: CodeBehindHead, budget: b, ahead: h.pod.pod.PodRef}, true
		}
	}
	return waitInfo{}, false
}

// stuck reports whether a waiting pod may not be admitted now regardless of capacity
// (blocked): a covering budget does not admit, or a StrictFIFO head of another unit is
// ahead of it.
func (a *admitter) stuck(p *podState) bool {
	_, blocked := a.blocked(p.cover, func(h *podState) bool { return h == p || (p.group != nil && h.group == p.group) })
	return blocked
}

// fail records why the unit waits and moves it from active to inadmissible in every
// budget: only an event in the budget that blocks it can change the answer. The family
// part records a wait in a borrowing family (families.failed).
func (a *admitter) fail(unit []*podState, w waitInfo) { a.failOn(unit, w, "") }

// failOn is fail for a unit that waits on flavor fl ("" for none): each pod's wait
// names the flavors it would be charged on there (waitInfo.reach).
func (a *admitter) failOn(unit []*podState, w waitInfo, fl string) {
	var on *Flavor
	if fl != "" {
		on = a.flavors.get(fl)
	}
	for _, p := range unit {
		old, reach := p.wait, w.reach
		if on != nil {
			reach = a.flavors.reach(&p.pod, on)
		}
		p.waitFor(w, reach)
		a.agenda.moveAll(p, queueActive, queueInadmissible)
		if inBorrowingFamily(p.cover) || familyWait(old) || familyWait(w) {
			if f := a.families.failed(p, old, w); f != nil && a.topology.Alive(f) {
				// It no longer claims lendable quota in that family: borrowers it held
				// back look again.
				defer a.agenda.wake(f)
			}
		}
	}
}

// admitNow admits a unit that needs no quota decision: no budget covers it, or its
// namespace is not opted in. Outside Admit the decision is deferred to the next Admit,
// which checks again (a budget created in between may cover the pods by then); it then
// reports false and the caller places the pods as usual meanwhile.
func (a *admitter) admitNow(unit []*podState, reason Reason) bool {
	if a.deciding {
		a.admitUnit(unit, nil, reason)
		return true
	}
	for _, p := range unit {
		a.immediate[p.pod.UID] = p
	}
	return false
}

// admitUnit admits pods in one step: each is charged to every budget that covers it
// (reserved before its patch is sent) and leaves every queue.
func (a *admitter) admitUnit(unit []*podState, f *Flavor, reason Reason) {
	for _, p := range unit {
		a.agenda.detachAdmitted(p) // before its flavor: pending is given back without one
		p.place(f, nil)
		if f != nil {
			p.place(f, a.flavors.reach(&p.pod, f))
		}
		a.backoff.Remove(p)
		a.cooldowns.Remove(p)
		p.assume()
		p.attempt.admitted = reason
		p.attempt.admittedAt = a.opts.clock.Now()
		a.charges.charge(p, keysOf(p.cover), p.pod.Labels)
		p.attempt.borrowing = nil
		if inBorrowingFamily(p.charge.budgets()) {
			p.attempt.borrowing = a.families.admitted(p)
		}
		if p.preemption.touched() {
			a.preemptions.preemptorAdmitted(p, keysOf(p.charge.budgets()))
		}
		a.handOut(p)
	}
	// The unit's pods stop claiming in their families when they are charged (a charge
	// moves its members' ledger versions on); a StrictFIFO head that leaves lets the pods
	// behind it claim: that the family part cannot see.
	if slices.ContainsFunc(unit, func(p *podState) bool { return slices.ContainsFunc(p.cover, (*budget).strict) }) {
		a.families.changed()
	}
	if slices.ContainsFunc(unit, func(p *podState) bool { return inBorrowingFamily(p.charge.budgets()) }) {
		a.families.unitAdmitted(unit) // detachAdmitted woke its families as for room taken
	}
	if verifySettled {
		a.agenda.checkSettled(a.capacityWait, a.stuck)
	}
}

// handOut returns the admission of an assumed pod from this Admit: the first time, or
// again to retry an ungate whose outcome is not known. Either names the budgets that
// admitted it (its pins, charged when it was admitted): a budget that came to cover it
// in between is not one, and written into its admitted-by it would pin the pod there
// after a restart, where in memory it is not.
func (a *admitter) handOut(p *podState) {
	p.attempt.inFlight = true
	a.out = append(a.out, Admission{
		Pod:        p.pod.PodRef,
		Budgets:    slices.Clone(p.charge.pins()),
		Borrowing:  p.attempt.borrowing,
		Group:      p.pod.Group,
		Reason:     p.attempt.admitted,
		Created:    p.pod.Created,
		Flavor:     p.flavor,
		Labels:     p.charge.coverLabels(),
		decided:    decisionOf(&p.pod),
		Claims:     p.pod.Claims,
		MaxRuntime: p.pod.DeclaredRuntime,
	})
}

// familyWait reports whether a wait is on a borrowing family (the family part's).
func familyWait(w waitInfo) bool { return w.code == CodeNoLendable || w.code == CodeFairShare }

// reclaiming says whether b is still being brought back within its ceiling after a
// window ended (preemptions.reclaiming), for its status.
func (a *admitter) reclaiming(b *budget) bool { return a.preemptions.reclaiming(b) }

// hoursState is b's hours now (hourBooks.state), for its status.
func (a *admitter) hoursState(b *budget) *hours.State { return a.hours.state(b) }

// memoryState is b's memory under its parent for its status, nil for none.
func (a *admitter) memoryState(b *budget) *FairSharingStatus {
	st, share, ok := a.hours.memoryState(b)
	if !ok {
		return nil
	}
	return &FairSharingStatus{AsOf: st.AsOf, Used: st.Used, Share: share}
}
