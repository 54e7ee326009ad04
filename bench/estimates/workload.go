package estimates

import (
	"math"
	"math/rand/v2"
	"time"
)

// Kind is one kind of Job of a workload: its pods' run times are drawn from a known
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

var (
	uniform = Kind{
		Name:         "uniform",
		Distribution: "uniform, 20 s ± 20% (16 to 24 s)",
		Mean:         20 * time.Second,
		draw:         func(r *rand.Rand) float64 { return 20 * (0.8 + 0.4*r.Float64()) },
	}
	lognormal = Kind{
		Name:         "lognormal",
		Distribution: "lognormal, median 40 s, σ 0.5 (10th to 90th percentile 21 to 76 s)",
		Mean:         seconds(40 * math.Exp(0.5*0.5/2)),
		draw:         func(r *rand.Rand) float64 { return 40 * math.Exp(0.5*r.NormFloat64()) },
	}
	bimodal = Kind{
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
	}
	// train and etl are the demo's two workloads of unequal length.
	train = Kind{
		Name:         "train",
		Distribution: "lognormal, median 60 s, σ 0.3 (10th to 90th percentile 41 to 88 s)",
		Mean:         seconds(60 * math.Exp(0.3*0.3/2)),
		draw:         func(r *rand.Rand) float64 { return 60 * math.Exp(0.3*r.NormFloat64()) },
	}
	etl = Kind{
		Name:         "etl",
		Distribution: "uniform, 12 s ± 25% (9 to 15 s)",
		Mean:         12 * time.Second,
		draw:         func(r *rand.Rand) float64 { return 12 * (0.75 + 0.5*r.Float64()) },
	}
)

// Kinds are the three kinds of the FIFO workload, at scale 1: a short one with little
// spread, a long-tailed one and a bimodal one, whose median is no run at all.
var Kinds = []Kind{uniform, lognormal, bimodal}

// Priorities of the workloads' pods (their PriorityClasses' values).
const (
	Low  int32 = 0
	High int32 = 1000
)

// BudgetSpec is one Budget of a workload, in a namespace of its own: it admits Slots
// pods of 1 CPU, and Borrow more by borrowing from its siblings under the workload's
// parent (spec.borrowingLimit; 0: none).
type BudgetSpec struct {
	Name   string `json:"name"`
	Slots  int    `json:"slots"`
	Borrow int    `json:"borrow,omitempty"`
}

// Stream is one kind of Job arriving into one budget at one priority: Share of the
// arrivals from the From-th Job of the plan on (0: from the start; a stream that starts
// later is a new workload appearing mid-run, with no run of its own yet).
type Stream struct {
	Kind     int     `json:"kind"`
	Budget   int     `json:"budget"`
	Priority int32   `json:"priority"`
	Share    float64 `json:"share"`
	From     int     `json:"from,omitempty"`
}

// Workload is what one measurement replays: its kinds of Jobs, its budgets (under a
// ClusterBudget parent of Family pods when Family is not 0) and the streams of Jobs
// into them.
type Workload struct {
	Name string `json:"name"`
	// About says in a sentence what it tests.
	About   string       `json:"about"`
	Kinds   []Kind       `json:"kinds"`
	Budgets []BudgetSpec `json:"budgets"`
	Family  int          `json:"family,omitempty"`
	Streams []Stream     `json:"streams"`
	// Harder is set for the workloads where position × mean is expected to fail:
	// quotagate's median error must be Harder-target times smaller than the baseline's.
	Harder bool `json:"harder,omitempty"`
}

