package quota

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// ledger is one budget's accounts: its hard limits, what is charged to it (the admitted,
// non-terminal pods, reservations included) and what waits on it. It knows nothing of
// queues, coverage or states: the AdmissionQueue decides what to charge where, and
// asks the ledger whether it fits.
type ledger struct {
	hard      corev1.ResourceList
	hardNames []corev1.ResourceName // sorted, for deterministic reasons
	used      corev1.ResourceList
	pending   corev1.ResourceList
	charged   map[types.UID]*podState
}

func newLedger() ledger {
	return ledger{used: corev1.ResourceList{}, pending: corev1.ResourceList{}, charged: map[types.UID]*podState{}}
}

// setHard replaces the hard limits (normalized) and reports whether any changed.
func (l *ledger) setHard(hard corev1.ResourceList) (changed bool) {
	changed = !maps.EqualFunc(l.hard, hard, func(x, y resource.Quantity) bool { return x.Cmp(y) == 0 })
	l.hard = hard
	l.hardNames = slices.Sorted(maps.Keys(hard))
	return changed
}

// charge adds an admitted pod's usage.
func (l *ledger) charge(p *podState, usage corev1.ResourceList) {
	addTo(l.used, usage)
	l.charged[p.pod.UID] = p
}

// release gives back what charge added.
func (l *ledger) release(p *podState, usage corev1.ResourceList) {
	subtractFrom(l.used, usage)
	delete(l.charged, p.pod.UID)
}

// admitted is how many pods are charged.
func (l *ledger) admitted() int { return len(l.charged) }

// wait and unwait count a gated pod's usage as pending here, or stop counting it.
func (l *ledger) wait(usage corev1.ResourceList)   { addTo(l.pending, usage) }
func (l *ledger) unwait(usage corev1.ResourceList) { subtractFrom(l.pending, usage) }

// excess is the first resource (in name order) of which add does not fit beside what
// is used; ok is false when it all fits.
func (l *ledger) excess(add corev1.ResourceList) (corev1.ResourceName, bool) {
	return firstExcess(l.hardNames, l.hard, l.used, add)
}

// neverFits is the first resource of which add is more than hard: it cannot fit even
// in an empty budget.
func (l *ledger) neverFits(add corev1.ResourceList) (corev1.ResourceName, bool) {
	return firstExcess(l.hardNames, l.hard, nil, add)
}

// totals are hard, used and pending for the limited resources (a resource of used or
// pending that hard does not limit is left out; one it limits and nobody uses is 0):
// copies, for a status.
func (l *ledger) totals() (hard, used, pending corev1.ResourceList) {
	return restrictTo(l.hard, l.hardNames), restrictTo(l.used, l.hardNames), restrictTo(l.pending, l.hardNames)
}

// hardOf is the hard limit of r (a copy; zero when r is not limited).
func (l *ledger) hardOf(r corev1.ResourceName) resource.Quantity { return l.hard[r].DeepCopy() }

// free is what is left of r: hard minus used (negative when hard was lowered below
// use).
func (l *ledger) free(r corev1.ResourceName) resource.Quantity {
	f := l.hard[r].DeepCopy()
	f.Sub(l.used[r])
	return f
}
