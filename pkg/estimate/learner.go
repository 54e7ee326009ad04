package estimate

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// Bounds of what a Learner keeps (doc.go: memory).
const (
	// MinSamples is how many finished pods a key needs before its durations are used;
	// with fewer, Estimate falls back to the next, less specific key.
	MinSamples = 3
	// Window is how many durations a key keeps: the most recent, so that a workload
	// whose runs get longer or shorter is followed within Window runs.
	Window = 32
	// DefaultMaxKeys is how many keys a Learner keeps by default; past it, the key
	// recorded least recently goes.
	DefaultMaxKeys = 4096
)

// Duration is how long a pod is expected to hold its quota: the median, the mean and a
// range (the 10th and 90th percentiles of the samples), how many samples they come
// from, and what they come from (a Key's String, a deadline, an annotation).
type Duration struct {
	Median, Low, High time.Duration
	// Mean is the samples' mean (zero: not known, Center is the Median).
	Mean    time.Duration
	Samples int
	// Basis says what the durations come from, as an estimate's basis line shows it:
	// "durations of 12 runs of Job team-a/train", "no run of Job demo/etl yet;
	// durations of 30 runs of pods in namespace demo".
	Basis string
	// Level is the circle learned durations come from: the pod's own workload
	// (LevelOwner), or a wider one it fell back to. Spread is the log-normal σ by which a
	// wider circle's durations are widened (FallbackSpread): another workload's runs say
	// little of this one's, and the range says so.
	Level  Level
	Spread float64

	// runs are the learned durations, sorted, that a simulation draws from (shared, not
	// to be modified); bandwidth is the log-normal σ a draw is smoothed by (draw); fit
	// is the spread of all the key's runs, shared by every Duration of the key, that a
	// simulation draws the workload's own spread from (durations.spreadOf); outlasted is
	// set for a pod that has held its quota longer than every run; workload is the
	// pod's own workload (its first key), whose pods a simulation draws alike
	// (durations.workloads).
	runs      []time.Duration
	bandwidth float64
	fit       *fit
	outlasted bool
	workload  Key
}

// fit is what a simulation draws a workload's spread from (spreadFrom): its n runs,
// sorted, the mean and the standard deviation (of n-1) of their logarithms, and their
// mean and coefficient of variation.
type fit struct {
	runs        []time.Duration
	logMean, sd float64
	mean, cv    float64
	n           int
}

// Spreads of the durations learned from a wider circle than the pod's own workload,
// the σ of the log-normal factor a simulation multiplies them by, one for the whole
// workload (durations.spreadOf): a workload never seen is taken to run, 80% of the
// time, between a thirteenth and 13 times as long as its namespace's runs (σ 2.0; a
// team's minutes of preprocessing and hours of training differ so), and a budget's
// runs, which may span namespaces, say less still (σ 2.5: ×0.04 to ×25). At σ 1.0 make
// demo's new kind of Job, 20 s runs among runs of 1 to 6 s, fell outside its range
// (TestNewWorkloadsRangeHoldsItsStart).
const (
	namespaceSpread = 2.0
	budgetSpread    = 2.5
	// z90 is the standard normal's 90th percentile.
	z90 = 1.2816
)

// FallbackSpread is the σ a learned duration of level is widened by (0 for a pod's own
// workload).
func FallbackSpread(level Level) float64 {
	switch level {
	case LevelNamespace:
		return namespaceSpread
	case LevelBudget:
		return budgetSpread
	}
	return 0
}

// Center is the duration a simulation's central run gives a pod it admits: its Mean
// when known, else its Median. A waiting pod's start is a sum of the runs ahead of it,
// and the middle of a sum is the sum of the means, not of the medians: for a kind whose
// runs are skewed (most short, a few long) the medians add up to too little, and the
// error grows with every pod ahead (make bench-estimates measured the first estimates
// of 2026-12-03 early by 7 s at the median with medians). The pods already running end
// at their median (Expectation.Ends).
func (d Duration) Center() time.Duration {
	if d.Mean > 0 {
		return d.Mean
	}
	return d.Median
}

