package quota

import (
	"slices"
)

// The queue's side of budget and namespace events: the topology changes (topology),
// then the pods it covers differently are moved and the budgets that may admit now are
// woken.

// UpsertBudget adds or changes a Budget or ClusterBudget. Changing hard, opening the
// budget or fixing its parent wakes its inadmissible pods; changing selectors or the
// parent re-computes which budgets cover which pods. An update that changes nothing
// the topology reads (a status write coming back, or hard alone) costs the same
// whatever the number of budgets; one that does resolves only the budgets it touches.
//
// A budget that cannot work admits nothing and says why in its status: a selector that
// does not parse (InvalidSelector; it then covers every pod it might have meant, see
// parseSelector), another invalid spec (InvalidSpec), a parent that does not exist
// (ParentNotFound), a parent chain that loops (ParentCycle, for every budget on the
// loop). Its pods stay gated, and its descendants are Closed with ClosedByParent, until
// it is fixed.
func (q *AdmissionQueue) UpsertBudget(spec Budget) {
	q.mu.Lock()
	defer q.mu.Unlock()
	b := q.topology.Lookup(spec.Key)
	coverChanged, hardChanged, resolve := true, false, true
	var reclaimAfter string // what the spec named before
	if b != nil {
		reclaimAfter = b.spec.ReclaimAfter
	}
	if b == nil {
		b = newBudget(spec)
		q.topology.Add(b)
	} else {
		oldStrict, oldStart := b.strict(), b.spec.Start
		resolve = q.topology.Respec(b, func() { coverChanged, hardChanged = b.setSpec(spec) })
		if oldStrict != b.strict() {
			q.agenda.wakeAll(b)
		}
		// A new start rule holds or lets go its gated pods (placer.startPark), as a
		// new hard may.
		hardChanged = hardChanged || !oldStart.Equal(spec.Start)
	}
	q.preemptions.setReclaimAfter(b, reclaimAfter)
	if q.hours.setSpec(b, b.ledger.Charged()) {
		hardChanged = true // what its hours hold changed: its waiting pods look again
	}
	q.agenda.markStatus(b)
	if resolve {
		q.resolveTopology(b)
	}
	if coverChanged {
		q.place.recover(spec.Key)
	}
	if hardChanged {
		q.limitsChanged(b)
	}
}

// DeleteBudget removes a budget: its charges vanish with it, and the pods it covered
// are re-evaluated against the budgets that remain. Budgets naming it as parent report
// ParentNotFound.
func (q *AdmissionQueue) DeleteBudget(key BudgetKey) {
	q.mu.Lock()
	defer q.mu.Unlock()
	b := q.topology.Remove(key)
	if b == nil {
		return
	}
	q.families.forgetBudget(b)
	q.preemptions.forgetBudget(b)
	q.hours.forgetBudget(b)
	q.resolveTopology(b)
	q.place.recover(key)
	if p := b.place.Parent(); p != nil && q.topology.Alive(p) {
		q.familyChanged(p) // resolve does not see a member that is gone
	}
	q.agenda.forgetBudget(b)
}

// SetNamespace records a namespace's labels (for namespaceSelectors and the opt-in
// label). A namespace whose opt-in label is removed has its gated pods released. The
// gated pods of a namespace seen for the first time, held until now (namespacePark),
// are placed. Every pod of the namespace is re-covered here, before the next Admit
// decides anything about them.
func (q *AdmissionQueue) SetNamespace(name string, l map[string]string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	wasKnown := q.place.knownNamespace(name)
	if q.topology.SetNamespace(name, l) {
		q.place.namespaceChanged(name, wasKnown)
	}
}

// DeleteNamespace forgets a namespace's labels.
func (q *AdmissionQueue) DeleteNamespace(name string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.topology.ForgetNamespace(name)
}

func sameBudgets(a, b []*budget) bool { return slices.Equal(a, b) }

// resolveTopology resolves the topology again after b came, went, or changed what
// resolve reads of it (the budgets it touches: topology.Topology.Resolve), marks the status of
// every budget whose state changed, and wakes those that start admitting.
func (q *AdmissionQueue) resolveTopology(b *budget) {
	changed, started, limits, families := q.topology.Resolve(b)
	for _, b := range changed {
		q.agenda.markStatus(b)
	}
	for _, b := range started {
		q.agenda.wake(b)
	}
	for _, b := range limits {
		q.limitsChanged(b)
	}
	for _, p := range families {
		if q.topology.Alive(p) {
			q.familyChanged(p)
		}
	}
}

// limitsChanged looks again at the pods of a budget whose hard, borrowing or lending
// limit changed: they may start or stop never fitting, and the rest get another look,
// as do the pods that wait on its family.
func (q *AdmissionQueue) limitsChanged(b *budget) {
	q.agenda.markStatus(b)
	q.place.resettle(b)
	if p := b.place.Parent(); p != nil && q.topology.Alive(p) {
		q.familyChanged(p)
	}
}

// familyChanged looks again at the pods waiting on p's family after a member came,
// went, or changed its limits: what the family lends changed, so its pods may start or
// stop never fitting (familyNeverFits), and those waiting for lendable quota look again.
func (q *AdmissionQueue) familyChanged(p *budget) {
	if p.place.Borrowers() == 0 && !q.families.watched(p) {
		return
	}
	q.place.resettle(p)
}

// gatedIn returns the gated pods a budget covers, by UID.
func gatedIn(b *budget) []*podState {
	entries := b.queues.entries()
	out := make([]*podState, len(entries))
	for i, e := range entries {
		out[i] = e.pod
	}
	slices.SortFunc(out, compareUIDs)
	return out
}
