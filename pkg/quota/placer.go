package quota

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
	"github.com/quotagate/quotagate/pkg/quota/internal/heap"
	"github.com/quotagate/quotagate/pkg/quota/internal/topology"
)

// placer is the part that keeps every pod the core knows in its place: a gated pod
// waits in the queues of every budget that covers it (active, backoff, inadmissible,
// or parked with why), or is held, or is admitted at once when no quota decision is
// needed; an admitted or running pod is charged (charges). Every event about a pod
// (UpsertPod, DeletePod), a namespace or a budget's coverage comes here, and a group's
// members are placed together (placer.settleGroup). Deciding which waiting pod goes is
// the admitter's (admitter).
type placer struct {
	opts        *options
	topology    *topology.Topology[*budget]
	agenda      *agenda
	charges     *charges
	families    *families
	preemptions *preemptions
	groups      groupIndex
	pods        *podIndex
	admit       *admitter
	// records are the running pods whose charge labels are not written on them yet
	// (TakeRecords).
	records records
	// starts are the waiting pods with start rules, their own or their budgets' (a
	// pod's verdict and its next change), and startDue those with a next change, the
	// first first (placer.fireStarts).
	starts   map[*podState]*startTimer
	startDue heap.Heap[*startTimer]
	// dependent: a pod that waits for objects (Pod.Dependencies) was seen; until then
	// no group looks at its members' dependencies (memberDependencyWait).
	dependent bool
}

func newPlacer(o *options, t *topology.Topology[*budget], ag *agenda, c *charges, f *families, pr *preemptions, pods *podIndex, a *admitter) *placer {
	pl := &placer{opts: o, topology: t, agenda: ag, charges: c, families: f, preemptions: pr, groups: groupIndex{}, pods: pods, admit: a, records: records{},
		starts: map[*podState]*startTimer{}, startDue: heap.New(newStartHeapLess, func(t *startTimer) *int { return &t.index })}
	return pl
}

func (pl *placer) addPod(pod Pod) {
	p := &podState{pod: pod, order: ownKey(&pod), seen: pl.opts.clock.Now(), attempt: newPodAttempt(), charge: newPodCharge()}
	pl.dependent = pl.dependent || pod.Dependencies != nil
	pl.pods.add(p)
	p.cover = coverage(pl.topology, &p.pod)
	pl.joinGroup(p)
	if !pod.Gated {
		p.run()
		pl.chargeFirstSeen(p)
		if p.group != nil {
			pl.settleMember(p)
		}
		return
	}
	pl.settleWaiting(p)
}

