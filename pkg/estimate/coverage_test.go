package estimate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/quotagate/quotagate/pkg/quota"
)

// coverageRun replays trials of a queue whose truth is known: a Budget of slots pods
// at once, full of pods of one workload that have run for a uniform 0 to 60 s, and
// waiting pods of it behind them, every run drawn from truth. The Learner learned
// runs earlier runs of it (under the workload's own key, or, with foreign, only runs of
// another workload of its namespace, whose runs are this one's divided by a factor drawn
// for each trial as the estimator supposes a namespace's workloads differ: log-normal,
// of σ FallbackSpread(LevelNamespace)). Each trial's true starts come
// from replaying the queue in FIFO order with its true durations (what the core does
// with pods of equal size and priority); Simulate estimates them from the same start,
// with draws runs (0: DefaultDraws).
// It returns the share of true starts within [Low, High] and the median absolute error
// of Median, in seconds.
func coverageRun(seed uint64, trials, slots, waiting, runs, draws int, foreign bool, truth func(*rand.Rand) time.Duration) (coverage, medianErr float64) {
	r := rand.New(rand.NewPCG(seed, 51))
	inside, total := 0, 0
	var errs []float64
	for trial := range trials {
		l := NewLearner(0)
		learnAs := Facts{Namespace: "team-a", OwnerKind: "Job", Owner: "train"}
		scale := 1.0
		if foreign {
			learnAs.Owner, scale = "prep", math.Exp(FallbackSpread(LevelNamespace)*r.NormFloat64())
		}
		for range runs {
			l.Record(learnAs.Keys(nil), time.Duration(float64(truth(r))/scale))
		}
		w := world([]quota.Budget{budget("team-a", "a", fmt.Sprintf("cpu=%d", slots))}, nil, nil)
		free := make([]time.Time, 0, slots) // when each slot frees, truly
		for i := range slots {
			elapsed := time.Duration(r.Float64() * float64(60*time.Second))
			held := t0.Add(-elapsed)
			d := truth(r)
			for d <= elapsed {
				d = truth(r)
			}
			free = append(free, held.Add(d))
			f := Facts{Namespace: "team-a", OwnerKind: "Job", Owner: "train", Held: held}
			w.Running = append(w.Running, Pod{Pod: view(podIn("team-a", fmt.Sprintf("run-%d", i), -600, "cpu=1")), Expect: l.ExpectFacts(&f, nil, t0)})
		}
		truly := make([]time.Time, waiting)
		for j := range waiting {
			f := Facts{Namespace: "team-a", OwnerKind: "Job", Owner: "train"}
			w.Waiting = append(w.Waiting, Pod{Pod: view(podIn("team-a", fmt.Sprintf("w-%02d", j), j, "cpu=1").Gated()), Expect: l.ExpectFacts(&f, nil, t0)})
			slices.SortFunc(free, time.Time.Compare)
			truly[j] = free[0]
			free[0] = free[0].Add(truth(r))
		}
		for j, s := range Simulate(w, Options{Seed: uint64(trial), Draws: draws}) {
			if !s.Known {
				continue
			}
			total++
			if !truly[j].Before(s.Low) && !truly[j].After(s.High) {
				inside++
			}
			errs = append(errs, math.Abs(truly[j].Sub(s.Median).Seconds()))
		}
	}
	slices.Sort(errs)
	return float64(inside) / float64(total), errs[len(errs)/2]
}

// lognormal40 is a run of a lognormal duration of median 40 s and σ 0.5.
func lognormal40(r *rand.Rand) time.Duration {
	return time.Duration(40 * math.Exp(0.5*r.NormFloat64()) * float64(time.Second))
}

// bimodal is a run of 10 s or 60 s at even odds, each ±10%.
func bimodal(r *rand.Rand) time.Duration {
	base := 10.0
	if r.IntN(2) == 1 {
		base = 60
	}
	return time.Duration(base * (0.9 + 0.2*r.Float64()) * float64(time.Second))
}

