// Package ledger is one budget's accounts in quotagate's admission core: its hard
// limits, its ceiling (hard plus its borrowingLimit) and what it lends, what is charged
// to it (the admitted, non-terminal pods, reservations included; a shared claim once)
// and what waits on it. It knows nothing of queues, coverage or states: the core
// decides what to charge where and asks the ledger whether it fits. The accounts are
// exact amounts (package amount); the spec's lists are kept only to write hard and the
// limits back as they were written, and the formats of the sums to write them as
// Quantity sums were written (formats).
//
// Borrowing (docs/budgets.md, "Borrowing: idle quota of the budgets under one parent").
// A budget may use up to its ceiling, hard plus its borrowingLimit, of each resource
// hard limits; lend is how much of hard its siblings may borrow (all of it by default),
// so hard minus lend is guaranteed to its own pods. Without a borrowingLimit, or
// without a parent (SetFamily), the ceiling is hard.
package ledger

import (
	"iter"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
)

// Ledger is one budget's accounts. P is what the core knows of a charged pod: the
// ledger keeps it, by UID, only to hand it back (Charged). The zero value is not
// usable: build one with New. It is not safe for concurrent use.
type Ledger[P any] struct {
	hard      amount.List
	hardList  corev1.ResourceList   // hard as normalized: for status, and the output format
	hardNames []corev1.ResourceName // sorted, for deterministic reasons
	borrow    corev1.ResourceList   // spec.borrowingLimit, normalized (for messages)
	lend      amount.List           // spec.lendingLimit, normalized
	ceiling   amount.List           // hard plus borrow, for the resources hard limits
	inFamily  bool                  // it has a parent: borrow applies
	used      amount.List
	// version counts the changes of used (Charge, Release): what a family's waiting
	// pods claim of its lenders depends on it (Changes).
	version uint64
	pending amount.List
	// usedFormat and pendingFormat are what used and pending print in where it is
	// not hard's format (addWritten).
	usedFormat, pendingFormat formats
	charged                   map[types.UID]P
	// claims are the ResourceClaims charged here, each once for all the charged pods
	// that use it (ClaimCharge), with what it was charged.
	claims map[string]*claimRef
}

// Claim is one ResourceClaim a pod uses, with its usage: charged once for all the
// charged pods that use it.
type Claim struct {
	Key   string
	Usage amount.List
}

// claimRef is one charged claim: its usage and how many charged pods use it.
type claimRef struct {
	usage amount.List
	pods  int
}

// Account is one resource's figures in a ledger (Of).
type Account struct {
	Limited  bool // hard limits it (else the figures but Used are zero)
	Hard     amount.Amount
	Ceiling  amount.Amount // hard plus the borrowingLimit, when the budget borrows
	Lendable amount.Amount // how much of hard its siblings may borrow: lend, at most hard
	Used     amount.Amount
}

// Free is what is left: the ceiling minus used (negative when hard was lowered below
// use).
func (a Account) Free() amount.Amount { return a.Ceiling.Sub(a.Used) }

// New returns an empty ledger: nothing limited, nothing charged.
func New[P any]() Ledger[P] {
	return Ledger[P]{hard: amount.List{}, ceiling: amount.List{}, used: amount.List{}, pending: amount.List{}, charged: map[types.UID]P{}}
}

// SetHard replaces the hard limits (normalized), with no borrowing or lending limit, and
// reports whether any changed.
func (l *Ledger[P]) SetHard(hard corev1.ResourceList) (changed bool) {
	return l.SetLimits(hard, nil, nil)
}

// SetLimits replaces hard and the borrowing and lending limits (normalized) and reports
// whether any changed. Limits on resources hard does not limit are ignored: such a
// resource is not limited at all.
func (l *Ledger[P]) SetLimits(hard, borrow, lend corev1.ResourceList) (changed bool) {
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
	sameHard, lendAmounts := amount.EqualQuantities(l.hardList, hard), amount.OfList(lend)
	changed = !sameHard || !amount.EqualQuantities(l.borrow, borrow) || !l.lend.Equal(lendAmounts)
	l.usedFormat.keep(l.used, l.hardList, hard)
	l.pendingFormat.keep(l.pending, l.hardList, hard)
	l.hardList, l.borrow, l.lend = hard, borrow, lendAmounts
	if !sameHard { // an update that keeps hard (a status write coming back) converts nothing
		l.hard = amount.OfList(hard)
		l.hardNames = slices.Sorted(maps.Keys(hard))
	}
	l.setCeiling()
	return changed
}

// SetFamily says whether the budget has a parent to borrow under (the core's topology
// calls it when it resolves the budgets): without one, a borrowingLimit has no effect.
// It reports whether the ceiling changed.
func (l *Ledger[P]) SetFamily(in bool) (changed bool) {
	changed = in != l.inFamily && len(l.borrow) > 0
	l.inFamily = in
	l.setCeiling()
	return changed
}

func (l *Ledger[P]) setCeiling() {
	l.ceiling = l.hard
	if l.Borrows() {
		l.ceiling = l.hard.Clone()
		l.ceiling.Add(amount.OfList(l.borrow))
	}
}