func (pl *placer) updatePod(p *podState, pod Pod) {
	old := p.pod
	pl.dependent = pl.dependent || pod.Dependencies != nil
	sameGroup := old.Group == pod.Group && old.GroupSize == pod.GroupSize && old.GroupError == pod.GroupError && slices.Equal(old.GroupParts, pod.GroupParts) &&
		old.ClaimsError == pod.ClaimsError && old.Uncountable == pod.Uncountable && groupable(&old) == groupable(&pod)
	sameLabels := maps.Equal(old.Labels, pod.Labels)
	sameUsage := amount.EqualQuantities(old.Usage, pod.Usage) && sameClaims(old.Claims, pod.Claims)

	if pl.admit.provesNotUngated(p, pod) {
		// Seen still gated at a version newer than every attempt to ungate it: none of
		// them applied, and none can any more (each was fenced on an older version).
		p.setPod(pod)
		p.cover = coverage(pl.topology, &p.pod)
		if !sameGroup {
			pl.leaveGroup(p)
			pl.joinGroup(p)
		}
		pl.admit.giveBack(p)
		pl.settleWaiting(p) // its coverage is the view's, above
		return
	}

	if p.phase == phaseWaiting {
		if pod.Gated && sameGroup && sameLabels && sameUsage && slices.Equal(old.Unset, pod.Unset) && old.Priority == pod.Priority && old.Created.Equal(pod.Created) && maps.Equal(old.NodeSelector, pod.NodeSelector) &&
			old.Start.Equal(pod.Start) && old.StartError == pod.StartError && sameDependencyWait(old.Dependencies, pod.Dependencies) &&
			samePodGroup(old.PodGroup, pod.PodGroup) {
			p.pod = pod
			return
		}
		pl.agenda.detach(p) // before p.pod changes: pending is given back with the old usage
		p.setPod(pod)
		p.cover = coverage(pl.topology, &p.pod)
		if !pod.Gated {
			// Ungated by someone else (the namespace's release, an admin): it runs now.
			pl.admit.cancelRetry(p)
			p.run()
			pl.chargeFirstSeen(p)
		}
		if !sameGroup {
			pl.leaveGroup(p)
			pl.joinGroup(p)
		}
		if p.phase == phaseWaiting {
			pl.settleWaiting(p)
		} else if p.group != nil {
			pl.settleMember(p)
		}
		return
	}

	// Admitted (assumed or charged). A gated view of an assumed pod that does not prove
	// the attempts failed changes nothing: Done, a retry or a newer view settles it.
	p.setPod(pod)
	if _, unrecorded := pl.records[p.pod.UID]; unrecorded {
		if l, ok := p.pod.admittedLabels(); ok {
			delete(pl.records, p.pod.UID) // written: nothing left to record
			if !maps.Equal(l, p.charge.coverLabels()) {
				// Written by a manager that saw the pod before this one's first
				// (stale) view of it, which showed labels the tenant set since: the
				// record decides what covers the pod, as it would have at a restart.
				// Its pins follow the record too, as firstSeenPins would have set them.
				cover := coverage(pl.topology, p.viewWith(l))
				pins := p.charge.pins()
				if !p.pod.HasAdmittedBy {
					pins = keysOf(cover)
				}
				pl.charges.relabel(p, l, pins, cover)
			}
		}
	}
	if !pod.Gated && p.phase == phaseAssumed {
		p.run()
		pl.admit.seenUngated(p)
	}
	// Its charge is fixed (charges): a relabel changes nothing, and a change of usage
	// only lowers it.
	switch {
	case !sameUsage && pl.charges.shrink(p): // charged again, its grace period with it
	case !pod.ReleaseAt.IsZero():
		pl.charges.graceChanged(p)
	}
	if !sameGroup {
		pl.leaveGroup(p)
		pl.joinGroup(p)
		if p.group != nil {
			pl.settleMember(p)
		}
	}
}

// chargeFirstSeen charges a pod first seen running (or ungated by someone else): it is
// covered by the labels its admission recorded, else by those it has now, and pinned
// to the budgets that admitted it.
func (pl *placer) chargeFirstSeen(p *podState) {
	labels, recorded := firstSeenLabels(p)
	if !maps.Equal(labels, p.pod.Labels) {
		p.cover = coverage(pl.topology, p.viewWith(labels))
	}
	pl.charges.charge(p, firstSeenPins(p), labels)
	if !recorded {
		pl.records[p.pod.UID] = p
	}
}

// takeRecords returns the running pods whose charge labels are not written on them
// yet, and forgets them (TakeRecords).
func (pl *placer) takeRecords() []Record { return pl.records.take() }

// recordAgain keeps a pod whose record was not written, if it still runs.
func (pl *placer) recordAgain(uid types.UID) {
	if p := pl.pods.get(uid); p != nil && p.phase == phaseCharged {
		pl.records.note(p)
	}
}

// forget drops a pod that ended or was deleted.
func (pl *placer) forget(p *podState) {
	if p.phase == phaseWaiting {
		pl.agenda.detach(p)
	} else {
		pl.charges.end(p)
	}
	pl.admit.forgetPod(p)
	if p.preemption.touched() {
		pl.preemptions.forget(p)
	}
	if b := p.wait.budget; b != nil && b.family != nil {
		pl.families.forgetPod(b, p) // the family's records of what it waited for
	}
	delete(pl.records, p.pod.UID)
	if len(pl.starts) > 0 {
		pl.dropStart(p)
	}
	pl.pods.remove(p)
	if p.group != nil { // a pod outside any group does not enter the groups part
		pl.leaveGroup(p)
	}
}

// waitAgain places a pod whose charge was given back (admitter.giveBack) in its queues
// as it is now: a relabel while it was admitted changed nothing of its charge, but
// decides where it waits.
func (pl *placer) waitAgain(p *podState) {
	p.cover = coverage(pl.topology, &p.pod)
	pl.settleWaiting(p)
}

