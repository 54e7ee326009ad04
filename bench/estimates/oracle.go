package estimates

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/quota"
)

// oracleDraws is how many workloads Oracle draws per poll.
const oracleDraws = 100

// OraclePod is a pod of the world the oracle plays: the core's view of it, its kind (an
// index of the workload's kinds) and, for a pod that holds quota, since when.
type OraclePod struct {
	Pod   quota.Pod
	Kind  int
	Since time.Time
}

// Oracle is the best estimate anyone can make from durations alone, for the gated pods
// of a world at now (the budgets, the namespaces' labels and every pod that holds quota
// or waits): it knows each kind's true distribution (draw) and the exact world, draws
// every run still to come draws times (a running pod's from its kind's runs longer than
// it has run), plays the world out each time through quotagate's own admission core
// (estimate.Simulate, every run given as a declared duration, so the order is the
// core's: priorities, borrowing in a family), and answers each gated pod's median
// start, as an offset from now, in the order of pods (0 for a pod that holds quota);
// negative for a gated pod the core did not admit in some draw's median. It does not
// know the pods not created yet: where those go ahead (a higher priority arriving),
// an estimate that expects them can do better than it.
func Oracle(now time.Time, budgets []quota.Budget, namespaces map[string]map[string]string, pods []OraclePod, draws int,
	draw func(kind int, r *rand.Rand) time.Duration, r *rand.Rand) []time.Duration {
	out := make([]time.Duration, len(pods))
	var waiting []int
	for i, p := range pods {
		if p.Pod.Gated {
			waiting = append(waiting, i)
		}
	}
	if len(waiting) == 0 || draws <= 0 {
		return out
	}
	starts := make([][]time.Duration, len(waiting))
	for range draws {
		w := estimate.World{Now: now, Budgets: budgets, Namespaces: namespaces}
		for _, p := range pods {
			if p.Pod.Gated {
				w.Waiting = append(w.Waiting, estimate.Pod{Pod: p.Pod, Expect: declared(draw(p.Kind, r), time.Time{})})
				continue
			}
			since := p.Since
			if since.IsZero() || since.After(now) {
				since = now
			}
			w.Running = append(w.Running, estimate.Pod{Pod: p.Pod, Expect: declared(remaining(p.Kind, now.Sub(since), draw, r)+now.Sub(since), since)})
		}
		for i, s := range estimate.Simulate(w, estimate.Options{Draws: 1}) {
			d := time.Duration(-1)
			if s.Known {
				d = max(s.Median.Sub(now), 0)
			}
			starts[i] = append(starts[i], d)
		}
	}
	for i, s := range starts {
		slices.Sort(s)
		out[waiting[i]] = s[len(s)/2]
	}
	return out
}

// declared is an expectation of exactly d from start (zero: from admission), as a
// declared duration is.
func declared(d time.Duration, start time.Time) estimate.Expectation {
	return estimate.Expectation{
		Duration: estimate.Duration{Median: d, Low: d, High: d, Mean: d},
		Source:   estimate.SourceDeclared,
		Start:    start,
	}
}

// remaining draws how much longer a pod of kind that has held its slot for elapsed
// holds it: a run of its kind longer than that, less what it has run; 0 when a hundred
// draws found none (it has outrun its kind: it may end at any moment).
func remaining(kind int, elapsed time.Duration, draw func(int, *rand.Rand) time.Duration, r *rand.Rand) time.Duration {
	for range 100 {
		if d := draw(kind, r); d > elapsed {
			return d - elapsed
		}
	}
	return 0
}