// Learner learns how long pods hold quota from pods that ended. Each key keeps its
// last Window durations in a ring (Window × 8 bytes; some 600 bytes per key with the
// map entry, the list element and the cached summary: 589 measured at 4096 keys, the
// names of the key aside); at most maxKeys keys are kept, the least recently recorded
// going first (LRU on Record; Estimate does not refresh a key, so that a key nothing
// finishes under any more is the first to go). So a Learner holds at most about
// maxKeys × 600 bytes: 2.4 MB at DefaultMaxKeys.
//
// Why not a quantile sketch: github.com/beorn7/perks/quantile (in the module graph
// through Prometheus) preallocates a 500-sample buffer (12 KB) per stream, and never
// forgets: a Job whose runs changed keeps its old durations for ever. A window of the
// last runs gives exact quantiles of recent behavior in a fixed 256 bytes.
//
// It is safe for concurrent use.
type Learner struct {
	mu   sync.Mutex
	keys *lru[Key, series]
}

// series is one key's window of durations.
type series struct {
	ring [Window]time.Duration
	n    int // how many of ring are filled (at most Window)
	next int // where the next duration goes
	// summary is the window's quantiles, computed on the first Estimate after a Record.
	summary Duration
	stale   bool
}

// NewLearner returns a Learner that keeps at most maxKeys keys (DefaultMaxKeys when
// maxKeys < 1).
func NewLearner(maxKeys int) *Learner {
	if maxKeys < 1 {
		maxKeys = DefaultMaxKeys
	}
	return &Learner{keys: newLRU[Key, series](maxKeys)}
}

// Record adds one finished pod's duration under each of its keys (KeysOf). A duration
// that is not positive is ignored.
func (l *Learner) Record(keys []Key, d time.Duration) {
	if d <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		s := l.keys.record(k)
		s.ring[s.next] = d
		s.next = (s.next + 1) % Window
		s.n = min(s.n+1, Window)
		s.stale = true
	}
}

// Estimate returns the durations of the first key, in the order given (most specific
// first), with at least MinSamples samples; false when none has.
func (l *Learner) Estimate(keys []Key) (Duration, bool) { return l.EstimateAfter(keys, 0) }

// EstimateAfter is Estimate for a pod that has held its quota for elapsed already: the
// quantiles of the key's runs that lasted longer than that (a pod past the median of
// its kind is among the long ones), or of all its runs when none did, or when elapsed
// is below their Low.
//
// Durations of a wider circle than the first key's (the pod's own workload) are all
// its runs, whatever elapsed (the simulation keeps the draws longer than elapsed once
// multiplied by the workload's factor), widened (FallbackSpread: Low and High reach
// further), and their Basis says so: "no run of Job demo/etl yet; durations of 30
// runs of pods in namespace demo".
func (l *Learner) EstimateAfter(keys []Key, elapsed time.Duration) (Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	own := 0 // runs of keys[0] when it has too few
	for i, k := range keys {
		s, ok := l.keys.get(k)
		if !ok {
			continue
		}
		if s.n < MinSamples {
			if i == 0 {
				own = s.n
			}
			continue
		}
		if s.stale {
			s.summarize(k)
		}
		d := s.summary
		// A wider circle's runs are scaled by a factor the simulation draws for the
		// pod's workload (durations.spreadOf): which of them outlast elapsed is known
		// only once scaled, and drawEnd keeps the draws that do.
		if i == 0 && elapsed >= s.summary.Low {
			if longer, ok := s.longerThan(k, elapsed); ok {
				d = longer
			} else {
				d.outlasted = true
			}
		}
		if i > 0 {
			d.widen(FallbackSpread(k.Level))
			d.Basis = tooFew(keys[0], own) + "; " + d.Basis
		}
		d.workload = keys[0]
		return d, true
	}
	return Duration{}, false
}

// widen spreads d's range by a log-normal factor of σ: its 10th and 90th percentiles.
func (d *Duration) widen(sigma float64) {
	d.Spread = sigma
	if sigma <= 0 {
		return
	}
	f := math.Exp(z90 * sigma)
	d.Low = time.Duration(float64(d.Low) / f)
	d.High = time.Duration(float64(d.High) * f)
}

// tooFew says that key, the pod's own, has n runs, fewer than MinSamples.
func tooFew(key Key, n int) string {
	switch n {
	case 0:
		return "no run of " + key.String() + " yet"
	case 1:
		return "only 1 run of " + key.String()
	}
	return fmt.Sprintf("only %d runs of %s", n, key.String())
}

