package report

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Summary is the median and 99th percentile of a set of samples, with their count.
type Summary struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

// Summarize returns the nearest-rank percentiles of samples; the zero Summary when
// there are none.
func Summarize(samples []float64) Summary {
	if len(samples) == 0 {
		return Summary{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	return Summary{N: len(s), P50: Percentile(s, 50), P99: Percentile(s, 99), Min: s[0], Max: s[len(s)-1]}
}

// Percentile is the nearest-rank p-th percentile of sorted samples.
func Percentile(sorted []float64, p float64) float64 {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank-1, 0), len(sorted)-1)]
}

// Millis converts durations to milliseconds, the unit latency samples are kept in.
func Millis(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = float64(d) / float64(time.Millisecond)
	}
	return out
}

// Ratio is a/b, or 0 when b is 0.
func Ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// BootstrapResamples is how many resamples bootstrapInterval draws.
const BootstrapResamples = 2000

// DiffInterval is the 95% bootstrap interval of p(a) − p(b), p the nearest-rank p-th
// Percentile, for two independent sets of samples (bootstrapInterval).
func DiffInterval(a, b []float64, p float64) (lo, hi float64, ok bool) {
	return bootstrapInterval(a, b, p, func(x, y float64) float64 { return x - y })
}

// RatioInterval is the 95% bootstrap interval of p(a) / p(b) (bootstrapInterval).
func RatioInterval(a, b []float64, p float64) (lo, hi float64, ok bool) {
	return bootstrapInterval(a, b, p, Ratio)
}

// bootstrapInterval is the 95% bootstrap interval of compare(p(a), p(b)), p the
// nearest-rank p-th percentile, for two independent sets of samples: each set is
// resampled with replacement, bootstrapResamples times, and the interval runs from the
// 2.5th to the 97.5th percentile of the resampled comparisons. The seed is fixed, so a
// report renders the same every time. ok is false when either set is empty.
func bootstrapInterval(a, b []float64, p float64, compare func(x, y float64) float64) (lo, hi float64, ok bool) {
	if len(a) == 0 || len(b) == 0 {
		return 0, 0, false
	}
	r := rand.New(rand.NewPCG(7, 7))
	resample := func(xs, into []float64) float64 {
		for i := range into {
			into[i] = xs[r.IntN(len(xs))]
		}
		slices.Sort(into)
		return Percentile(into, p)
	}
	ra, rb := make([]float64, len(a)), make([]float64, len(b))
	out := make([]float64, BootstrapResamples)
	for i := range out {
		out[i] = compare(resample(a, ra), resample(b, rb))
	}
	slices.Sort(out)
	return Percentile(out, 2.5), Percentile(out, 97.5), true
}
