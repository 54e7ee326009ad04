package estimate

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/quotagate/quotagate/pkg/quota"
)

// World is what a simulation starts from: the core's inputs at Now.
type World struct {
	Now time.Time
	// Budgets and Namespaces (labels by name) as the manager feeds them to its core.
	Budgets    []quota.Budget
	Namespaces map[string]map[string]string
	// Flavors are the Flavor objects, for budgets with spec.flavors.
	Flavors []quota.Flavor
	// Running are the pods that hold quota, with when each is expected to end: the
	// running pods and those the real core admitted whose ungate it has not seen yet,
	// all with Gated false (a pod first seen ungated is charged to the budgets that
	// cover it, or those its admitted-by annotation names). Waiting are the gated pods,
	// with how long each is expected to run once admitted.
	Running []Pod
	Waiting []Pod
	// Changes are what the budgets' windows will make of them after Now, in time order:
	// from At on, the budget named Budget.Key is Budget (its effective spec). A
	// simulation applies each as its clock reaches it.
	Changes []BudgetChange
	// Arrivals are the streams of pods still to be created (Arrivals.Streams, each with
	// its Expect known): each draw of a simulation creates pods from them, at random
	// moments as often as they came before, up to each stream's Until.
	Arrivals []Stream
}

// BudgetChange is a budget's effective spec from At on (a window that opens or ends).
type BudgetChange struct {
	At     time.Time
	Budget quota.Budget
}

// Pod is a pod's view for the core and its Expectation (Learner.Expect).
type Pod struct {
	Pod    quota.Pod
	Expect Expectation
}

// Options bound a simulation.
type Options struct {
	// Core are the options the manager builds its core with (WithLendHold,
	// WithPriorityCeiling, WithHoldUncovered): the simulation's core must decide as
	// the real one does. Its clock, flush interval and usage write interval are the
	// simulation's own.
	Core []quota.Option
	// MaxSteps caps the simulated moments (each ends at least one pod, or is a
	// wakeup of the core: a lend hold's end, an hour budget's period end or step of
	// decay); 0 means DefaultMaxSteps of the world.
	MaxSteps int
	// Horizon is how far ahead it simulates; 0 means DefaultHorizon.
	Horizon time.Duration
	// Done, when closed, stops the simulation at its next step (a simulated moment, a
	// round of the core's decisions, or every feedStep pods fed to its core): the result
	// is then incomplete and is to be dropped. The manager closes it when it stops, so
	// that a pass over a long queue does not hold the shutdown, and when a what-if's
	// client goes away or its time is up.
	Done <-chan struct{}
	// Draws is how many runs Simulate draws (rounded up to 10k-1: 9, 19, 29...); 0
	// means DefaultDraws (WhatIfDraws in Suppose). Seed seeds them: a world simulated twice with one seed gives
	// the same starts.
	Draws int
	Seed  uint64
	// Pace, when set, is called at each step, on the simulation's goroutine, before Done
	// is looked at: it may sleep, to bound the share of a CPU the simulation takes (a
	// what-if's, beside the admission loop), or to yield the CPU while the manager
	// admits (the estimator's passes: pacing.Yield in pkg/quota/controller/internal/pacing).
	Pace func()

	// afterAdmit, when set, is called after each simulated moment's admissions, with
	// the simulation's core (the randomized test checks the budgets there).
	afterAdmit func(q *quota.AdmissionQueue)
	// only, when positive, is how many of the world's last waiting pods are asked
	// about (Suppose's added pods): a run stops once they all started, and the starts
	// of the others are not to be read.
	only int
}

// spread reports whether any pod's duration is drawn (learned runs): when none is,
// every run is the same run, made once.
func (w *World) spread() bool {
	if len(w.Arrivals) > 0 {
		return true
	}
	for _, ps := range [][]Pod{w.Running, w.Waiting} {
		for _, p := range ps {
			if p.Expect.Source == SourceLearned && len(p.Expect.runs) > 0 {
				return true
			}
		}
	}
	return false
}

// Coverage is the share of starts an estimate's range is meant to hold: Low and High
// are the 10th and the 90th percentiles of the drawn starts.
const Coverage = 0.8

// DefaultDraws is how many runs Simulate draws by default: 19 for a world of up to
// 2,000 pods, 9 above (each run costs a simulation of the world). Their starts' 2nd,
// 10th and 18th (of 9: 1st, 5th, 9th) are Low, Median and High: the k-th of n draws
// is below a new draw from the same distribution with odds k/(n+1), so the range
// holds a start drawn like them 80% of the time, however few the draws.
func DefaultDraws(w *World) int {
	if len(w.Running)+len(w.Waiting) <= 2000 {
		return 19
	}
	return WhatIfDraws
}

// WhatIfDraws is how many runs Suppose draws by default, whatever the world's size: the
// fewest whose 1st and 9th starts still hold a start drawn like them 80% of the time
// (DefaultDraws). A what-if answers a request that waits for it, so it takes half the
// CPU of 19 draws; its median is the 5th of 9 starts instead of the 10th of 19, some 4%
// further off (TestCoverage).
const WhatIfDraws = 9

// step paces the simulation (Pace) and reports whether Done was closed.
func (o *Options) step() (stopped bool) {
	if o.Pace != nil {
		o.Pace()
	}
	return o.stopped()
}

// feedStep is how many pods a simulation feeds its core between two steps: few, so
// that a Pace that yields to admission is asked often while a large world is fed.
const feedStep = 256

// stopped reports whether Done was closed.
func (o *Options) stopped() bool {
	select {
	case <-o.Done:
		return true
	default:
		return false
	}
}

// DefaultHorizon is how far ahead a simulation looks by default: a pod that would start
// later is Unknown (UnknownCapped).
const DefaultHorizon = 365 * 24 * time.Hour