// Borrows reports whether the budget may use more than hard: it has a borrowingLimit
// and a parent.
func (l *Ledger[P]) Borrows() bool { return l.inFamily && len(l.borrow) > 0 }

// BorrowLimited reports whether it has a borrowingLimit (on a resource hard limits),
// with a parent or not.
func (l *Ledger[P]) BorrowLimited() bool { return len(l.borrow) > 0 }

// Of is the account of r: hard, ceiling, what it lends and what is used.
func (l *Ledger[P]) Of(r corev1.ResourceName) Account {
	h, limited := l.hard[r]
	a := Account{Limited: limited, Hard: h, Ceiling: l.ceiling[r], Lendable: h, Used: l.used[r]}
	if q, ok := l.lend[r]; ok && q.Less(h) {
		a.Lendable = q
	}
	return a
}

// Borrowed is what is used beyond hard, for the resources hard limits (empty when
// nothing is): for a status.
func (l *Ledger[P]) Borrowed() corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, r := range l.hardNames {
		if over := l.used[r].Sub(l.hard[r]); over.Sign() > 0 {
			out[r] = over.Quantity(l.usedFormat.of(r, l.hardList))
		}
	}
	return out
}

// Charge adds an admitted pod's usage, and keeps p under uid: usage includes its
// claims' (the pod's Usage), and a claim that another charged pod uses is not charged
// again. written is the usage as the pod writes it (the formats of the sums).
func (l *Ledger[P]) Charge(uid types.UID, p P, usage amount.List, written corev1.ResourceList, claims []Claim) {
	l.version++
	addWritten(l.used, usage, written, l.hardList, &l.usedFormat)
	for _, c := range claims {
		l.used.Sub(c.Usage)
		ref := l.claims[c.Key]
		if ref == nil {
			if l.claims == nil {
				l.claims = map[string]*claimRef{}
			}
			ref = &claimRef{usage: c.Usage}
			l.claims[c.Key] = ref
			addWritten(l.used, c.Usage, nil, l.hardList, &l.usedFormat) // claims count in DecimalSI
		}
		ref.pods++
	}
	l.charged[uid] = p
}

// Release gives back what Charge added: a claim is given back with the last charged
// pod that uses it, as much as it was charged.
func (l *Ledger[P]) Release(uid types.UID, usage amount.List, claims []Claim) {
	l.version++
	l.used.Sub(usage)
	for _, c := range claims {
		ref := l.claims[c.Key]
		if ref == nil {
			continue
		}
		l.used.Add(c.Usage)
		if ref.pods--; ref.pods <= 0 {
			l.used.Sub(ref.usage)
			delete(l.claims, c.Key)
		}
	}
	delete(l.charged, uid)
}

// Unshared is what charging a pod would add here: usage without the claims already
// charged (usage itself when there are none).
func (l *Ledger[P]) Unshared(usage amount.List, claims []Claim) amount.List {
	var out amount.List
	for _, c := range claims {
		if l.claims[c.Key] == nil {
			continue
		}
		if out == nil {
			out = usage.Clone()
		}
		out.Sub(c.Usage)
	}
	if out == nil {
		return usage
	}
	return out
}

// ChargesClaim reports whether the claim key is charged here (for a pod charged here).
func (l *Ledger[P]) ChargesClaim(key string) bool { return l.claims[key] != nil }

// Admitted is how many pods are charged.
func (l *Ledger[P]) Admitted() int { return len(l.charged) }

// Wait and Unwait count a gated pod's usage as pending here, or stop counting it;
// written is the usage as the pod writes it (its formats).
func (l *Ledger[P]) Wait(usage amount.List, written corev1.ResourceList) {
	addWritten(l.pending, usage, written, l.hardList, &l.pendingFormat)
}
func (l *Ledger[P]) Unwait(usage amount.List) { l.pending.Sub(usage) }

// Excess is the first resource (in name order) of which add does not fit beside what
// is used, under the ceiling; ok is false when it all fits.
func (l *Ledger[P]) Excess(add amount.List) (corev1.ResourceName, bool) {
	return amount.FirstExcess(l.hardNames, l.ceiling, l.used, add)
}

// NeverFits is the first resource of which add is more than the ceiling: it cannot fit
// even in an empty budget.
func (l *Ledger[P]) NeverFits(add amount.List) (corev1.ResourceName, bool) {
	return amount.FirstExcess(l.hardNames, l.ceiling, nil, add)
}

// ExcessOverHard is Excess under hard instead of the ceiling: the first resource of
// which add does not fit within hard beside what is used.
func (l *Ledger[P]) ExcessOverHard(add amount.List) (corev1.ResourceName, bool) {
	return amount.FirstExcess(l.hardNames, l.hard, l.used, add)
}

// OverCeiling is the first resource (in name order) of which more is used than the
// ceiling allows: a hard lowered below use. ok is false when every resource is within.
func (l *Ledger[P]) OverCeiling() (corev1.ResourceName, bool) {
	for _, r := range l.hardNames {
		if l.ceiling[r].Less(l.used[r]) {
			return r, true
		}
	}
	return "", false
}