// Len returns how many keys the Learner keeps.
func (l *Learner) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.keys.len()
}

// summarize computes the window's median and 10th and 90th percentiles (nearest rank).
func (s *series) summarize(key Key) {
	var buf [Window]time.Duration
	w := buf[:s.n]
	copy(w, s.ring[:s.n])
	slices.Sort(w)
	runs := slices.Clone(w)
	f := fitOf(runs)
	s.summary = Duration{
		runs:      runs,
		bandwidth: bandwidth(f),
		fit:       &f,
		Median:    rank(w, 50),
		Mean:      mean(w),
		Low:       rank(w, 10),
		High:      rank(w, 90),
		Samples:   s.n,
		Basis:     runsOf(s.n, key),
		Level:     key.Level,
	}
	s.stale = false
}

// longerThan is the quantiles of the runs longer than elapsed, with their count as
// Samples; false when there is none.
func (s *series) longerThan(key Key, elapsed time.Duration) (Duration, bool) {
	var buf [Window]time.Duration
	w := buf[:0]
	for _, d := range s.ring[:s.n] {
		if d > elapsed {
			w = append(w, d)
		}
	}
	if len(w) == 0 {
		return Duration{}, false
	}
	slices.Sort(w)
	runs := slices.Clone(w)
	if s.stale {
		s.summarize(key)
	}
	h := bandwidth(fitOf(runs))
	if len(runs) < MinSamples {
		// Too few runs longer than elapsed to say how they spread: the spread of all
		// the key's runs.
		h = s.summary.bandwidth
	}
	return Duration{
		runs:      runs,
		bandwidth: h,
		fit:       s.summary.fit,
		Median:    rank(w, 50),
		Mean:      mean(w),
		Low:       rank(w, 10),
		High:      rank(w, 90),
		Samples:   len(w),
		Basis:     fmt.Sprintf("%s longer than %s", runsOf(len(w), key), elapsed.Round(time.Second)),
		Level:     key.Level,
	}, true
}

// runsOf is "durations of 12 runs of Job team-a/train", "durations of 30 runs of pods
// in namespace demo".
func runsOf(n int, k Key) string {
	what := k.String()
	if k.Level != LevelOwner {
		what = "pods in " + what
	}
	return durationsOf(n, what)
}

// durationsOf is "durations of 1 run of what", "durations of n runs of what".
func durationsOf(n int, what string) string {
	if n == 1 {
		return "durations of 1 run of " + what
	}
	return fmt.Sprintf("durations of %d runs of %s", n, what)
}

// fitOf is the fit of runs (sorted, not empty).
func fitOf(runs []time.Duration) fit {
	n := len(runs)
	var lsum, lsq, sum, sq float64
	for _, d := range runs {
		x := math.Log(float64(max(d, 1)))
		lsum += x
		lsq += x * x
		sum += float64(d)
		sq += float64(d) * float64(d)
	}
	fn := float64(n)
	f := fit{runs: runs, logMean: lsum / fn, mean: sum / fn, n: n}
	if n > 1 {
		f.sd = math.Sqrt(max(lsq/fn-f.logMean*f.logMean, 0) * fn / (fn - 1))
		f.cv = math.Sqrt(max(sq/fn-f.mean*f.mean, 0)*fn/(fn-1)) / f.mean
	}
	return f
}

// bandwidth is the log-normal σ by which draws from runs of fit f are smoothed:
// Silverman's rule of thumb, 1.06 × their standard deviation × n^(-1/5) (a smoothed
// bootstrap).
func bandwidth(f fit) float64 {
	if f.n < 2 {
		return 0
	}
	return 1.06 * f.sd * math.Pow(float64(f.n), -0.2)
}

// mean is the mean of ds (not empty). Window durations of at most a few years each
// cannot overflow the sum.
func mean(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

// rank is the nearest-rank p-th percentile of sorted (not empty).
func rank(sorted []time.Duration, p int) time.Duration {
	i := (p*len(sorted) + 99) / 100 // ceil(p/100 × n), 1-based
	return sorted[max(i, 1)-1]
}