// DefaultMaxSteps is the default cap on simulated moments: every pod of the world ends
// once at most, so 2 × its pods, plus room for the core's wakeups (lend holds, hour
// budgets' periods and steps of decay: a year of Days is 365).
func DefaultMaxSteps(w *World) int { return 2*(len(w.Running)+len(w.Waiting)) + 1024 }

// Unknown says why a waiting pod's start cannot be estimated.
type Unknown string

const (
	// UnknownNoHistory: it waits for room that pods with no expected end hold (no
	// deadline, no declared duration, fewer than MinSamples finished pods like them).
	UnknownNoHistory Unknown = "NoHistory"
	// UnknownBudgetClosed: a budget that covers it admits nothing (closed, or its spec
	// or parent has a problem).
	UnknownBudgetClosed Unknown = "BudgetClosed"
	// UnknownNeverFits: it asks for more than a covering budget's hard, or leaves unset
	// what the budget tracks.
	UnknownNeverFits Unknown = "NeverFits"
	// UnknownBlocked: it waits for something no pod's end brings (its group's other
	// members, its namespace, a ResourceClaim, a budget that covers it).
	UnknownBlocked Unknown = "Blocked"
	// UnknownCapped: it would start beyond the horizon, or after more steps than the
	// simulation may take.
	UnknownCapped Unknown = "Capped"
)

// Start is a waiting pod's estimated start.
type Start struct {
	Pod quota.PodRef
	// Known: Median, Low and High are set; otherwise Unknown and Reason say why.
	Known bool
	// Median is the middle of its starts over the draws (Simulate), Low and High their
	// 10th and 90th percentiles: a range meant to hold the start Coverage of the time.
	Median, Low, High time.Time
	Unknown           Unknown
	Reason            string
	// Ends is how many pods the draw of its Median ended before it started (in every
	// budget: an upper bound on those it waits for), and Samples the fewest finished
	// pods behind a learned duration among those ends (0 when none was learned): the
	// more ends and the fewer samples, the less sure.
	Ends, Samples int
	// Head is true for a pod first in the queue of a budget that covers it at the
	// world's Now (or held by no budget): the next its budget admits.
	Head bool
	// Basis is what the least trusted learned duration among those ends comes from
	// (Duration.Basis: "durations of 12 runs of Job team-a/train", "no run of Job demo/etl yet; durations
	// of 30 runs of pods in namespace demo"); empty when none was learned.
	Basis string
}

// Simulate estimates when each waiting pod starts: a fresh core is fed the world and
// advanced in simulated time, admitting in its own order and ending each pod at its
// expected end, o.Draws times, each with every learned duration drawn from its runs
// (durations); once when no pod's duration is learned. A pod's Median, Low and High
// are the middle, the 10th and the 90th percentiles of its starts in the draws. The
// result is in the order of w.Waiting; nil when o.Done was closed before it was
// complete.
func Simulate(w World, o Options) []Start {
	if !w.spread() {
		r := run(&w, &o, durations{}, true)
		if o.stopped() {
			return nil
		}
		return starts(&w, []result{r})
	}
	k := o.Draws
	if k <= 0 {
		k = DefaultDraws(&w)
	}
	k = (k+10)/10*10 - 1 // 10m - 1
	results := make([]result, k)
	for i := range k {
		results[i] = run(&w, &o, drawn(rand.New(rand.NewPCG(o.Seed, uint64(i)))), i == 0)
		if o.stopped() {
			return nil
		}
	}
	return starts(&w, results)
}

// starts reads each waiting pod's Start off the runs (10m - 1 of them): its m-th,
// 5m-th and 9m-th earliest start are Low, Median and High. A pod that does not start
// in the run of its median is Unknown, with that run's reason; one that starts in that
// run but not in the one of its High starts no earlier than where that run stopped.
func starts(w *World, results []result) []Start {
	m := (len(results) + 1) / 10
	if m == 0 {
		m = 1
	}
	out := make([]Start, len(w.Waiting))
	type at struct {
		t   time.Time
		run int
	}
	byTime := make([]at, 0, len(results))
	for i, p := range w.Waiting {
		byTime = byTime[:0]
		for r := range results {
			if o := results[r].pods[i]; o.started {
				byTime = append(byTime, at{o.at, r})
			} else {
				byTime = append(byTime, at{results[r].stopped, r})
			}
		}
		slices.SortStableFunc(byTime, func(a, b at) int {
			sa, sb := results[a.run].pods[i].started, results[b.run].pods[i].started
			switch {
			case sa != sb && !sa:
				return 1 // not started: after every start
			case sa != sb:
				return -1
			}
			return a.t.Compare(b.t)
		})
		pick := func(k int) (at, outcome) {
			if len(results) == 1 {
				k = 1
			}
			a := byTime[k-1]
			return a, results[a.run].pods[i]
		}
		med, mo := pick(5 * m)
		s := Start{Pod: p.Pod.PodRef, Ends: mo.ends, Samples: mo.samples, Basis: mo.basis.basisFor(p.Pod.Namespace), Head: results[0].heads[p.Pod.UID]}
		if !mo.started {
			s.Unknown, s.Reason = mo.unknown, mo.reason
			out[i] = s
			continue
		}
		low, _ := pick(m)
		high, _ := pick(9 * m)
		s.Known, s.Median, s.Low, s.High = true, med.t, low.t, high.t
		out[i] = s
	}
	return out
}

// Record is a budget's track record of estimates (the manager keeps it): of the last
// Pods admitted with a known first estimate since Since, the median of their first
// estimates' absolute errors, and how many were admitted within their first
// estimate's range.
type Record struct {
	Budget      quota.BudgetKey
	Pods        int
	MedianError time.Duration
	Within      int
	Since       time.Time
}
