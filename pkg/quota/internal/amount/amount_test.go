package amount

import (
	"math"
	"math/big"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// bigOf is q in nano-units with Quantity's own arithmetic (inf.Dec), the oracle the
// tests compare with: it shares no code with Of.
func bigOf(q resource.Quantity) *big.Int {
	d := q.AsDec()
	n := new(big.Int).Set(d.UnscaledBig())
	scale := int64(d.Scale())
	if scale < -40 && n.Sign() != 0 { // far beyond any bound: no need to expand it
		return new(big.Int).Mul(big.NewInt(int64(n.Sign())), new(big.Int).Exp(big.NewInt(10), big.NewInt(40), nil))
	}
	if scale <= 9 {
		return n.Mul(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(9-scale), nil))
	}
	return n.Quo(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(scale-9), nil)) // never: parsed quantities are whole nano-units
}

func TestOf(t *testing.T) {
	for in, want := range map[string]string{
		"0":     "0",
		"1":     "1000000000",
		"1500m": "1500000000",
		"100m":  "100000000", // a tenth of a byte, if it is memory: kept, as ResourceQuota keeps it
		"1u":    "1000",      // finer than a milli-unit: exact now
		"1n":    "1",
		"-1n":   "-1",
		"1Gi":   "1073741824000000000",
		"9Pi":   "10133099161583616000000000",   // the int64 of milli-units it once saturated
		"8Ei":   "9223372036854775807000000000", // 2^63 units, which Quantity's parser caps at 2^63-1
		"2.5":   "2500000000",
	} {
		got, ok := Of(resource.MustParse(in))
		if !ok || got.Big().String() != want {
			t.Errorf("Of(%s) = %s, %v; want %s, true", in, got.Big(), ok, want)
		}
	}
	for _, in := range []string{"1e19", "1e30", "-1e300", "9223372036854775808"} {
		if _, ok := Of(resource.MustParse(in)); ok {
			t.Errorf("Of(%s) is countable, want beyond MaxUnits", in)
		}
	}
	if _, ok := Of(resource.MustParse("9223372036854775807")); !ok {
		t.Error("Of(2^63-1) is not countable, want the largest countable value")
	}
}

// A Quantity built in code may be finer than a nano-unit: rounded away from zero, as
// the API server rounds what it parses.
func TestOfFinerThanNano(t *testing.T) {
	for _, tc := range []struct {
		q    *resource.Quantity
		want int64
	}{
		{resource.NewScaledQuantity(1, -12), 1},
		{resource.NewScaledQuantity(-1, -12), -1},
		{resource.NewScaledQuantity(1500, -12), 2},
	} {
		if got := MustOf(*tc.q); got != Nanos(tc.want) {
			t.Errorf("Of(%s) = %s nano, want %d", tc.q, got.Big(), tc.want)
		}
	}
}

func TestArithmeticIsExactPastInt64(t *testing.T) {
	top := MustOf(resource.MustParse("9223372036854775807")) // 2^63-1 units
	sum := Amount{}
	for range 1000 {
		sum = sum.Add(top)
	}
	want := new(big.Int).Mul(top.Big(), big.NewInt(1000))
	if sum.Big().Cmp(want) != 0 {
		t.Fatalf("1000 × (2^63-1) units = %s, want %s", sum.Big(), want)
	}
	for range 999 {
		sum = sum.Sub(top)
	}
	if sum != top {
		t.Errorf("after taking 999 back: %s, want %s", sum.Big(), top.Big())
	}
	if got := top.Neg().Add(top); !got.IsZero() {
		t.Errorf("-x + x = %s", got.Big())
	}
	if Units(math.MinInt64).Big().Cmp(new(big.Int).Mul(big.NewInt(math.MinInt64), big.NewInt(nano))) != 0 {
		t.Errorf("Units(MinInt64) = %s", Units(math.MinInt64).Big())
	}
	if Milli(-1500) != Units(-1).Sub(Milli(500)) {
		t.Errorf("Milli(-1500) = %s", Milli(-1500).Big())
	}
}

func TestCompare(t *testing.T) {
	big1 := MustOf(resource.MustParse("8Ei"))
	for _, tc := range []struct {
		x, y Amount
		want int
	}{
		{Units(1), Units(2), -1},
		{Units(-1), Units(1), -1},
		{Nanos(-1), Amount{}, -1},
		{big1, big1.Add(Nanos(1)), -1},
		{big1.Neg(), Units(-1), -1},
		{big1, big1, 0},
	} {
		if got := tc.x.Cmp(tc.y); got != tc.want {
			t.Errorf("Cmp(%s, %s) = %d, want %d", tc.x.Big(), tc.y.Big(), got, tc.want)
		}
		if got := tc.y.Cmp(tc.x); got != -tc.want {
			t.Errorf("Cmp(%s, %s) = %d, want %d", tc.y.Big(), tc.x.Big(), got, -tc.want)
		}
	}
}

// Amounts written back for a status read as Quantity arithmetic wrote them.
func TestQuantity(t *testing.T) {
	for _, tc := range []struct {
		v      Amount
		format resource.Format
		want   string
	}{
		{Units(4), resource.DecimalSI, "4"},
		{Milli(1500), resource.DecimalSI, "1500m"},
		{Amount{}, resource.BinarySI, "0"},
		{Units(2 << 30), resource.BinarySI, "2Gi"},
		{Units(1000), resource.DecimalSI, "1k"},
		{Milli(100), resource.BinarySI, "100m"},
		{Milli(-500), resource.DecimalSI, "-500m"},
		{Units(3), "", "3"},
		{Nanos(1), resource.DecimalSI, "1n"},
		{Nanos(1500), resource.DecimalSI, "1500n"},
		{MustOf(resource.MustParse("4Ei")).Add(MustOf(resource.MustParse("4Ei"))), resource.BinarySI, "8Ei"},
		{MustOf(resource.MustParse("9223372036854775807")).Add(Units(1)).Add(Nanos(1)), resource.DecimalSI, "9223372036854775808000000001n"},
	} {
		if got := tc.v.Text(tc.format); got != tc.want {
			t.Errorf("Text(%s nano, %q) = %s, want %s", tc.v.Big(), tc.format, got, tc.want)
		}
		if back, ok := Of(tc.v.Quantity(tc.format)); ok && back != tc.v {
			t.Errorf("Of(Quantity(%s)) = %s: not the same amount", tc.v.Big(), back.Big())
		}
	}
}

func TestMulDiv(t *testing.T) {
	top := MustOf(resource.MustParse("9223372036854775807"))
	if got := top.MulDiv(top, top); got != top {
		t.Errorf("x·x/x = %s, want %s", got.Big(), top.Big())
	}
	if got := Units(10).MulDiv(Units(1), Units(3)); got != Nanos(3333333333) {
		t.Errorf("10·1/3 = %s, want 3.333333333", got.Text(resource.DecimalSI))
	}
}

func TestListSubDropsZeros(t *testing.T) {
	a := List{"cpu": Units(2), "memory": Units(1)}
	a.Sub(List{"memory": Units(1), "cpu": Milli(500)})
	if len(a) != 1 || a["cpu"] != Milli(1500) {
		t.Errorf("after Sub: %v", a)
	}
	if !a.Equal(List{"cpu": Milli(1500), "pods": {}}) {
		t.Error("Equal does not count an absent entry as zero")
	}
}
