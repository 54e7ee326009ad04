package report

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSummarize(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(100 - i) // 100..1, unsorted
	}
	tests := map[string]struct {
		samples []float64
		want    Summary
	}{
		"none":    {samples: nil, want: Summary{}},
		"one":     {samples: []float64{7}, want: Summary{N: 1, P50: 7, P99: 7, Min: 7, Max: 7}},
		"three":   {samples: []float64{3, 1, 2}, want: Summary{N: 3, P50: 2, P99: 3, Min: 1, Max: 3}},
		"even":    {samples: []float64{4, 1, 3, 2}, want: Summary{N: 4, P50: 2, P99: 4, Min: 1, Max: 4}},
		"hundred": {samples: hundred, want: Summary{N: 100, P50: 50, P99: 99, Min: 1, Max: 100}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Summarize(tc.samples)); diff != "" {
				t.Errorf("summarize(%v) (-want +got):\n%s", tc.samples, diff)
			}
		})
	}
}

func TestSummarizeLeavesSamplesAlone(t *testing.T) {
	samples := []float64{3, 1, 2}
	Summarize(samples)
	if diff := cmp.Diff([]float64{3, 1, 2}, samples); diff != "" {
		t.Errorf("summarize reordered its input (-want +got):\n%s", diff)
	}
}

func TestMillis(t *testing.T) {
	got := Millis([]time.Duration{1500 * time.Microsecond, 2 * time.Second})
	if diff := cmp.Diff([]float64{1.5, 2000}, got); diff != "" {
		t.Errorf("millis (-want +got):\n%s", diff)
	}
}

func TestRatio(t *testing.T) {
	tests := map[string]struct {
		a, b, want float64
	}{
		"half":        {a: 1, b: 2, want: 0.5},
		"zero divide": {a: 1, b: 0, want: 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Ratio(tc.a, tc.b); got != tc.want {
				t.Errorf("ratio(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
		})
	}
}

// DiffInterval: a difference the samples show is inside the interval and zero is not;
// for two sets from one distribution the interval holds zero; and a render is the same
// every time.
func TestDiffInterval(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	draw := func(n int, shift float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = shift + r.ExpFloat64()*5
		}
		return out
	}
	base, same, slower := draw(600, 0), draw(600, 0), draw(600, 30)
	if lo, hi, ok := DiffInterval(same, base, 99); !ok || lo > 0 || hi < 0 {
		t.Errorf("one distribution: interval [%.1f, %.1f], want it to hold 0", lo, hi)
	}
	lo, hi, _ := DiffInterval(slower, base, 99)
	if lo <= 0 || hi < 30 || lo > 30 {
		t.Errorf("30 ms slower: interval [%.1f, %.1f], want it above 0 and around 30", lo, hi)
	}
	if lo2, hi2, _ := DiffInterval(slower, base, 99); lo2 != lo || hi2 != hi {
		t.Errorf("two renders differ: [%.1f, %.1f] then [%.1f, %.1f]", lo, hi, lo2, hi2)
	}
	if _, _, ok := DiffInterval(nil, base, 99); ok {
		t.Errorf("no samples: ok, want not ok")
	}
}

// RatioInterval: for two sets from one distribution the interval holds 1; for a set
// drawn 1.5 times slower it holds the ratio of the two p99s and lies above 1.
func TestRatioInterval(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	draw := func(n int, scale float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = scale * (1 + r.ExpFloat64())
		}
		return out
	}
	base, same, slower := draw(1000, 1), draw(1000, 1), draw(1000, 1.5)
	if lo, hi, ok := RatioInterval(same, base, 99); !ok || lo > 1 || hi < 1 {
		t.Errorf("one distribution: interval [%.2f, %.2f], want it to hold 1", lo, hi)
	}
	p99 := func(xs []float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return Percentile(s, 99)
	}
	x := Ratio(p99(slower), p99(base))
	if lo, hi, _ := RatioInterval(slower, base, 99); lo <= 1 || lo > x || hi < x {
		t.Errorf("1.5 times slower: interval [%.2f, %.2f], want it above 1 and holding the p99 ratio %.2f", lo, hi, x)
	}
	if _, _, ok := RatioInterval(base, nil, 99); ok {
		t.Errorf("no baseline samples: ok, want not ok")
	}
}
