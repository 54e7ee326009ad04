package quota

import (
	"iter"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
	"github.com/quotagate/quotagate/pkg/quota/internal/order"
)

// The core's record of one pod: where it waits, what it is charged, how its ungate
// attempts went.

type podPhase uint8

const (
	// phaseWaiting: gated, in queues (or held).
	phaseWaiting podPhase = iota
	// phaseAssumed: admitted by the core, charged, the ungate patch not yet seen.
	phaseAssumed
	// phaseCharged: the informer shows it ungated; charged until it ends.
	phaseCharged
)

// podState is the core's record of one non-terminal pod: what it is and where it
// waits, and what each part knows of it in a type of that part's (the package
// comment, "A pod's record").
type podState struct {
	pod   Pod
	phase podPhase
	order order.Key
	group *group
	// seen is when the core first saw the pod: a gated pod's wait is counted from then
	// for the preemption cooldown (preemptions.cooldownOf), on the core's own clock.
	seen time.Time

	cover  []*budget  // covering budgets: direct ones (Budgets, then ClusterBudgets), then ancestors
	queued podEntries // its entries in the covering budgets' queues while it waits (agenda)

	// units and claimUnits are pod.Usage and pod.Claims in amounts (usage, claims):
	// converted once per view of the pod, on first use; setPod forgets them. On a
	// flavor, they count every resource on the flavor too (onFlavor).
	units      amount.List
	claimUnits []claimAmount
	// flavor is the flavor it is admitted on (nil for none; flavorIndex), and reach the
	// flavors it is charged on: those whose nodes it can reach (flavorIndex.reach). Set
	// when it is charged, cleared when it waits again. A gated pod has none.
	flavor *Flavor
	reach  []string

	// charge is what the charges part knows of it: where it is charged, how much, and
	// what keeps it charged there (podCharge).
	charge podCharge
	// attempt is what the admitter knows of it: why and when it was admitted, how its
	// ungate attempts went, and its timers (podAttempt).
	attempt podAttempt

	wait      waitInfo // why it waits, from its latest evaluation or park
	parked    bool
	inBackoff bool
	// preemption is what the preemptions part knows of it without a lookup
	// (podPreemption).
	preemption podPreemption
	// forgotten is set when the core drops the record (forget): a later record of the
	// same UID is another podState.
	forgotten bool
}

// Where a pod waits (phase, wait, parked, inBackoff) changes only by the record's
// transitions below (TestRecordWriters): the placer and the admitter decide when, the
// record what a transition means. What holds across the four fields holds here: a pod
// the core admitted, or saw ungated, waits for nothing, is neither parked nor backing
// off (checkInvariants); only a waiting pod has a wait, a park or a backoff. A new
// record waits (phaseWaiting is the zero phase) until run says otherwise.

// run: the pod is seen ungated, when first seen, ungated by someone else, or its own
// ungate seen; it is charged until it ends.
func (p *podState) run() {
	p.phase = phaseCharged
	p.wait, p.parked, p.inBackoff = waitInfo{}, false, false
}

// assume: the core admitted the pod; its ungate is not yet seen.
func (p *podState) assume() {
	p.phase = phaseAssumed
	p.wait, p.parked, p.inBackoff = waitInfo{}, false, false
}

// backOff: an admitted pod whose ungate did not apply waits again, backing off first.
func (p *podState) backOff() {
	p.phase = phaseWaiting
	p.inBackoff = true
}

// endBackoff: its backoff is over.
func (p *podState) endBackoff() { p.inBackoff = false }

// waitFor records why the pod waits, from its latest evaluation, and the flavors it
// would be charged on where it waits (waitInfo.reach).
func (p *podState) waitFor(w waitInfo, reach []string) {
	p.wait = w
	p.wait.reach = reach
}

// coolDown records that it waits for its preemption cooldown to end.
func (p *podState) coolDown(pending preemptPending) { p.wait.preempt = pending }

// park parks the pod for why, or, with nil, takes it out of a park: a wait that parked
// it ends, and the next evaluation says why it waits.
func (p *podState) park(why *waitInfo) {
	p.parked = why != nil
	switch {
	case why != nil:
		p.wait = *why
	case p.wait.parks():
		p.wait = waitInfo{}
	}
}

// hold parks a pod that no budget covers, where uncovered pods are held.
func (p *podState) hold() {
	p.parked = true
	p.wait = waitInfo{code: CodeUncovered}
}

// podIndex is every non-terminal pod the core knows, by UID and by namespace.
type podIndex struct {
	byUID map[types.UID]*podState
	byNS  map[string]map[types.UID]*podState
}

func newPodIndex() *podIndex {
	return &podIndex{byUID: map[types.UID]*podState{}, byNS: map[string]map[types.UID]*podState{}}
}

// get returns the pod with the UID, or nil.
func (x *podIndex) get(uid types.UID) *podState { return x.byUID[uid] }

