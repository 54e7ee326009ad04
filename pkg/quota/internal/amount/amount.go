// Package amount is the exact arithmetic quotagate's admission core keeps its accounts
// in: one Amount per resource instead of resource.Quantity, converted once where a
// list comes in (a pod's usage, a budget's hard) and back only for output (status,
// messages), as Kueue's resources.Requests and kube-scheduler's framework.Resource do
// with int64.
//
// An Amount is a signed 128-bit count of nano-units (10⁻⁹ of the resource's unit:
// nanocores, nanobytes, nano-counts). Nano-units because that is Quantity's own
// precision: the API server rounds every parsed quantity up to a whole nano-unit, so
// every value a pod or a budget carries is counted exactly, fractional memory ("100m",
// a tenth of a byte) included, as ResourceQuota counts it. 128 bits because a sum must
// stay a sum: a single value may be as large as Quantity's documented range (2⁶³−1
// units, MaxUnits), about 2⁹³ nano-units, so 2³⁴ such values add up without overflow —
// more pods than any cluster holds. Nothing saturates and nothing wraps: a value beyond
// MaxUnits is not countable (Of reports it), and the core holds a pod that carries one
// instead of charging it approximately.
package amount

import (
	"cmp"
	"math"
	"math/big"
	"math/bits"
	"strconv"

	"gopkg.in/inf.v0"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Amount is an exact quantity in nano-units. The zero value is 0.
type Amount struct {
	hi int64
	lo uint64
}

// nano is the number of nano-units in a unit.
const nano = 1_000_000_000

// MaxUnits is the largest magnitude, in units, of a single value Of counts: Quantity's
// own documented bound ("no quantity may represent a number greater than 2^63-1 in
// magnitude").
const MaxUnits = math.MaxInt64

// max is MaxUnits in nano-units: (2⁶³−1)·10⁹.
var max = func() Amount {
	hi, lo := bits.Mul64(MaxUnits, nano)
	return Amount{hi: int64(hi), lo: lo}
}()

// maxBig is max plus one nano-unit, as a big.Int: a value just beyond the bound.
func maxBig() *big.Int { return new(big.Int).Add(max.Big(), big.NewInt(1)) }

// Units is v whole units.
func Units(v int64) Amount {
	if v >= 0 {
		hi, lo := bits.Mul64(uint64(v), nano)
		return Amount{hi: int64(hi), lo: lo}
	}
	return Units(-(v + 1)).Add(Units(1)).Neg()
}

// Nanos is v nano-units.
func Nanos(v int64) Amount {
	if v < 0 {
		return Amount{hi: -1, lo: uint64(v)}
	}
	return Amount{lo: uint64(v)}
}

// Milli is v milli-units.
func Milli(v int64) Amount {
	if v >= 0 {
		hi, lo := bits.Mul64(uint64(v), nano/1000)
		return Amount{hi: int64(hi), lo: lo}
	}
	return Milli(-(v + 1)).Add(Milli(1)).Neg()
}

// Of is q as an Amount. ok is false when q's magnitude is beyond MaxUnits: such a
// value cannot be counted, and the Amount returned is the bound, with q's sign (never
// used as a charge: the caller holds what carries it). A quantity finer than a
// nano-unit (only a Quantity built in code can be: the API server rounds parsed ones)
// is rounded away from zero to the next nano-unit, as the API server rounds.
func Of(q resource.Quantity) (a Amount, ok bool) {
	if v, isInt := q.AsInt64(); isInt {
		return Units(v), true // the common case: a whole number of units, no Dec
	}
	c := q.DeepCopy() // AsDec converts the Quantity it is called on: q may be shared
	d := c.AsDec()
	n := new(big.Int).Set(d.UnscaledBig())
	scale := int64(d.Scale())
	// Exponents far out of range are decided without powers of ten as large as they
	// are (a quantity such as 1e999999 is cheap to write and costly to expand).
	switch digits := int64(float64(n.BitLen())*math.Log10(2)) + 1; {
	case n.Sign() == 0:
		return Amount{}, true
	case scale < -20: // at least 10^20 units: beyond MaxUnits (about 9.2·10^18)
		return fromBig(new(big.Int).Mul(big.NewInt(int64(n.Sign())), maxBig()))
	case scale-9 > digits+1: // less than one nano-unit: rounded away from zero
		return Nanos(int64(n.Sign())), true
	}
	switch {
	case scale <= 9:
		n.Mul(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(9-scale), nil))
	default:
		div := new(big.Int).Exp(big.NewInt(10), big.NewInt(scale-9), nil)
		var rem big.Int
		n.QuoRem(n, div, &rem)
		if rem.Sign() != 0 {
			n.Add(n, big.NewInt(int64(rem.Sign())))
		}
	}
	return fromBig(n)
}

