package estimate

import (
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