// settleWaiting (re)places a gated pod after anything about it changed: admitted at
// once when its namespace is not opted in (or, with WithHoldUncovered(false), no
// budget covers it), else parked or queued in every budget that covers it, or held.
func (pl *placer) settleWaiting(p *podState) {
	pl.agenda.detach(p)
	if p.group != nil {
		pl.settleMember(p)
		return
	}
	p.order = ownKey(&p.pod)
	park := pl.singlePark(p, pl.startPark(p))
	if !p.inBackoff {
		var reason Reason
		switch {
		case pl.released(p.pod.Namespace):
			reason = releaseReason(p.pod.Namespace)
		case len(p.cover) == 0 && !pl.opts.holdUncovered && park == nil:
			// Nothing holds it (its namespace is known, nothing of its own parks it) and
			// no budget covers it.
			reason = noBudgetReason()
		}
		if reason.Code != "" && pl.admit.admitNow([]*podState{p}, reason) {
			return
		}
	}
	pl.place(p, park)
}

// place puts a detached gated pod where it belongs: parked (with why) when park is
// set, else in backoff or active in every covering budget. Pods no budget covers are
// held, or wait for their group or their backoff.
func (pl *placer) place(p *podState, park *waitInfo) {
	p.park(park)
	if len(p.cover) == 0 {
		if park == nil && pl.opts.holdUncovered && !pl.released(p.pod.Namespace) {
			p.hold()
		}
		if p.parked {
			pl.agenda.hold(p)
		}
		return
	}
	switch {
	case park != nil:
		pl.agenda.attach(p, queueParked)
	case p.inBackoff:
		pl.agenda.attach(p, queueBackoff)
	default:
		pl.agenda.attach(p, queueActive)
	}
}

func (pl *placer) knownNamespace(namespace string) bool {
	_, known := pl.topology.NamespaceLabels(namespace)
	return known
}

// released reports whether a namespace is known and not opted in: its gated pods are
// let go without quota (removing the opt-in label releases them).
func (pl *placer) released(namespace string) bool {
	l, known := pl.topology.NamespaceLabels(namespace)
	return known && l[v1alpha1.EnabledLabel] != "true"
}

// resettle places every gated pod of b again (each may start or stop never fitting)
// and wakes b.
func (pl *placer) resettle(b *budget) {
	for _, p := range gatedIn(b) {
		if !p.forgotten && p.phase == phaseWaiting {
			pl.settleWaiting(p)
		}
	}
	pl.agenda.wake(b)
}

// recover re-computes coverage after a budget's selectors, parent or existence changed:
// the pods of its namespace for a Budget, every pod for a ClusterBudget.
func (pl *placer) recover(key BudgetKey) {
	var pods []*podState
	if key.IsCluster() {
		pods = pl.pods.sorted()
	} else {
		pods = pl.pods.sortedIn(key.Namespace)
	}
	for _, p := range pods {
		if p.forgotten {
			continue // forgotten while settling an earlier pod's group
		}
		if p.phase != phaseWaiting {
			pl.charges.coverAdmitted(p, coverage(pl.topology, p.chargeView()))
			continue
		}
		cover := coverage(pl.topology, &p.pod)
		if sameBudgets(cover, p.cover) {
			continue
		}
		pl.agenda.detach(p)
		p.cover = cover
		pl.settleWaiting(p)
	}
}

// namespaceChanged re-covers every pod of a namespace whose labels changed: the gated
// pods of a namespace seen for the first time, or released, or covered differently, are
// placed again; an admitted pod's charge moves with its coverage.
func (pl *placer) namespaceChanged(name string, wasKnown bool) {
	for _, p := range pl.pods.sortedIn(name) {
		if p.forgotten {
			continue // forgotten while settling an earlier pod's group
		}
		if p.phase != phaseWaiting {
			pl.charges.coverAdmitted(p, coverage(pl.topology, p.chargeView()))
			continue
		}
		cover := coverage(pl.topology, &p.pod)
		switch {
		case !wasKnown || !sameBudgets(cover, p.cover) || pl.released(name):
			pl.agenda.detach(p)
			p.cover = cover
			pl.settleWaiting(p)
		}
	}
}