// TestCoverage: an estimate's range holds the true start as often as it claims
// (Coverage, 80%) on workloads of known distributions, within 5 points, whether the
// runs learned are many (Window) or few (MinSamples) of the workload's own, or only
// another workload's (as unlike this one as the estimator supposes), and with a what-if's fewer draws (WhatIfDraws); over 4,800
// starts of 600 trials each (a fixed seed: the test is deterministic; fewer trials
// leave a few points to chance, since a trial's pods share its runs).
func TestCoverage(t *testing.T) {
	const trials, slots, waiting = 600, 4, 8
	// From 3 runs a workload's spread is stretched as a log-normal's posterior would
	// be (spreadFrom: Student's t of 2 degrees of freedom). A bimodal workload's 3 runs
	// have logs that spread wider than its starts do, so its ranges from 3 runs are
	// wider than needed: they hold 86 to 88% of its starts. They held 80% before the
	// rest of a running pod was drawn as such (Duration.drawAfter) only because they
	// were twice as wide and sat 4 to 38 s late. Over, not under: within 10 points.
	wider := map[string]bool{fmt.Sprintf("bimodal, 10 s or 60 s/%d runs", MinSamples): true}
	for name, truth := range map[string]func(*rand.Rand) time.Duration{
		"lognormal, median 40 s, σ 0.5": lognormal40,
		"bimodal, 10 s or 60 s":         bimodal,
	} {
		t.Run(name, func(t *testing.T) {
			for _, tc := range []struct {
				what    string
				runs    int
				draws   int
				foreign bool
			}{
				{fmt.Sprintf("%d runs of its own", Window), Window, 0, false},
				{fmt.Sprintf("%d runs of its own", MinSamples), MinSamples, 0, false},
				{fmt.Sprintf("%d runs of another workload", Window), Window, 0, true},
				{fmt.Sprintf("%d runs of its own, %d draws (a what-if)", Window, WhatIfDraws), Window, WhatIfDraws, false},
				{fmt.Sprintf("%d runs of its own, %d draws (a what-if)", MinSamples, WhatIfDraws), MinSamples, WhatIfDraws, false},
			} {
				cov, med := coverageRun(1, trials, slots, waiting, tc.runs, tc.draws, tc.foreign, truth)
				t.Logf("%s: %.1f%% of %d starts within range, median error %.1f s", tc.what, 100*cov, trials*waiting, med)
				over := 0.05
				if wider[fmt.Sprintf("%s/%d runs", name, tc.runs)] && !tc.foreign {
					over = 0.10
				}
				if cov < Coverage-0.05 || cov > Coverage+over {
					t.Errorf("%s: %.1f%% of the true starts fell within the range, want %.0f%% (-5, +%.0f)", tc.what, 100*cov, 100*Coverage, 100*over)
				}
			}
		})
	}
}

// TestHeadOfQueueError: the pod at the head of a queue waits for the first of the
// running pods to end, and its estimate's median error is within 1.25 times that of an
// oracle that knows the runs' true distribution (each running pod's rest drawn 200
// times from the runs longer than it has run), as make bench-estimates asks of it.
// 400 trials of a Budget of 8 pods, in steady state (each running pod a uniform share
// into a run of the truth), 32 runs learned. Smoothing a run, then keeping the draws
// longer than a pod had run, made the rest of a pod near the end of its run as long as
// the kernel is wide: 1.16 and 2.36 times the oracle's error, 2.4 and 1.6 s late.
func TestHeadOfQueueError(t *testing.T) {
	for name, truth := range map[string]func(*rand.Rand) time.Duration{
		"lognormal, median 40 s, σ 0.5": lognormal40,
		"bimodal, 10 s or 60 s":         bimodal,
	} {
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, 51))
			const slots, trials = 8, 400
			var mine, oracle, signed []float64
			for trial := range trials {
				l := NewLearner(0)
				facts := Facts{Namespace: "team-a", OwnerKind: "Job", Owner: "train"}
				for range Window {
					l.Record(facts.Keys(nil), truth(r))
				}
				w := world([]quota.Budget{budget("team-a", "a", fmt.Sprintf("cpu=%d", slots))}, nil, nil)
				var elapsed []time.Duration
				truly := time.Duration(math.MaxInt64)
				for i := range slots {
					d := truth(r)
					e := time.Duration(r.Float64() * float64(d))
					elapsed, truly = append(elapsed, e), min(truly, d-e)
					f := facts
					f.Held = t0.Add(-e)
					w.Running = append(w.Running, Pod{Pod: view(podIn("team-a", fmt.Sprintf("run-%d", i), -600, "cpu=1")), Expect: l.ExpectFacts(&f, nil, t0)})
				}
				w.Waiting = append(w.Waiting, Pod{Pod: view(podIn("team-a", "w-00", 0, "cpu=1").Gated()), Expect: l.ExpectFacts(&facts, nil, t0)})
				s := Simulate(w, Options{Seed: uint64(trial)})[0]
				var firsts []float64
				for range 200 {
					first := math.Inf(1)
					for _, e := range elapsed {
						d := truth(r)
						for d <= e {
							d = truth(r)
						}
						first = math.Min(first, (d - e).Seconds())
					}
					firsts = append(firsts, first)
				}
				slices.Sort(firsts)
				err := s.Median.Sub(t0).Seconds() - truly.Seconds()
				mine, signed = append(mine, math.Abs(err)), append(signed, err)
				oracle = append(oracle, math.Abs(firsts[len(firsts)/2]-truly.Seconds()))
			}
			m, o, sg := median(mine), median(oracle), median(signed)
			t.Logf("median error at the head %.2f s, the oracle's %.2f s (%.2f times); median signed error %+.2f s", m, o, m/o, sg)
			if m > 1.25*o {
				t.Errorf("median error at the head %.2f s, %.2f times the oracle's %.2f s; want at most 1.25 times", m, m/o, o)
			}
		})
	}
}

// median is the median of xs (not empty), which it sorts.
func median(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}
