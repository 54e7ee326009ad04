package quota

import "time"

// Why a gated pod outside any group is parked, and the placer's side of start rules
// that every pod passes through (the rest of start control is placer.startWait and the rest of its timers, which a
// plain pod never enters: hack/podevent).

// startPark returns why a gated pod may not start yet, by its own start rule or a
// covering budget's (placer.startWait), or nil. A pod without one, in a core that holds no pod
// with one, costs a look at its budgets.
func (pl *placer) startPark(p *podState) *waitInfo {
	if len(pl.starts) == 0 && !hasStartRules(p) {
		return nil
	}
	return pl.startWait(p, pl.opts.clock.Now())
}

// hasStartRules reports whether a pod or a budget covering it has a start rule.
func hasStartRules(p *podState) bool {
	if p.pod.Start != nil || p.pod.StartError != "" {
		return true
	}
	for _, b := range p.cover {
		if b.spec.Start != nil {
			return true
		}
	}
	return false
}

// runStarts places again the pods whose start rules changed by now (the admitter's
// timers).
func (pl *placer) runStarts(now time.Time) {
	if len(pl.starts) > 0 {
		pl.fireStarts(now)
	}
}

// nextStart is when the first waiting pod's start rules change next.
func (pl *placer) nextStart() (time.Time, bool) {
	if len(pl.starts) == 0 {
		return time.Time{}, false
	}
	return pl.nextStartChange()
}

// singlePark returns why a pod outside any group cannot be queued, or nil; start is
// why it may not start yet (startPark).
func (pl *placer) singlePark(p *podState, start *waitInfo) *waitInfo {
	if w := pl.namespacePark(p.pod.Namespace); w != nil {
		return w
	}
	if start != nil {
		return start
	}
	if w := dependencyPark(p); w != nil {
		return w
	}
	if w := podGroupPark(p); w != nil {
		return w
	}
	if p.pod.GroupError != "" {
		return &waitInfo{code: CodeGroupInvalid}
	}
	if p.pod.ClaimsError != "" {
		return &waitInfo{code: CodeClaimPending}
	}
	if r := p.pod.Uncountable; r != "" {
		return &waitInfo{code: CodeUncountable, resource: r}
	}
	if w := unsetPark(p.pod.Unset, p.cover, PodRef{}); w != nil {
		return w
	}
	for _, b := range p.cover {
		if r, over := b.ledger.NeverFits(p.usage()); over {
			return &waitInfo{code: CodeNeverFits, budget: b, resource: r, requested: p.usage()[r]}
		}
	}
	if !inBorrowingFamily(p.cover) {
		return nil
	}
	if w, never := familyNeverFits(p.cover, usageDemand(p.usage())); never {
		return &w
	}
	return nil
}

// namespacePark holds the gated pods of a namespace the core has not seen yet: until
// its labels are known, neither the opt-in label nor the ClusterBudgets that select it
// by namespaceSelector are, so nothing about its pods may be decided. SetNamespace
// places them again.
func (pl *placer) namespacePark(namespace string) *waitInfo {
	if pl.knownNamespace(namespace) {
		return nil
	}
	return &waitInfo{code: CodeNamespaceUnknown}
}