// Workloads are the three workloads make bench-estimates judges, for a run of pods
// Jobs each (the new workload of "family" appears at 40% of them).
func Workloads(pods int) []Workload {
	return []Workload{
		{
			Name:    "fifo",
			About:   "three kinds of Jobs at one priority into one Budget, in order (the first workload)",
			Kinds:   Kinds,
			Budgets: []BudgetSpec{{Name: "budget", Slots: 8}},
			Streams: []Stream{{Kind: 0, Share: 1}, {Kind: 1, Share: 1}, {Kind: 2, Share: 1}},
		},
		{
			Name: "mix",
			About: "the demo's mix: long train Jobs at low priority and short etl Jobs at high priority into one Budget, " +
				"the etl Jobs arriving while train pods wait and going ahead of them",
			Kinds:   []Kind{train, etl},
			Budgets: []BudgetSpec{{Name: "budget", Slots: 8}},
			Streams: []Stream{{Kind: 0, Priority: Low, Share: 0.5}, {Kind: 1, Priority: High, Share: 0.5}},
			Harder:  true,
		},
		{
			Name: "family",
			About: "two Budgets of 4 pods under a ClusterBudget of 8, each able to borrow 4 from the other, with team-a " +
				"busier than team-b; from 40% of the Jobs on, etl Jobs (a workload never seen before) arrive in team-b",
			Kinds:   []Kind{uniform, lognormal, etl},
			Budgets: []BudgetSpec{{Name: "team-a", Slots: 4, Borrow: 4}, {Name: "team-b", Slots: 4, Borrow: 4}},
			Family:  8,
			Streams: []Stream{
				{Kind: 0, Budget: 0, Share: 0.35},
				{Kind: 1, Budget: 0, Share: 0.35},
				{Kind: 1, Budget: 1, Share: 0.15},
				{Kind: 2, Budget: 1, Share: 0.3, From: pods * 2 / 5},
			},
			Harder: true,
		},
	}
}

// slots is how many pods the workload's budgets admit at once, all together.
func (w *Workload) slots() int {
	if w.Family > 0 {
		return w.Family
	}
	n := 0
	for _, b := range w.Budgets {
		n += b.Slots
	}
	return n
}

// initial are the names of the kinds that arrive from the start: the run is judged
// once each has had its warm-up ends; a kind that appears later is judged from its
// first pod, as the new workload it is.
func (w *Workload) initial() []string {
	var out []string
	seen := map[int]bool{}
	for _, s := range w.Streams {
		if s.From == 0 && !seen[s.Kind] {
			seen[s.Kind] = true
			out = append(out, w.Kinds[s.Kind].Name)
		}
	}
	return out
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Arrival is one Job of a workload: created At after the run starts, of Kinds[Kind],
// into Budgets[Budget] at Priority, its pod running for Run once started.
type Arrival struct {
	At       time.Duration `json:"at"`
	Kind     int           `json:"kind"`
	Budget   int           `json:"budget,omitempty"`
	Priority int32         `json:"priority,omitempty"`
	Run      time.Duration `json:"run"`
}

// Plan draws the workload: pods Jobs of one pod each, of a stream drawn by its share
// among those that have started, each with its run time drawn from its kind's
// distribution times scale (rounded to the millisecond, at least minRun). The first
// 2×slots arrive at once, so the budgets are full and a queue waits from the start;
// the rest arrive one at a time, exponentially spaced at the rate the budgets admit on
// average (slots ÷ the streams' mean run time). On its own that queue drains as often
// as it grows (the first run at default size, seed 1, had 3 pods waiting at the
// median): the benchmark creates a Job early when fewer than slots pods wait
// (createJobs). The same seed draws the same plan.
func Plan(w Workload, seed uint64, pods int, scale float64) []Arrival {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	slots := w.slots()
	var mean, shares float64
	for _, s := range w.Streams {
		mean += s.Share * w.Kinds[s.Kind].Mean.Seconds()
		shares += s.Share
	}
	mean = mean / shares * scale
	gap := mean / float64(slots) // seconds between arrivals, on average
	out := make([]Arrival, 0, pods)
	var at float64
	for i := range pods {
		if i >= 2*slots {
			at += r.ExpFloat64() * gap
		}
		s := pick(w.Streams, i, r)
		run := max(w.Kinds[s.Kind].draw(r)*scale, minRun.Seconds())
		out = append(out, Arrival{
			At:       seconds(at).Round(time.Millisecond),
			Kind:     s.Kind,
			Budget:   s.Budget,
			Priority: s.Priority,
			Run:      seconds(run).Round(time.Millisecond),
		})
	}
	return out
}

// pick draws the stream of the i-th Job: one of those started by then, by share.
func pick(streams []Stream, i int, r *rand.Rand) Stream {
	var total float64
	for _, s := range streams {
		if s.From <= i {
			total += s.Share
		}
	}
	x := r.Float64() * total
	for _, s := range streams {
		if s.From > i {
			continue
		}
		if x < s.Share {
			return s
		}
		x -= s.Share
	}
	return streams[0]
}

// minRun is the shortest run Plan draws: a pod that ends before the estimator's next
// pass is never part of what it estimates.
const minRun = time.Second
