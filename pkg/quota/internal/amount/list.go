package amount

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// List holds amounts per resource. The key is the resource's quota name (the core
// widens it with a flavor: r@flavor).
type List map[corev1.ResourceName]Amount

// OfList converts a resource list: a new List, its entries as in l. A value beyond
// MaxUnits is entered as the bound (Of); Uncountable tells which, and callers that
// charge a list check it first.
func OfList(l corev1.ResourceList) List {
	out := make(List, len(l))
	for r, q := range l {
		out[r], _ = Of(q)
	}
	return out
}

// Uncountable returns the first resource of l, in name order, whose value is beyond
// MaxUnits, and false when every value can be counted.
func Uncountable(l corev1.ResourceList) (corev1.ResourceName, bool) {
	var bad []corev1.ResourceName
	for r, q := range l {
		if !Countable(q) {
			bad = append(bad, r)
		}
	}
	if len(bad) == 0 {
		return "", false
	}
	return slices.Min(bad), true
}

// Add adds b into a, entry by entry (an entry of zero is kept, as Quantity lists keep
// it).
func (a List) Add(b List) {
	for r, v := range b {
		a[r] = a[r].Add(v)
	}
}

// Sub subtracts b from a, entry by entry; entries that reach zero are dropped, so that
// an empty account compares equal to a fresh one.
func (a List) Sub(b List) {
	for r, v := range b {
		if d := a[r].Sub(v); !d.IsZero() {
			a[r] = d
		} else {
			delete(a, r)
		}
	}
}

// EqualQuantities reports whether two lists hold equal quantities under the same names, as
// equality.Semantic does (nil and empty are equal), without its reflection: it runs on
// every update of a waiting pod.
func EqualQuantities(a, b corev1.ResourceList) bool {
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

// Clone is a copy of a (nil stays nil).
func (a List) Clone() List { return maps.Clone(a) }

// Equal reports whether a and b hold the same amounts, an absent entry counting as
// zero.
func (a List) Equal(b List) bool {
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

// FirstExcess returns the first resource (in names' order) for which used+add exceeds
// limit: the one that does not fit. Only names in limit are limited; a zero or absent
// add fits whatever is used.
func FirstExcess(names []corev1.ResourceName, limit, used, add List) (corev1.ResourceName, bool) {
	for _, r := range names {
		v := add[r]
		if !v.IsZero() && limit[r].Less(used[r].Add(v)) {
			return r, true
		}
	}
	return "", false
}
