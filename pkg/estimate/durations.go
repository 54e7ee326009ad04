package estimate

import (
	"math"
	"math/rand/v2"
	"time"
)

// durations chooses how long each pod runs in one simulation: every duration at its
// center (rng nil: a learned duration's mean for a pod admitted, a running pod's end at
// its median, Expectation.Ends says why), or one draw of each (Duration.draw,
// Expectation.drawEnd and afterAll). A deadline or a declared duration is that one in every run.
//
// A run draws each workload's spread once (spreadFrom, one per run and workload): the
// runs learned are a sample of the workload's, and a range drawn from them as if they
// were all its runs holds the truth less often than it claims (the workload's mean is
// itself uncertain, and every pod of the queue shares it).
//
// What is unknown of a workload as a whole is drawn once per run and workload
// (workloads), and shared by all its pods: when its durations come from a wider circle
// (its namespace's runs, a budget's), how its runs compare with the circle's, a
// log-normal factor; when its pods have run longer than every run, how much longer
// they run (Expectation.afterAll). Drawn for each pod apart, both averaged out over a
// queue of its pods: a queue of a new workload got a range a few seconds wide from the
// runs of another, and ranges so drawn held the start 61% of the time where they
// claimed 80 (TestCoverage, TestNewWorkloadsRangeHoldsItsStart).
type durations struct {
	rng       *rand.Rand
	spreads   map[*fit]spread
	workloads map[Key]*workloadDraw
}

// workloadDraw is what one run drew for a workload as a whole, each drawn when first
// needed: z, a standard normal (the factor of a wider circle's durations is
// exp(Spread × z)), and u, uniform below gottMax (how much longer its pods run once
// they outlasted every run).
type workloadDraw struct {
	z, u       float64
	hasZ, hasU bool
}

func drawn(rng *rand.Rand) durations {
	return durations{rng: rng, spreads: map[*fit]spread{}, workloads: map[Key]*workloadDraw{}}
}

// of is how long a pod the simulation admits runs.
func (p durations) of(e Expectation) time.Duration {
	if p.rng == nil || e.Source != SourceLearned {
		return e.Center()
	}
	return e.draw(p.rng, p.spreadOf(e.Duration))
}

// end is when a pod that holds quota at the world's now ends.
func (p durations) end(e Expectation, now time.Time) time.Time {
	if p.rng == nil {
		median, _, _ := e.Ends(now)
		return median
	}
	if end, ok := e.drawEnd(now, p.rng, p.spreadOf(e.Duration)); ok {
		return end
	}
	w := p.workload(e.workload)
	if !w.hasU {
		w.u, w.hasU = p.rng.Float64()*gottMax, true
	}
	return e.afterAll(now, w.u)
}

// workload is this run's draws for workload k.
func (p durations) workload(k Key) *workloadDraw {
	w, ok := p.workloads[k]
	if !ok {
		w = &workloadDraw{}
		p.workloads[k] = w
	}
	return w
}

// spreadOf is this run's spread of the durations d: of the runs they are drawn from,
// and, when they come from a wider circle, the factor of d's workload.
func (p durations) spreadOf(d Duration) spread {
	sp := spread{scale: 1, factor: 1}
	if d.fit != nil {
		var ok bool
		if sp, ok = p.spreads[d.fit]; !ok {
			sp = spreadFrom(p.rng, d.fit)
			p.spreads[d.fit] = sp
		}
	}
	if d.Spread > 0 {
		w := p.workload(d.workload)
		if !w.hasZ {
			w.z, w.hasZ = p.rng.NormFloat64(), true
		}
		sp.widen = d.Spread * w.z
	}
	return sp
}

// spread is a workload's durations as one simulation draws them (spreadFrom): a
// resample of its runs, and how all its durations are stretched around the runs' log
// mean (scale) and multiplied (factor); the same for every pod of the workload in that
// simulation. For a workload whose durations come from a wider circle, widen is the
// log of the factor they are widened by in that simulation (Duration.Spread times one
// standard normal draw for the workload, durations.spreadOf).
type spread struct {
	runs          []time.Duration
	scale, factor float64
	widen         float64
}

