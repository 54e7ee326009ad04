package estimates

import (
	"math"
	"slices"
	"time"

	"github.com/quotagate/quotagate/bench/report"
)

// Pod is what the benchmark saw of one Job's pod.
type Pod struct {
	// Name is the pod's namespace and name ("ns/name").
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	Priority int32  `json:"priority,omitempty"`
	// Created is when the benchmark's create of the pod's Job returned.
	Created time.Time `json:"created"`
	// Started is when the watch showed the pod without quotagate's gate (its admission,
	// which an estimate estimates), Ended when it showed it Succeeded or Failed; zero
	// when not seen.
	Started time.Time `json:"started,omitzero"`
	Ended   time.Time `json:"ended,omitzero"`
	// First is the first poll that found an estimate of the pod published (known or
	// not), Head the first poll that found it at position 1; nil when none did (the pod
	// was admitted before).
	First *Sighting `json:"first,omitempty"`
	Head  *Sighting `json:"head,omitempty"`
}

// Sighting is one poll's view of a gated pod: the manager's estimate and the naive
// baseline's, both of when it starts, at the same moment.
type Sighting struct {
	At       time.Time `json:"at"`
	Position int       `json:"position"`
	// Quotagate is the estimate's median; zero when the estimate is Unknown, and
	// Unknown says why.
	Quotagate time.Time `json:"quotagate,omitzero"`
	Unknown   string    `json:"unknown,omitempty"`
	// Low and High are the estimate's range, meant to hold the start 80% of the time;
	// zero when it had none.
	Low     time.Time `json:"low,omitzero"`
	High    time.Time `json:"high,omitzero"`
	Ends    int64     `json:"ends,omitempty"`
	Samples int64     `json:"samples,omitempty"`
	Basis   string    `json:"basis,omitempty"`
	// Baseline is Baseline's estimate at At; zero when no pod had ended yet.
	Baseline time.Time `json:"baseline,omitzero"`
	// Oracle is Oracle's estimate at At (the floor under any estimate from durations);
	// zero when not computed.
	Oracle time.Time `json:"oracle,omitzero"`
}

// Baseline is the naive estimate at now of when the pod at position (1 is next)
// starts, in a budget of slots pods whose pods have run for mean on average: position ×
// mean ÷ slots from now. It knows nothing of kinds, of what runs, or of how long it has
// run. Zero when mean is not known (no pod has ended yet).
func Baseline(now time.Time, position int, mean time.Duration, slots int) time.Time {
	if mean <= 0 || slots <= 0 {
		return time.Time{}
	}
	return now.Add(time.Duration(float64(mean) * float64(position) / float64(slots)))
}

// MeanRun is the mean time from start to end of the pods that ended by now: the run
// time the baseline has seen. Zero when none has.
func MeanRun(started, ended map[string]time.Time, now time.Time) time.Duration {
	var sum time.Duration
	n := 0
	for name, end := range ended {
		start, ok := started[name]
		if !ok || end.After(now) || !end.After(start) {
			continue
		}
		sum += end.Sub(start)
		n++
	}
	if n == 0 {
		return 0
	}
	return sum / time.Duration(n)
}

// Held is how long, in seconds, each pod of kind that started and ended held its quota:
// its run time as the benchmark's watch saw it.
func Held(pods []Pod, kind string) []float64 {
	var out []float64
	for _, p := range pods {
		if p.Kind == kind && !p.Started.IsZero() && p.Ended.After(p.Started) {
			out = append(out, p.Ended.Sub(p.Started).Seconds())
		}
	}
	return out
}

// WarmAt is the earliest moment every kind had at least least pods ended, the point
// after which the benchmark judges the estimates: before it the Learner has too few
// runs of some kind. False when that moment never came.
func WarmAt(pods []Pod, kinds []string, least int) (time.Time, bool) {
	ends := map[string][]time.Time{}
	for _, p := range pods {
		if !p.Ended.IsZero() {
			ends[p.Kind] = append(ends[p.Kind], p.Ended)
		}
	}
	var warm time.Time
	for _, k := range kinds {
		e := ends[k]
		if len(e) < least {
			return time.Time{}, false
		}
		slices.SortFunc(e, time.Time.Compare)
		if e[least-1].After(warm) {
			warm = e[least-1]
		}
	}
	return warm, true
}

