package estimate

import (
	"container/list"
	"fmt"
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
	Basis   string
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
	mu      sync.Mutex
	maxKeys int
	keys    map[Key]*list.Element // each Value a *series
	lru     list.List             // front: recorded most recently
}

// series is one key's window of durations.
type series struct {
	key  Key
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
	return &Learner{maxKeys: maxKeys, keys: map[Key]*list.Element{}}
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
		e := l.keys[k]
		if e == nil {
			if l.lru.Len() >= l.maxKeys {
				oldest := l.lru.Back()
				delete(l.keys, oldest.Value.(*series).key)
				l.lru.Remove(oldest)
			}
			e = l.lru.PushFront(&series{key: k})
			l.keys[k] = e
		} else {
			l.lru.MoveToFront(e)
		}
		s := e.Value.(*series)
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
func (l *Learner) EstimateAfter(keys []Key, elapsed time.Duration) (Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		e := l.keys[k]
		if e == nil {
			continue
		}
		s := e.Value.(*series)
		if s.n < MinSamples {
			continue
		}
		if s.stale {
			s.summarize()
		}
		if elapsed >= s.summary.Low {
			if d, ok := s.longerThan(elapsed); ok {
				return d, true
			}
		}
		return s.summary, true
	}
	return Duration{}, false
}

// Len returns how many keys the Learner keeps.
func (l *Learner) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lru.Len()
}

// summarize computes the window's median and 10th and 90th percentiles (nearest rank).
func (s *series) summarize() {
	var buf [Window]time.Duration
	w := buf[:s.n]
	copy(w, s.ring[:s.n])
	slices.Sort(w)
	s.summary = Duration{
		Median:  rank(w, 50),
		Mean:    mean(w),
		Low:     rank(w, 10),
		High:    rank(w, 90),
		Samples: s.n,
		Basis:   s.key.String(),
	}
	s.stale = false
}

// longerThan is the quantiles of the runs longer than elapsed, with their count as
// Samples; false when there is none.
func (s *series) longerThan(elapsed time.Duration) (Duration, bool) {
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
	return Duration{
		Median:  rank(w, 50),
		Mean:    mean(w),
		Low:     rank(w, 10),
		High:    rank(w, 90),
		Samples: len(w),
		Basis:   fmt.Sprintf("%s, its runs longer than %s", s.key, elapsed.Round(time.Second)),
	}, true
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
