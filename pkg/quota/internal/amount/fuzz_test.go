package amount

import (
	"encoding/binary"
	"math/big"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// maxBig is MaxUnits in nano-units, as a big.Int.
var maxNano = new(big.Int).Mul(big.NewInt(MaxUnits), big.NewInt(nano))

// FuzzOf: whatever string the API server would accept as a quantity, Of either counts
// it exactly (the same nano-units as Quantity's own arithmetic) or says it cannot, and
// only when it is beyond MaxUnits; what it counts prints back as the same amount.
func FuzzOf(f *testing.F) {
	for _, s := range []string{"0", "1", "100m", "1n", "1u", "9Pi", "8Ei", "1e18", "1e19", "9223372036854775807", "-1.5Gi", "0.000000001", "12345678901234567890n", "1E-9", "3.3333333333"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if hugeExponent(s) {
			return // resource.ParseQuantity itself takes minutes on 1e3313111311
		}
		q, err := resource.ParseQuantity(s)
		if err != nil {
			return
		}
		want := bigOf(q.DeepCopy())
		got, ok := Of(q)
		beyond := new(big.Int).Abs(want).Cmp(maxNano) > 0
		if ok == beyond {
			t.Fatalf("Of(%s) countable = %v, but %s nano is beyond the bound: %v", s, ok, want, beyond)
		}
		if !ok {
			return
		}
		if got.Big().Cmp(want) != 0 {
			t.Fatalf("Of(%s) = %s nano, want %s", s, got.Big(), want)
		}
		for _, format := range []resource.Format{resource.DecimalSI, resource.BinarySI, resource.DecimalExponent} {
			back, ok := Of(got.Quantity(format))
			if !ok || back != got {
				t.Fatalf("Of(Quantity(%s, %s)) = %s, %v: not the same amount", got.Big(), format, back.Big(), ok)
			}
		}
	})
}

// hugeExponent reports whether s has a decimal exponent beyond ±100 (or one that does
// not parse): far beyond any bound, and costly for Quantity's own parser.
func hugeExponent(s string) bool {
	i := strings.IndexAny(s, "eE")
	if i < 0 || s[i:] == "Ei" {
		return false
	}
	e, err := strconv.Atoi(s[i+1:])
	return err != nil || e > 100 || e < -100
}

// FuzzSums: a ledger's sums of any countable values, charged and released in any
// order, are the exact sums (big.Int), and never saturate or wrap.
func FuzzSums(f *testing.F) {
	f.Add([]byte{0x01, 0x02, 0x03})
	f.Add(append([]byte{0xff}, make([]byte, 64)...))
	f.Add([]byte("\x7f\xff\xff\xff\xff\xff\xff\xff\x7f\xff\xff\xff\xff\xff\xff\xff\x80\x00\x00\x00\x00\x00\x00\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var sum Amount
		var want big.Int
		var charged []Amount
		for len(data) >= 9 {
			op, v := data[0], int64(binary.BigEndian.Uint64(data[1:9]))
			data = data[9:]
			// The value: v units, or v nano-units, as op's low bit says; both are countable.
			a := Units(v)
			if op&1 == 1 {
				a = Nanos(v)
			}
			switch {
			case op&2 == 0 || len(charged) == 0: // charge
				sum = sum.Add(a)
				want.Add(&want, a.Big())
				charged = append(charged, a)
			default: // release one charged before
				i := int(op>>2) % len(charged)
				sum = sum.Sub(charged[i])
				want.Sub(&want, charged[i].Big())
				charged = append(charged[:i], charged[i+1:]...)
			}
			if sum.Big().Cmp(&want) != 0 {
				t.Fatalf("sum = %s, want %s", sum.Big(), &want)
			}
			if sum.Sign() != want.Sign() {
				t.Fatalf("Sign(%s) = %d", &want, sum.Sign())
			}
		}
		l := List{"r": sum}
		l.Sub(List{"r": sum})
		if len(l) != 0 {
			t.Fatalf("x - x left %v", l)
		}
	})
}
