package estimate

import (
	"math/rand/v2"
	"time"
)

// durations chooses how long each pod runs in one simulation: every duration at its
// center (rng nil: a learned duration's mean for a pod admitted, a running pod's end at
// its median, Expectation.Ends says why), or one draw of each (Duration.draw,
// Expectation.drawEnd). A deadline or a declared duration is that one in every run.
//
// A run draws each workload's spread once (spreadFrom, one per run and workload): the
// runs learned are a sample of the workload's, and a range drawn from them as if they
// were all its runs holds the truth less often than it claims (the workload's mean is
// itself uncertain, and every pod of the queue shares it).
type durations struct {
	rng     *rand.Rand
	spreads map[*fit]spread
}

func drawn(rng *rand.Rand) durations {
	return durations{rng: rng, spreads: map[*fit]spread{}}
}

// of is how long a pod the simulation admits runs.
func (p durations) of(e Expectation) time.Duration {
	if p.rng == nil || e.Source != SourceLearned {
		return e.Center()
	}
	return e.draw(p.rng, p.spreadOf(e.fit))
}

// end is when a pod that holds quota at the world's now ends.
func (p durations) end(e Expectation, now time.Time) time.Time {
	if p.rng == nil {
		median, _, _ := e.Ends(now)
		return median
	}
	return e.drawEnd(now, p.rng, p.spreadOf(e.fit))
}

// spreadOf is this run's spread of the workload whose runs are f.
func (p durations) spreadOf(f *fit) spread {
	if f == nil {
		return spread{scale: 1, factor: 1}
	}
	sp, ok := p.spreads[f]
	if !ok {
		sp = spreadFrom(p.rng, f)
		p.spreads[f] = sp
	}
	return sp
}