// spreadFrom draws the spread of the workload whose runs are f for one simulation: the
// runs learned are a sample of the workload's, and a range drawn from them as if they
// were all its runs holds the truth less often than it claims, the less so the fewer
// they are (the workload's mean is itself unsure, and every pod of a queue shares it).
//
// The runs are resampled (a bootstrap: the workload's mean as unsure as its runs say,
// whatever their shape). A bootstrap of a few runs is surer than they are: a resample
// of 3 runs is all one run one time in nine, and ranges drawn so held the true start
// 64 to 71% of the time, of 80 (TestCoverage). So it is widened as the posterior of a
// normal's σ and mean from n samples in log space would widen it (the usual flat
// prior), in the share a bootstrap lacks, about 3/n of the variance (Student's t's
// (n-1)/(n-3) against a bootstrap's (n-1)/n): the resample is stretched around the
// runs' log mean by ((n-1)/χ²(n-1))^(w/2) and brought back to its own mean, then
// multiplied by exp(w × cv × scale × Z / √n), w = √(3/n), cv the runs' coefficient of
// variation: the mean's standard error, which the logs' standard deviation
// overstates for a bimodal workload (its logs spread wider than its mean is unsure,
// and ranges drawn so held the start 88% of the time from 32 runs). From 3 runs, the
// starts of a queue spread as widely as Student's t says; from 32, as a bootstrap
// makes them, give or take (the scale within some 8%, the mean by a third of its
// standard error more).
func spreadFrom(r *rand.Rand, f *fit) spread {
	if f.n < 2 || f.sd == 0 {
		return spread{runs: f.runs, scale: 1, factor: 1}
	}
	b := make([]time.Duration, f.n)
	for i := range b {
		b[i] = f.runs[r.IntN(f.n)]
	}
	var chi2 float64
	for range f.n - 1 {
		z := r.NormFloat64()
		chi2 += z * z
	}
	fn := float64(f.n)
	w := math.Sqrt(float64(MinSamples) / fn)
	scale := math.Pow(float64(f.n-1)/max(chi2, 1e-9), w/2)
	var sum, stretched float64
	for _, d := range b {
		sum += float64(d)
		stretched += math.Exp(f.logMean + (math.Log(float64(max(d, 1)))-f.logMean)*scale)
	}
	shift := f.cv * scale * r.NormFloat64() * w / math.Sqrt(fn)
	return spread{runs: b, scale: scale, factor: sum / stretched * math.Exp(min(shift, maxLogDuration))}
}

// maxLogDuration bounds a drawn duration: e^43 ns, some 150 years (a time.Duration
// holds 292), far past any horizon.
const maxLogDuration = 43

// draw is one duration drawn from d with the workload's spread sp of this simulation
// (spreadFrom): a run picked at random from d's runs (from sp's resample when they are
// all the workload's, not those longer than a running pod has run), stretched and
// multiplied as sp says, smoothed (bandwidth, stretched alike) and widened as sp says
// (by the factor this simulation drew for the workload, when its durations come from a
// wider circle); its Center when nothing was learned.
func (d Duration) draw(r *rand.Rand, sp spread) time.Duration {
	if len(d.runs) == 0 {
		return d.Center()
	}
	run, x := d.pick(r, sp)
	x += sp.widen
	if d.bandwidth > 0 {
		x += d.bandwidth * sp.scale * r.NormFloat64()
	}
	if x == 0 {
		return run // as learned, to the nanosecond
	}
	return scaled(run, x)
}

// drawAfter is one draw of how much longer a pod that has held its quota for elapsed
// runs: a run picked and multiplied as draw does, less elapsed, and that rest smoothed
// (bandwidth); false when the run so multiplied is not longer than elapsed. It is the
// rest that is smoothed, not the run: smoothing the run and keeping the draws longer
// than elapsed made the rest of a pod near the end of its run as long as the kernel is
// wide (a pod 9 s into a run of 10 s, in a workload of 10 s or 60 s runs, was drawn to
// run 3 to 10 s more), and the head of a queue, which waits for the first of them to
// end, late by the same.
func (d Duration) drawAfter(r *rand.Rand, sp spread, elapsed time.Duration) (time.Duration, bool) {
	run, x := d.pick(r, sp)
	if sp.widen != 0 {
		run = scaled(run, sp.widen)
	}
	if run <= elapsed {
		return 0, false
	}
	if d.bandwidth > 0 {
		x += d.bandwidth * r.NormFloat64()
	}
	return scaled(run-elapsed, x), true
}

// pick is a run picked at random from d's runs (from sp's resample when they are all
// the workload's, not those longer than a running pod has run) and the log of the
// factor sp multiplies it by: stretched and multiplied. The wider circle's factor,
// sp.widen, is the callers' to apply: draw to the run, drawAfter to the run before
// elapsed is taken off.
func (d Duration) pick(r *rand.Rand, sp spread) (time.Duration, float64) {
	runs := d.runs
	if d.fit != nil && &runs[0] == &d.fit.runs[0] {
		runs = sp.runs // all the workload's runs: this simulation's resample of them
	}
	run := runs[r.IntN(len(runs))]
	var x float64 // the log of the factor run is multiplied by
	if d.fit != nil && sp.scale != 1 {
		x += (math.Log(float64(max(run, 1))) - d.fit.logMean) * (sp.scale - 1)
	}
	if sp.factor != 1 {
		x += math.Log(sp.factor)
	}
	return run, x
}

// scaled is d multiplied by e^x, at most e^maxLogDuration.
func scaled(d time.Duration, x float64) time.Duration {
	return time.Duration(min(float64(d)*math.Exp(x), math.Exp(maxLogDuration)))
}
