package quota

import (
	"iter"
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
//
// Borrowing (DESIGN: borrowing between budgets under one parent). A budget may use up to
// its ceiling, hard plus its borrowingLimit, of each resource hard limits; lend is how
// much of hard its siblings may borrow (all of it by default), so hard minus lend is
// guaranteed to its own pods. Without a borrowingLimit the ceiling is hard.
type ledger struct {
	hard      corev1.ResourceList
	hardNames []corev1.ResourceName // sorted, for deterministic reasons
	borrow    corev1.ResourceList   // spec.borrowingLimit, normalized
	lend      corev1.ResourceList   // spec.lendingLimit, normalized
	ceiling   corev1.ResourceList   // hard plus borrow, for the resources hard limits
	inFamily  bool                  // it has a parent: borrow applies
	used      corev1.ResourceList
	pending   corev1.ResourceList
	charged   map[types.UID]*podState
	// claims are the ResourceClaims charged here, each once for all the charged pods
	// that use it (claims.go), with what it was charged.
	claims map[string]*claimRef
}

// claimRef is one charged claim: its usage and how many charged pods use it.
type claimRef struct {
	usage corev1.ResourceList
	pods  int
}

func newLedger() ledger {
	return ledger{used: corev1.ResourceList{}, pending: corev1.ResourceList{}, charged: map[types.UID]*podState{}}
}

// setHard replaces the hard limits (normalized), with no borrowing or lending limit, and
// reports whether any changed.
func (l *ledger) setHard(hard corev1.ResourceList) (changed bool) { return l.setLimits(hard, nil, nil) }

// setLimits replaces hard and the borrowing and lending limits (normalized) and reports
// whether any changed. Limits on resources hard does not limit are ignored: such a
// resource is not limited at all.
func (l *ledger) setLimits(hard, borrow, lend corev1.ResourceList) (changed bool) {
	limited := func(l corev1.ResourceList) corev1.ResourceList {
		out := corev1.ResourceList{}
		for r, q := range l {
			if _, ok := hard[r]; ok {
				out[r] = q
			}
		}
		return out
	}
	borrow, lend = limited(borrow), limited(lend)
	changed = !equalLists(l.hard, hard) || !equalLists(l.borrow, borrow) || !equalLists(l.lend, lend)
	l.hard, l.borrow, l.lend = hard, borrow, lend
	l.hardNames = slices.Sorted(maps.Keys(hard))
	l.setCeiling()
	return changed
}

// setFamily says whether the budget has a parent to borrow under (topology.resolve
// calls it): without one, a borrowingLimit has no effect.
// It reports whether the ceiling changed.
func (l *ledger) setFamily(in bool) (changed bool) {
	changed = in != l.inFamily && len(l.borrow) > 0
	l.inFamily = in
	l.setCeiling()
	return changed
}

func (l *ledger) setCeiling() {
	l.ceiling = l.hard
	if l.borrows() {
		l.ceiling = maps.Clone(l.hard)
		addTo(l.ceiling, l.borrow)
	}
}

// borrows reports whether the budget may use more than hard: it has a borrowingLimit
// and a parent.
func (l *ledger) borrows() bool { return l.inFamily && len(l.borrow) > 0 }

// borrowLimited reports whether it has a borrowingLimit (on a resource hard limits),
// with a parent or not.
func (l *ledger) borrowLimited() bool { return len(l.borrow) > 0 }

// lendable is how much of hard r its siblings may borrow: lend, at most hard.
func (l *ledger) lendable(r corev1.ResourceName) resource.Quantity {
	h := l.hard[r]
	if q, ok := l.lend[r]; ok && q.Cmp(h) < 0 {
		return q.DeepCopy()
	}
	return h.DeepCopy()
}

// borrowed is what is used beyond hard, for the resources hard limits (empty when
// nothing is).
func (l *ledger) borrowed() corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, r := range l.hardNames {
		over := l.used[r].DeepCopy()
		over.Sub(l.hard[r])
		if over.Sign() > 0 {
			out[r] = over
		}
	}
	return out
}

// charge adds an admitted pod's usage: usage includes its claims' (the pod's Usage),
// and a claim that another charged pod uses is not charged again.
func (l *ledger) charge(p *podState, usage corev1.ResourceList, claims []ClaimCharge) {
	addTo(l.used, usage)
	for _, c := range claims {
		subtractFrom(l.used, c.Usage)
		ref := l.claims[c.Key]
		if ref == nil {
			if l.claims == nil {
				l.claims = map[string]*claimRef{}
			}
			ref = &claimRef{usage: c.Usage}
			l.claims[c.Key] = ref
			addTo(l.used, c.Usage)
		}
		ref.pods++
	}
	l.charged[p.pod.UID] = p
}

// release gives back what charge added: a claim is given back with the last charged
// pod that uses it, as much as it was charged.
func (l *ledger) release(p *podState, usage corev1.ResourceList, claims []ClaimCharge) {
	subtractFrom(l.used, usage)
	for _, c := range claims {
		ref := l.claims[c.Key]
		if ref == nil {
			continue
		}
		addTo(l.used, c.Usage)
		if ref.pods--; ref.pods <= 0 {
			subtractFrom(l.used, ref.usage)
			delete(l.claims, c.Key)
		}
	}
	delete(l.charged, p.pod.UID)
}

// unshared is what charging a pod would add here: usage without the claims already
// charged (usage itself when there are none).
func (l *ledger) unshared(usage corev1.ResourceList, claims []ClaimCharge) corev1.ResourceList {
	var out corev1.ResourceList
	for _, c := range claims {
		if l.claims[c.Key] == nil {
			continue
		}
		if out == nil {
			out = maps.Clone(usage)
		}
		subtractFrom(out, c.Usage)
	}
	if out == nil {
		return usage
	}
	return out
}