func (x *podIndex) add(p *podState) {
	x.byUID[p.pod.UID] = p
	ns := x.byNS[p.pod.Namespace]
	if ns == nil {
		ns = map[types.UID]*podState{}
		x.byNS[p.pod.Namespace] = ns
	}
	ns[p.pod.UID] = p
}

// remove drops the pod from the index; it is forgotten (podState.forgotten).
func (x *podIndex) remove(p *podState) {
	p.forgotten = true
	delete(x.byUID, p.pod.UID)
	if ns := x.byNS[p.pod.Namespace]; ns != nil {
		delete(ns, p.pod.UID)
		if len(ns) == 0 {
			delete(x.byNS, p.pod.Namespace)
		}
	}
}

// inNamespace returns the namespace's pods; the caller does not change the map.
func (x *podIndex) inNamespace(ns string) map[types.UID]*podState { return x.byNS[ns] }

// all returns every pod, in no order.
func (x *podIndex) all() iter.Seq[*podState] { return maps.Values(x.byUID) }

// sorted returns every pod, by UID.
func (x *podIndex) sorted() []*podState {
	return slices.SortedFunc(maps.Values(x.byUID), compareUIDs)
}

// sortedIn returns the namespace's pods, by UID.
func (x *podIndex) sortedIn(ns string) []*podState {
	return slices.SortedFunc(maps.Values(x.byNS[ns]), compareUIDs)
}

// waitingNamespaces returns the namespaces with a gated pod.
func (x *podIndex) waitingNamespaces() iter.Seq[string] {
	return func(yield func(string) bool) {
		for ns, pods := range x.byNS {
			for _, p := range pods {
				if p.phase == phaseWaiting {
					if !yield(ns) {
						return
					}
					break
				}
			}
		}
	}
}

// chargeView is the pod as its charge sees it: its view with its charge labels, for
// coverage.
func (p *podState) chargeView() *Pod { return p.viewWith(p.charge.coverLabels()) }

// viewWith is the pod's view with labels instead of its own.
func (p *podState) viewWith(labels map[string]string) *Pod {
	v := p.pod
	v.Labels = labels
	return &v
}

// setPod replaces the pod's view; its amounts are converted again when next asked.
func (p *podState) setPod(pod Pod) {
	p.pod = pod
	p.units, p.claimUnits = nil, nil
}

// place puts the pod on flavor f (nil for none), charged on the flavors reach (its
// usage counts on each); its amounts are converted again when next asked.
func (p *podState) place(f *Flavor, reach []string) {
	if f == p.flavor && slices.Equal(reach, p.reach) {
		return
	}
	p.flavor, p.reach = f, reach
	p.units, p.claimUnits = nil, nil
}

// usage is the pod's usage (pod.Usage) in amounts, on the flavors it reaches, shared
// with the pods of equal usage on the same flavors: read-only.
func (p *podState) usage() amount.List {
	if p.units == nil {
		p.units = sharedAmountsOn(p.pod.Usage, p.reach)
	}
	return p.units
}

// waitUsage is what a waiting pod asks for: its usage, on the flavors it would reach on
// the flavor it waits on.
func (p *podState) waitUsage() amount.List { return onFlavors(p.usage(), p.wait.reach) }

// adds is what admitting the pod would add to budget b: its usage, less the claims b
// already charges for other pods.
func (p *podState) adds(b *budget) amount.List {
	return b.ledger.Unshared(p.usage(), p.claims())
}

// addsOn is what admitting the pod charged on the flavors reach (none: on no flavor)
// would add to each budget (adds, on each of them). A pod without claims adds the same
// to every budget: its usage on them, shared with the pods of equal usage.
func (p *podState) addsOn(reach []string) demand {
	switch {
	case len(reach) == 0:
		return p.adds
	case len(p.pod.Claims) == 0:
		return usageDemand(sharedAmountsOn(p.pod.Usage, reach))
	}
	return flavoredDemand(p.adds, reach)
}

// writtenFormat is the format the pod writes r in (DecimalSI when it does not ask for
// r): what it requests prints so, as the Quantity it was printed from did.
func (p *podState) writtenFormat(r corev1.ResourceName) resource.Format {
	r, _ = splitFlavor(r)
	if q, ok := p.pod.Usage[r]; ok && q.Format != "" {
		return q.Format
	}
	return resource.DecimalSI
}

// claims are the pod's claims (pod.Claims) with their usage in amounts (nil when it
// uses none).
func (p *podState) claims() []claimAmount {
	if p.claimUnits == nil && len(p.pod.Claims) > 0 {
		p.claimUnits = make([]claimAmount, len(p.pod.Claims))
		for i, c := range p.pod.Claims {
			p.claimUnits[i] = claimAmount{Key: c.Key, Usage: onFlavors(amount.OfList(c.Usage), p.reach)}
		}
	}
	return p.claimUnits
}
