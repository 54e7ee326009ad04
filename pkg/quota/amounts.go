package quota

import (
	"maps"
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The arithmetic the accounts are kept in, as Kueue's resources.Requests and
// kube-scheduler's framework.Resource keep theirs: one int64 per resource instead of
// resource.Quantity, converted once where a list comes in (a pod's usage when its
// record is built, a budget's hard when its spec is set) and back only for output
// (status, messages).
//
// Units: every resource is counted in milli-units (Quantity.MilliValue): millicores,
// milli-bytes, milli-counts. Not bytes and counts: ResourceQuota compares Quantities
// exactly, and the API accepts fractional memory ("100m" is a tenth of a byte), so
// ten pods of memory 100m fit a hard of 1 there, and must here. A quantity finer than
// a milli-unit (1u) is rounded away from zero to the next one, as MilliValue rounds it.
//
// Saturation: an int64 of milli-units holds ±9.2e15 units (8 PiB of memory, 9.2e15
// cores). A quantity beyond it is read as the bound, and a sum that would pass it
// stops at it (addAmount), instead of wrapping around: a hard that large limits
// nothing any pod asks for, and a usage that large fits no smaller hard, as with
// Quantities. Only sums beyond the bound differ (a release subtracts from the bound);
// no cluster holds 8 PiB of one resource in one budget.

// amounts are quantities per resource, in milli-units. The key is the resource's
// quota name; flavors (quota per flavor and resource) would widen it here only.
type amounts map[corev1.ResourceName]int64

// maxAmount is the saturation bound, in either sign.
const maxAmount = math.MaxInt64

var (
	maxQuantity = *resource.NewMilliQuantity(maxAmount, resource.DecimalSI)
	minQuantity = *resource.NewMilliQuantity(-maxAmount, resource.DecimalSI)
)

// amountOf is q in milli-units, rounded away from zero, saturated at ±maxAmount.
func amountOf(q resource.Quantity) int64 {
	if v, ok := q.AsInt64(); ok && v <= maxAmount/1000 && v >= -maxAmount/1000 {
		return v * 1000 // the common case: a whole number of units, no Dec
	}
	switch {
	case q.Cmp(maxQuantity) >= 0:
		return maxAmount
	case q.Cmp(minQuantity) <= 0:
		return -maxAmount
	}
	return q.MilliValue()
}

// amountsOf converts a list: a new map, its entries as in the list.
func amountsOf(l corev1.ResourceList) amounts {
	out := make(amounts, len(l))
	for r, q := range l {
		out[r] = amountOf(q)
	}
	return out
}

// quantityOf is v as a Quantity in format f (for output).
func quantityOf(v int64, f resource.Format) resource.Quantity {
	if f == "" {
		f = resource.DecimalSI
	}
	if v%1000 == 0 {
		return *resource.NewQuantity(v/1000, f)
	}
	return *resource.NewMilliQuantity(v, f)
}

// amountText is quantityOf(v, f) as it prints.
func amountText(v int64, f resource.Format) string {
	q := quantityOf(v, f)
	return q.String()
}

// addAmount is x+y, saturated at ±maxAmount.
func addAmount(x, y int64) int64 {
	s := x + y
	switch {
	case x > 0 && y > 0 && (s < 0 || s > maxAmount):
		return maxAmount
	case x < 0 && y < 0 && (s >= 0 || s < -maxAmount):
		return -maxAmount
	}
	return s
}

// add adds b into a, entry by entry (an entry of zero is kept, as Quantity lists kept
// it).
func (a amounts) add(b amounts) {
	for r, v := range b {
		a[r] = addAmount(a[r], v)
	}
}

// sub subtracts b from a, entry by entry; entries that reach zero are dropped, so
// that an empty account compares equal to a fresh one.
func (a amounts) sub(b amounts) {
	for r, v := range b {
		if d := addAmount(a[r], -v); d != 0 {
			a[r] = d
		} else {
			delete(a, r)
		}
	}
}

// clone is a copy of a (nil stays nil).
func (a amounts) clone() amounts { return maps.Clone(a) }

// equal reports whether a and b hold the same amounts, an absent entry counting as
// zero.
func (a amounts) equal(b amounts) bool {
	for r, v := range a {
		if b[r] != v {
			return false
		}
	}
	for r, v := range b {
		if a[r] != v {
			return false
		}
	}
	return true
}

// firstExcess returns the first resource (in names' order) for which used+add exceeds
// limit: the one that does not fit. Only names in limit are limited; a zero or absent
// add fits whatever is used.
func firstExcess(names []corev1.ResourceName, limit, used, add amounts) (corev1.ResourceName, bool) {
	for _, r := range names {
		v := add[r]
		if v != 0 && addAmount(used[r], v) > limit[r] {
			return r, true
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

// claimAmount is one claim a pod uses (ClaimCharge) with its usage in amounts.
type claimAmount struct {
	Key   string
	usage amounts
}

// noAmounts is the usage of a pod that uses nothing: read-only.
var noAmounts = amounts{}

// sharedAmounts holds the amounts of the usage lists pods have, by the list's exact
// form (appendList): pods of one template share one map, as they share the list.
var sharedAmounts sharedTable[amounts]

// sharedAmountsOn is onFlavor(amountsOf(l), f), shared with every list of the same form
// on the same flavor: read-only.
func sharedAmountsOn(l corev1.ResourceList, f string) amounts {
	if f == "" {
		return sharedAmountsOf(l)
	}
	if len(l) == 0 {
		return noAmounts
	}
	var buf [256]byte
	key := append(append(appendList(buf[:0], l), flavorMark...), f...)
	v, ok := sharedAmounts.get(key, func() amounts { return onFlavor(amountsOf(l), f) })
	if !ok {
		return onFlavor(amountsOf(l), f)
	}
	return v
}

// sharedAmountsOf is amountsOf(l), shared with every list of the same form: read-only.
func sharedAmountsOf(l corev1.ResourceList) amounts {
	if len(l) == 0 {
		return noAmounts
	}
	var buf [256]byte
	v, ok := sharedAmounts.get(appendList(buf[:0], l), func() amounts { return amountsOf(l) })
	if !ok {
		return amountsOf(l)
	}
	return v
}