// admitted is how many pods are charged.
func (l *ledger) admitted() int { return len(l.charged) }

// wait and unwait count a gated pod's usage as pending here, or stop counting it.
func (l *ledger) wait(usage corev1.ResourceList)   { addTo(l.pending, usage) }
func (l *ledger) unwait(usage corev1.ResourceList) { subtractFrom(l.pending, usage) }

// excess is the first resource (in name order) of which add does not fit beside what
// is used, under the ceiling; ok is false when it all fits.
func (l *ledger) excess(add corev1.ResourceList) (corev1.ResourceName, bool) {
	return firstExcess(l.hardNames, l.ceiling, l.used, add)
}

// neverFits is the first resource of which add is more than the ceiling: it cannot fit
// even in an empty budget.
func (l *ledger) neverFits(add corev1.ResourceList) (corev1.ResourceName, bool) {
	return firstExcess(l.hardNames, l.ceiling, nil, add)
}

// totals are hard, used and pending for the limited resources (a resource of used or
// pending that hard does not limit is left out; one it limits and nobody uses is 0):
// copies, for a status.
func (l *ledger) totals() (hard, used, pending corev1.ResourceList) {
	return restrictTo(l.hard, l.hardNames), restrictTo(l.used, l.hardNames), restrictTo(l.pending, l.hardNames)
}

// tracks reports whether hard limits r.
func (l *ledger) tracks(r corev1.ResourceName) bool {
	_, ok := l.hard[r]
	return ok
}

// limit is the hard limit of r and whether hard limits r (not a copy: the caller
// copies before it changes it).
func (l *ledger) limit(r corev1.ResourceName) (resource.Quantity, bool) {
	h, ok := l.hard[r]
	return h, ok
}

// usedOf is what is used of r (not a copy: the caller copies before it changes it).
func (l *ledger) usedOf(r corev1.ResourceName) resource.Quantity { return l.used[r] }

// resources are the resources hard limits, in name order; the caller does not change
// the slice.
func (l *ledger) resources() []corev1.ResourceName { return l.hardNames }

// borrowLimit is the borrowingLimit of r and whether there is one.
func (l *ledger) borrowLimit(r corev1.ResourceName) (resource.Quantity, bool) {
	q, ok := l.borrow[r]
	return q, ok
}

// excessOverHard is excess under hard instead of the ceiling: the first resource of
// which add does not fit within hard beside what is used.
func (l *ledger) excessOverHard(add corev1.ResourceList) (corev1.ResourceName, bool) {
	return firstExcess(l.hardNames, l.hard, l.used, add)
}

// claimUsers is how many charged pods use the claim key (0 when it is not charged).
func (l *ledger) claimUsers(key string) int {
	if ref := l.claims[key]; ref != nil {
		return ref.pods
	}
	return 0
}

// chargedPods are the pods charged here, in no particular order.
func (l *ledger) chargedPods() iter.Seq[*podState] { return maps.Values(l.charged) }

// hardOf is the hard limit of r (a copy; zero when r is not limited).
func (l *ledger) hardOf(r corev1.ResourceName) resource.Quantity { return l.hard[r].DeepCopy() }

// free is what is left of r: the ceiling minus used (negative when hard was lowered
// below use).
func (l *ledger) free(r corev1.ResourceName) resource.Quantity {
	f := l.ceiling[r].DeepCopy()
	f.Sub(l.used[r])
	return f
}

// The arithmetic the accounts are kept in: resource lists, added, subtracted and
// compared entry by entry.

// firstExcess returns the first resource (in names' order) for which used+add exceeds
// hard. Only names in hard are limited.
func firstExcess(names []corev1.ResourceName, hard, used, add corev1.ResourceList) (corev1.ResourceName, bool) {
	for _, name := range names {
		req, ok := add[name]
		if !ok || req.IsZero() {
			continue
		}
		sum := used[name].DeepCopy()
		sum.Add(req)
		if sum.Cmp(hard[name]) > 0 {
			return name, true
		}
	}
	return "", false
}

// equalLists reports whether two lists hold equal quantities under the same names, as
// equality.Semantic does (nil and empty are equal), without its reflection: it runs on
// every update of a waiting pod.
func equalLists(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, q := range a {
		o, ok := b[name]
		if !ok || q.Cmp(o) != 0 {
			return false
		}
	}
	return true
}

// addTo adds src into dst, entry by entry.
func addTo(dst, src corev1.ResourceList) {
	for name, q := range src {
		cur := dst[name].DeepCopy()
		cur.Add(q)
		dst[name] = cur
	}
}

// subtractFrom subtracts src from dst, entry by entry; entries that reach zero are
// dropped so that empty budgets compare equal to fresh ones.
func subtractFrom(dst, src corev1.ResourceList) {
	for name, q := range src {
		cur := dst[name].DeepCopy()
		cur.Sub(q)
		if cur.IsZero() {
			delete(dst, name)
			continue
		}
		dst[name] = cur
	}
}

// restrictTo returns the entries of list named in names; absent ones are zero.
func restrictTo(list corev1.ResourceList, names []corev1.ResourceName) corev1.ResourceList {
	out := make(corev1.ResourceList, len(names))
	for _, name := range names {
		q := list[name].DeepCopy()
		if q.Format == "" {
			q = *resource.NewQuantity(0, resource.DecimalSI)
		}
		out[name] = q
	}
	return out
}