// Errors are the absolute errors of the two estimates of one moment (the first
// estimate, or at the head of the queue), in seconds, over the pods where both were
// known; Signed are the same with their sign (estimate − start: positive is late).
type Errors struct {
	// Pods is how many judged pods had a sighting at this moment.
	Pods int `json:"pods"`
	// Unknown counts the pods whose estimate was Unknown, and NoBaseline those without
	// a baseline (no pod had ended yet); neither is in the errors.
	Unknown    int            `json:"unknown"`
	Reasons    map[string]int `json:"unknownReasons,omitempty"`
	NoBaseline int            `json:"noBaseline"`
	Quotagate  []float64      `json:"quotagateSeconds"`
	Baseline   []float64      `json:"baselineSeconds"`
	// QuotagateSigned and BaselineSigned are the same errors with their sign.
	QuotagateSigned []float64 `json:"quotagateSignedSeconds"`
	BaselineSigned  []float64 `json:"baselineSignedSeconds"`
	// Oracle are the oracle's absolute errors, of those of these pods it estimated.
	Oracle []float64 `json:"oracleSeconds,omitempty"`
	// Waits are how long each of these pods waited from the sighting to its start.
	Waits []float64 `json:"waitSeconds"`
	// Ranged counts the scored estimates that had a range, Within those whose range
	// held the start (Low ≤ start ≤ High).
	Ranged int `json:"ranged"`
	Within int `json:"within"`
}

// Coverage is the share of the ranged estimates whose range held the start, in
// percent; 0 without any.
func (e Errors) Coverage() float64 {
	if e.Ranged == 0 {
		return 0
	}
	return 100 * float64(e.Within) / float64(e.Ranged)
}

// ErrorsAt collects the errors of the sighting at picks of each pod in judged that
// started.
func ErrorsAt(judged []Pod, at func(Pod) *Sighting) Errors {
	var e Errors
	for _, p := range judged {
		s := at(p)
		if s == nil || p.Started.IsZero() {
			continue
		}
		e.Pods++
		switch {
		case s.Quotagate.IsZero():
			e.Unknown++
			if e.Reasons == nil {
				e.Reasons = map[string]int{}
			}
			e.Reasons[s.Unknown]++
			continue
		case s.Baseline.IsZero():
			e.NoBaseline++
			continue
		}
		q, b := s.Quotagate.Sub(p.Started).Seconds(), s.Baseline.Sub(p.Started).Seconds()
		e.Quotagate = append(e.Quotagate, math.Abs(q))
		e.Baseline = append(e.Baseline, math.Abs(b))
		e.QuotagateSigned = append(e.QuotagateSigned, q)
		e.BaselineSigned = append(e.BaselineSigned, b)
		e.Waits = append(e.Waits, p.Started.Sub(s.At).Seconds())
		if !s.Low.IsZero() && !s.High.IsZero() {
			e.Ranged++
			if !p.Started.Before(s.Low) && !p.Started.After(s.High) {
				e.Within++
			}
		}
		if !s.Oracle.IsZero() {
			e.Oracle = append(e.Oracle, math.Abs(s.Oracle.Sub(p.Started).Seconds()))
		}
	}
	return e
}

// Band is the errors of the sightings at positions From to To.
type Band struct {
	From, To int
	Errors   Errors
}

// ByPosition splits the errors of the sightings at picks by the pod's position then,
// in bands of width positions: 1 to width, width+1 to 2×width, and so on; bands with
// no sighting are left out. An estimate that is biased per pod ahead drifts from band
// to band; one that is only noisy does not.
func ByPosition(judged []Pod, at func(Pod) *Sighting, width int) []Band {
	width = max(width, 1)
	groups := map[int][]Pod{}
	most := -1
	for _, p := range judged {
		if s := at(p); s != nil {
			b := max(s.Position-1, 0) / width
			groups[b] = append(groups[b], p)
			most = max(most, b)
		}
	}
	var out []Band
	for b := 0; b <= most; b++ {
		if len(groups[b]) > 0 {
			out = append(out, Band{From: b*width + 1, To: (b + 1) * width, Errors: ErrorsAt(groups[b], at)})
		}
	}
	return out
}

// Judged are the pods whose Job was created after warm, in the order they were created.
func Judged(pods []Pod, warm time.Time) []Pod {
	var out []Pod
	for _, p := range pods {
		if p.Created.After(warm) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b Pod) int { return a.Created.Compare(b.Created) })
	return out
}

// Quantiles are the median and 90th percentile (nearest rank) of samples, zero
// without samples.
type Quantiles struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
}

func QuantilesOf(samples []float64) Quantiles {
	if len(samples) == 0 {
		return Quantiles{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	return Quantiles{N: len(s), P50: report.Percentile(s, 50), P90: report.Percentile(s, 90)}
}

// Improvement is the baseline's median absolute error over the manager's: how many
// times smaller the manager's is (0 without errors; +Inf when the manager's is 0).
func (e Errors) Improvement() float64 {
	q, b := QuantilesOf(e.Quotagate), QuantilesOf(e.Baseline)
	switch {
	case q.N == 0:
		return 0
	case q.P50 == 0:
		return math.Inf(1)
	}
	return b.P50 / q.P50
}