// MustOf is Of for a quantity known to be countable (tests, constants); it panics on
// one that is not.
func MustOf(q resource.Quantity) Amount {
	a, ok := Of(q)
	if !ok {
		panic("amount: " + q.String() + " is beyond what can be counted")
	}
	return a
}

// fromBig is n nano-units, bounded as Of bounds it.
func fromBig(n *big.Int) (Amount, bool) {
	neg := n.Sign() < 0
	m := new(big.Int).Abs(n)
	if m.BitLen() > 127 || fromAbs(m).Cmp(max) > 0 {
		if neg {
			return max.Neg(), false
		}
		return max, false
	}
	a := fromAbs(m)
	if neg {
		a = a.Neg()
	}
	return a, true
}

// fromAbs is a non-negative n of at most 127 bits.
func fromAbs(n *big.Int) Amount {
	var lo, hi big.Int
	lo.And(n, new(big.Int).SetUint64(math.MaxUint64))
	hi.Rsh(n, 64)
	return Amount{hi: hi.Int64(), lo: lo.Uint64()}
}

// Countable reports whether q is within MaxUnits.
func Countable(q resource.Quantity) bool {
	_, ok := Of(q)
	return ok
}

// Add is x+y.
func (x Amount) Add(y Amount) Amount {
	lo, carry := bits.Add64(x.lo, y.lo, 0)
	return Amount{hi: x.hi + y.hi + int64(carry), lo: lo}
}

// Sub is x−y.
func (x Amount) Sub(y Amount) Amount {
	lo, borrow := bits.Sub64(x.lo, y.lo, 0)
	return Amount{hi: x.hi - y.hi - int64(borrow), lo: lo}
}

// Neg is −x.
func (x Amount) Neg() Amount { return Amount{}.Sub(x) }

// Cmp is -1, 0 or +1 as x is less than, equal to or greater than y.
func (x Amount) Cmp(y Amount) int {
	if x.hi != y.hi {
		return cmp.Compare(x.hi, y.hi)
	}
	return cmp.Compare(x.lo, y.lo)
}

// Sign is -1, 0 or +1 as x is negative, zero or positive.
func (x Amount) Sign() int {
	switch {
	case x.hi < 0:
		return -1
	case x.hi == 0 && x.lo == 0:
		return 0
	}
	return 1
}

// IsZero reports whether x is 0.
func (x Amount) IsZero() bool { return x.hi == 0 && x.lo == 0 }

// Less reports whether x < y.
func (x Amount) Less(y Amount) bool { return x.Cmp(y) < 0 }

// Min is the smaller of x and y.
func Min(x, y Amount) Amount {
	if y.Less(x) {
		return y
	}
	return x
}

// Max is the larger of x and y.
func Max(x, y Amount) Amount {
	if x.Less(y) {
		return y
	}
	return x
}

// Float64 is x in units, as the nearest float64: for ratios (shares), never for sums.
func (x Amount) Float64() float64 {
	return (float64(x.hi)*(1<<64) + float64(x.lo)) / nano
}

// Big is x in nano-units.
func (x Amount) Big() *big.Int {
	n := new(big.Int).SetInt64(x.hi)
	n.Lsh(n, 64)
	return n.Add(n, new(big.Int).SetUint64(x.lo))
}

// int64Nanos is x in nano-units when it fits an int64.
func (x Amount) int64Nanos() (int64, bool) {
	switch {
	case x.hi == 0 && x.lo <= math.MaxInt64, x.hi == -1 && x.lo > math.MaxInt64:
		return int64(x.lo), true
	}
	return 0, false
}

// MulDiv is x·m/d, rounded toward zero, for non-negative x and positive m and d: a
// share of x (what a budget lends in proportion to its own use).
func (x Amount) MulDiv(m, d Amount) Amount {
	n := new(big.Int).Mul(x.Big(), m.Big())
	n.Quo(n, d.Big())
	a, _ := fromBig(n)
	return a
}

// Quantity is x as a Quantity in format f (DecimalSI when f is empty), for output.
func (x Amount) Quantity(f resource.Format) resource.Quantity {
	if f == "" {
		f = resource.DecimalSI
	}
	if v, ok := x.int64Nanos(); ok {
		switch {
		case v%nano == 0:
			return *resource.NewQuantity(v/nano, f)
		case v%(nano/1000) == 0:
			return *resource.NewMilliQuantity(v/(nano/1000), f)
		}
		q := resource.NewScaledQuantity(v, resource.Nano)
		q.Format = f
		return *q
	}
	return *resource.NewDecimalQuantity(*inf.NewDecBig(x.Big(), 9), f)
}

// Text is x.Quantity(f) as it prints.
func (x Amount) Text(f resource.Format) string {
	q := x.Quantity(f)
	return q.String()
}

// String prints x in units (DecimalSI), for logs and test failures.
func (x Amount) String() string {
	if v, ok := x.int64Nanos(); ok && v%nano == 0 {
		return strconv.FormatInt(v/nano, 10)
	}
	return x.Text(resource.DecimalSI)
}