// Totals are hard, used and pending for the limited resources (a resource of used or
// pending that hard does not limit is left out; one it limits and nobody uses is 0):
// new lists, for a status.
func (l *Ledger[P]) Totals() (hard, used, pending corev1.ResourceList) {
	hard = make(corev1.ResourceList, len(l.hardNames))
	used = make(corev1.ResourceList, len(l.hardNames))
	pending = make(corev1.ResourceList, len(l.hardNames))
	for _, r := range l.hardNames {
		hard[r] = l.hardList[r].DeepCopy()
		used[r] = l.used[r].Quantity(l.usedFormat.of(r, l.hardList))
		pending[r] = l.pending[r].Quantity(l.pendingFormat.of(r, l.hardList))
	}
	return hard, used, pending
}

// Quantity is v of r as a Quantity for output, in the format r's hard is written in
// (DecimalSI when hard does not limit r): lent, a parked pod's request, messages.
// (Used, pending and borrowed keep the pods' format: totals, borrowed.)
func (l *Ledger[P]) Quantity(r corev1.ResourceName, v amount.Amount) resource.Quantity {
	return v.Quantity(l.hardList[r].Format)
}

// Tracks reports whether hard limits r.
func (l *Ledger[P]) Tracks(r corev1.ResourceName) bool {
	_, ok := l.hard[r]
	return ok
}

// Resources are the resources hard limits, in name order; the caller does not change
// the slice.
func (l *Ledger[P]) Resources() []corev1.ResourceName { return l.hardNames }

// LimitsOf are the limits of r as written, for messages: hard (a copy; zero when r is
// not limited), and the borrowingLimit and whether there is one.
func (l *Ledger[P]) LimitsOf(r corev1.ResourceName) (hard, borrow resource.Quantity, borrows bool) {
	borrow, borrows = l.borrow[r]
	return l.hardList[r].DeepCopy(), borrow, borrows
}

// ClaimUsers is how many charged pods use the claim key (0 when it is not charged).
func (l *Ledger[P]) ClaimUsers(key string) int {
	if ref := l.claims[key]; ref != nil {
		return ref.pods
	}
	return 0
}

// Charged are the pods charged here, in no particular order.
func (l *Ledger[P]) Charged() iter.Seq[P] { return maps.Values(l.charged) }

// ChargedPod is what was charged under uid, and whether anything is.
func (l *Ledger[P]) ChargedPod(uid types.UID) (P, bool) {
	p, ok := l.charged[uid]
	return p, ok
}

// ChargedClaims are the claims charged here, each with what it was charged, in no
// particular order; ClaimUsers tells how many charged pods use each.
func (l *Ledger[P]) ChargedClaims() iter.Seq2[string, amount.List] {
	return func(yield func(string, amount.List) bool) {
		for k, ref := range l.claims {
			if !yield(k, ref.usage) {
				return
			}
		}
	}
}

// Used and Pending are the sums charged and waiting, for every resource (hard limits
// them or not); the caller does not change them.
func (l *Ledger[P]) Used() amount.List    { return l.used }
func (l *Ledger[P]) Pending() amount.List { return l.pending }

// InFamily reports what SetFamily was last told: whether the budget has a parent.
func (l *Ledger[P]) InFamily() bool { return l.inFamily }

// formats are the formats a ledger's sums print in, for the resources hard limits,
// where they are not the format hard is written in (nil until one is not: most pods
// write what hard writes, and an empty map costs nothing).
type formats map[corev1.ResourceName]resource.Format

// addWritten adds usage to acc (used or pending), as amount.List.Add does, and for each
// resource hard limits whose sum was zero, notes in fs the format written gives it:
// the format the Quantity sum took (Quantity.Add takes the format of a term added to
// zero), so that a status reads as the Quantity arithmetic wrote it.
func addWritten(acc, usage amount.List, written, hard corev1.ResourceList, fs *formats) {
	for r, v := range usage {
		before := acc[r]
		acc[r] = before.Add(v)
		h, limited := hard[r]
		if !before.IsZero() || !limited {
			continue
		}
		f := written[r].Format
		if f == "" {
			f = resource.DecimalSI
		}
		switch {
		case f == h.Format:
			delete(*fs, r)
		case *fs == nil:
			*fs = formats{r: f}
		default:
			(*fs)[r] = f
		}
	}
}

// Of is the format r's sum prints in.
func (fs formats) of(r corev1.ResourceName, hard corev1.ResourceList) resource.Format {
	if f, ok := fs[r]; ok {
		return f
	}
	return hard[r].Format
}

// keep notes, when hard is replaced by next, the format of each non-zero sum of acc
// that followed the old hard's format, where next writes r in another (or not at all).
func (fs *formats) keep(acc amount.List, old, next corev1.ResourceList) {
	for r, q := range old {
		if _, noted := (*fs)[r]; noted || acc[r].IsZero() || next[r].Format == q.Format {
			continue
		}
		if *fs == nil {
			*fs = formats{}
		}
		(*fs)[r] = q.Format
	}
}

// Changes is the ledger's version: it moves on when used changes, so that what is
// computed from used can be kept until it does.
func (l *Ledger[P]) Changes() uint64 { return l.version }
