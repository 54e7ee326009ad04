package estimate

import (
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
	// the real one does. Its clock and flush interval are the simulation's own.
	Core []quota.Option
	// MaxSteps caps the simulated moments (each ends at least one pod, or is a
	// wakeup of the core: a lend hold's end); 0 means DefaultMaxSteps of the world.
	MaxSteps int
	// Horizon is how far ahead it simulates; 0 means DefaultHorizon.
	Horizon time.Duration
	// Done, when closed, stops the simulation at its next step (a simulated moment, a
	// round of the core's decisions, or every thousand pods fed to its core): the result
	// is then incomplete and is to be dropped. The manager closes it when it stops, so
	// that a pass over a long queue does not hold the shutdown, and when a what-if's
	// client goes away or its time is up.
	Done <-chan struct{}
	// Pace, when set, is called at each step, on the simulation's goroutine, before Done
	// is looked at: it may sleep, to bound the share of a CPU the simulation takes (a
	// what-if's, beside the admission loop).
	Pace func()

	// afterAdmit, when set, is called after each simulated moment's admissions, with
	// the simulation's core (the randomized test checks the budgets there).
	afterAdmit func(q *quota.AdmissionQueue)
}

// spread reports whether a pod's duration differs between the central run and the low
// or the high one: when none does, the three runs are the same run, made once.
func (w *World) spread() bool {
	for _, p := range w.Running {
		if e := p.Expect; e.Known() {
			if median, low, high := e.Ends(w.Now); !low.Equal(median) || !high.Equal(median) {
				return true
			}
		}
	}
	for _, p := range w.Waiting {
		if e := p.Expect; e.Known() {
			if c := pickCenter.of(e.Duration); pickLow.of(e.Duration) != c || pickHigh.of(e.Duration) != c {
				return true
			}
		}
	}
	return false
}

// step paces the simulation (Pace) and reports whether Done was closed.
func (o *Options) step() (stopped bool) {
	if o.Pace != nil {
		o.Pace()
	}
	return o.stopped()
}

// feedStep is how many pods a simulation feeds its core between two steps.
const feedStep = 1024

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
// once at most, so 2 × its pods, plus room for the core's wakeups (lend holds).
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
	// Median is when the simulation with every duration at its center (Duration.Center:
	// the mean of learned runs) admits it, the middle of its start; Low
	// and High are the earliest and latest of that and the simulations with every
	// duration at its low and at its high.
	Median, Low, High time.Time
	Unknown           Unknown
	Reason            string
	// Ends is how many pods the central simulation ended before it started (in every
	// budget: an upper bound on those it waits for), and Samples the fewest finished
	// pods behind a learned duration among those ends (0 when none was learned): the
	// more ends and the fewer samples, the less sure.
	Ends, Samples int
	// Basis is what the least trusted learned duration among those ends comes from
	// (Duration.Basis: "durations of 12 runs of Job team-a/train", "no run of Job demo/etl yet; durations
	// of 30 runs of pods in namespace demo"); empty when none was learned.
	Basis string
}

// Simulate estimates when each waiting pod starts: a fresh core is fed the world and
// advanced in simulated time, admitting in its own order and ending each pod at its
// expected end, three times (durations at their center, low and high; once when no pod's
// duration has a range). The result is in the order of w.Waiting; nil when o.Done was
// closed before it was complete.
func Simulate(w World, o Options) []Start {
	median := run(&w, &o, pickCenter)
	low, high := median, median
	if !o.stopped() && w.spread() {
		low = run(&w, &o, pickLow)
		high = run(&w, &o, pickHigh)
	}
	if o.stopped() {
		return nil
	}
	out := make([]Start, len(w.Waiting))
	for i, p := range w.Waiting {
		m := median.pods[i]
		s := Start{Pod: p.Pod.PodRef, Ends: m.ends, Samples: m.samples, Basis: m.basis.basis}
		if !m.started {
			s.Unknown, s.Reason = m.unknown, m.reason
			out[i] = s
			continue
		}
		s.Known, s.Median, s.Low, s.High = true, m.at, m.at, m.at
		if l := low.pods[i]; l.started && l.at.Before(s.Low) {
			s.Low = l.at
		}
		switch h := high.pods[i]; {
		case h.started && h.at.After(s.High):
			s.High = h.at
		case !h.started && high.stopped.After(s.High):
			s.High = high.stopped // it starts no earlier than where that simulation stopped
		}
		out[i] = s
	}
	return out
}
