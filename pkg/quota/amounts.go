package quota

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
	"github.com/quotagate/quotagate/pkg/quota/internal/ledger"
)

// The accounts are amounts (package amount): exact 128-bit counts of nano-units per
// resource, converted once where a list comes in (a pod's usage when its record is
// built, a budget's hard when its spec is set) and back only for output.

// claimAmount is one claim a pod uses (ClaimCharge) with its usage in amounts, as the
// ledger charges it.
type claimAmount = ledger.Claim

// noAmounts is the usage of a pod that uses nothing: read-only.
var noAmounts = amount.List{}

// sharedAmounts holds the amounts of the usage lists pods have, by the list's exact
// form (appendList): pods of one template share one map, as they share the list.
var sharedAmounts sharedTable[amount.List]

// sharedAmountsOn is onFlavors(amount.OfList(l), fs), shared with every list of the same
// form on the same flavors: read-only.
func sharedAmountsOn(l corev1.ResourceList, fs []string) amount.List {
	if len(fs) == 0 {
		return sharedAmountsOf(l)
	}
	if len(l) == 0 {
		return noAmounts
	}
	var buf [256]byte
	key := appendList(buf[:0], l)
	for _, f := range fs {
		key = append(append(key, flavorMark...), f...)
	}
	v, ok := sharedAmounts.get(key, func() amount.List { return onFlavors(amount.OfList(l), fs) })
	if !ok {
		return onFlavors(amount.OfList(l), fs)
	}
	return v
}

// sharedAmountsOf is amount.OfList(l), shared with every list of the same form: read-only.
func sharedAmountsOf(l corev1.ResourceList) amount.List {
	if len(l) == 0 {
		return noAmounts
	}
	var buf [256]byte
	v, ok := sharedAmounts.get(appendList(buf[:0], l), func() amount.List { return amount.OfList(l) })
	if !ok {
		return amount.OfList(l)
	}
	return v
}
