package estimates

import (
	"math"
	"math/rand/v2"
	"time"
)

// Kind is one kind of Job of the workload: its pods' run times are drawn from a known
// distribution. Every Job of a kind is created with the kind's name as generateName, so
// the manager's Learner groups its pods under one owner key ("Job NS/<kind>").
type Kind struct {
	Name string `json:"name"`
	// Distribution says in words what Draw draws (at scale 1).
	Distribution string `json:"distribution"`
	// Mean is the distribution's mean at scale 1.
	Mean time.Duration              `json:"mean"`
	draw func(r *rand.Rand) float64 // seconds at scale 1
}

// Kinds are the three kinds of the workload, at scale 1: a short one with little
// spread, a long-tailed one and a bimodal one, whose median is no run at all.
var Kinds = []Kind{
	{
		Name:         "uniform",
		Distribution: "uniform, 20 s ± 20% (16 to 24 s)",
		Mean:         20 * time.Second,
		draw:         func(r *rand.Rand) float64 { return 20 * (0.8 + 0.4*r.Float64()) },
	},
	{
		Name:         "lognormal",
		Distribution: "lognormal, median 40 s, σ 0.5 (10th to 90th percentile 21 to 76 s)",
		Mean:         seconds(40 * math.Exp(0.5*0.5/2)),
		draw:         func(r *rand.Rand) float64 { return 40 * math.Exp(0.5*r.NormFloat64()) },
	},
	{
		Name:         "bimodal",
		Distribution: "bimodal, even odds of 10 s or 60 s (each uniform ± 10%)",
		Mean:         35 * time.Second,
		draw: func(r *rand.Rand) float64 {
			mode := 10.0
			if r.IntN(2) == 1 {
				mode = 60
			}
			return mode * (0.9 + 0.2*r.Float64())
		},
	},
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Arrival is one Job of the workload: created At after the run starts, of Kinds[Kind],
// its pod running for Run once started.
type Arrival struct {
	At   time.Duration `json:"at"`
	Kind int           `json:"kind"`
	Run  time.Duration `json:"run"`
}

// Plan draws the workload: pods Jobs of one pod each, of a kind drawn at even odds,
// each with its run time drawn from its kind's distribution times scale (rounded to the
// millisecond, at least minRun). The first 2×slots arrive at once, so the budget of
// slots pods is full and a queue of slots waits from the start; the rest arrive one at
// a time, exponentially spaced at the rate the budget admits on average
// (slots ÷ the kinds' mean run time). On its own that queue drains as often as it
// grows (the first run at default size, seed 1, had 3 pods waiting at the median): the
// benchmark creates a Job early when fewer than slots pods wait (createJobs). The same
// seed draws the same plan.
func Plan(seed uint64, pods, slots int, scale float64) []Arrival {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var mean float64
	for _, k := range Kinds {
		mean += k.Mean.Seconds()
	}
	mean = mean / float64(len(Kinds)) * scale
	gap := mean / float64(slots) // seconds between arrivals, on average
	out := make([]Arrival, 0, pods)
	var at float64
	for i := range pods {
		if i >= 2*slots {
			at += r.ExpFloat64() * gap
		}
		k := r.IntN(len(Kinds))
		run := max(Kinds[k].draw(r)*scale, minRun.Seconds())
		out = append(out, Arrival{
			At:   seconds(at).Round(time.Millisecond),
			Kind: k,
			Run:  seconds(run).Round(time.Millisecond),
		})
	}
	return out
}

// minRun is the shortest run Plan draws: a pod that ends before the estimator's next
// pass is never part of what it estimates.
const minRun = time.Second
