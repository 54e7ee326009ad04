package estimate

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/quota"
)

// The world's pods: name is the UID too; created counts seconds from t0.
func podIn(ns, name string, created int, req string) *podtest.Builder {
	return podtest.New(name).NS(ns).UID(name).At(t0).Created(created).Container("main", "").Req(req)
}

func view(b *podtest.Builder) quota.Pod { return quota.NewPod(b.Obj(), v1alpha1.SchedulingGate, t0) }

// runs is an expectation of d: declared, or, when spread gives two more, learned from
// three runs (spread[0], d, spread[1]) that a simulation draws from.
func runs(d time.Duration, spread ...time.Duration) Expectation {
	if len(spread) == 2 {
		return learnedRuns(spread[0], d, spread[1])
	}
	return Expectation{Source: SourceDeclared, Duration: Duration{Median: d, Mean: d, Low: d, High: d}}
}

// learnedRuns is the expectation a Learner gives a workload of these runs.
func learnedRuns(ds ...time.Duration) Expectation {
	l := NewLearner(0)
	keys := KeysOf(podtest.New("kind").NS("team-a").Obj(), nil)
	for _, d := range ds {
		l.Record(keys, d)
	}
	d, ok := l.Estimate(keys)
	if !ok {
		panic("fewer than MinSamples runs")
	}
	return Expectation{Source: SourceLearned, Duration: d}
}

// running: a pod that holds req since t0 and ends after d.
func running(ns, name, req string, e Expectation) Pod {
	e.Start = t0
	return Pod{Pod: view(podIn(ns, name, -60, req)), Expect: e}
}

// waiting: a gated pod that runs for e once admitted.
func waiting(b *podtest.Builder, e Expectation) Pod { return Pod{Pod: view(b.Gated()), Expect: e} }

func budget(ns, name, hard string) quota.Budget {
	return quota.Budget{Key: quota.BudgetKey{Namespace: ns, Name: name}, Hard: podtest.ParseList(hard)}
}

func world(budgets []quota.Budget, run, wait []Pod) World {
	ns := map[string]map[string]string{}
	for _, n := range []string{"team-a", "team-b"} {
		ns[n] = map[string]string{v1alpha1.EnabledLabel: "true"}
	}
	return World{Now: t0, Budgets: budgets, Namespaces: ns, Running: run, Waiting: wait}
}

// got is a start as the tests compare it: minutes after t0, or why unknown.
type got struct {
	Median, Low, High float64 // minutes after t0
	Unknown           Unknown
	Reason            string // a part of the reason
}

func summarize(s Start, reasonPart string) got {
	if !s.Known {
		g := got{Unknown: s.Unknown}
		if reasonPart != "" && strings.Contains(s.Reason, reasonPart) {
			g.Reason = reasonPart
		} else {
			g.Reason = s.Reason
		}
		return g
	}
	m := func(t time.Time) float64 { return t.Sub(t0).Minutes() }
	return got{Median: m(s.Median), Low: m(s.Low), High: m(s.High)}
}

func TestSimulate(t *testing.T) {
	min := time.Minute
	strict := budget("team-a", "a", "cpu=4")
	strict.Strategy = v1alpha1.StrictFIFO
	closed := budget("team-a", "a", "cpu=4")
	closed.State = v1alpha1.StateClosed
	family := func(reclaim v1alpha1.ReclaimPolicy) []quota.Budget {
		a, b := budget("team-a", "a", "cpu=2"), budget("team-b", "b", "cpu=2")
		a.Parent, b.Parent = "org", "org"
		a.BorrowingLimit = podtest.ParseList("cpu=2")
		b.Reclaim = reclaim
		return []quota.Budget{{Key: quota.BudgetKey{Name: "org"}, Hard: podtest.ParseList("cpu=100")}, a, b}
	}
	for name, tc := range map[string]struct {
		w       World
		reasons map[string]string // a part of the reason of unknown pods
		want    map[string]got
	}{
		"best effort: the small pod goes first, the big one when room is freed": {
			w: world([]quota.Budget{budget("team-a", "a", "cpu=4")},
				[]Pod{running("team-a", "r", "cpu=3", runs(10*min))},
				[]Pod{waiting(podIn("team-a", "big", 1, "cpu=4"), runs(10*min)), waiting(podIn("team-a", "small", 2, "cpu=1"), runs(5*min))}),
			want: map[string]got{"big": {Median: 10, Low: 10, High: 10}, "small": {}},
		},
		"start rules: a not-before pod starts at its time, a later pod takes the room before it": {
			w: world([]quota.Budget{budget("team-a", "a", "cpu=4")}, nil,
				[]Pod{waiting(podIn("team-a", "night", 1, "cpu=4").Annotation(v1alpha1.NotBeforeAnnotation, t0.Add(30*min).Format(time.RFC3339)), runs(10*min)),
					waiting(podIn("team-a", "day", 2, "cpu=4"), runs(10*min))}),
			want: map[string]got{"night": {Median: 30, Low: 30, High: 30}, "day": {}},
		},
		"strict FIFO: the small pod waits behind the big one": {
			w: world([]quota.Budget{strict},
				[]Pod{running("team-a", "r", "cpu=3", runs(10*min))},
				[]Pod{waiting(podIn("team-a", "big", 1, "cpu=4"), runs(10*min)), waiting(podIn("team-a", "small", 2, "cpu=1"), runs(5*min))}),
			want: map[string]got{"big": {Median: 10, Low: 10, High: 10}, "small": {Median: 20, Low: 20, High: 20}},
		},
		"priorities: the later pod of higher priority goes first": {
			w: world([]quota.Budget{budget("team-a", "a", "cpu=2")},
				[]Pod{running("team-a", "r", "cpu=2", runs(10*min))},
				[]Pod{waiting(podIn("team-a", "low", 1, "cpu=2"), runs(10*min)), waiting(podIn("team-a", "high", 2, "cpu=2").Priority(100), runs(10*min))}),
			want: map[string]got{"high": {Median: 10, Low: 10, High: 10}, "low": {Median: 20, Low: 20, High: 20}},
		},
		"borrowing: a borrows what b leaves idle": {
			w: world(family(v1alpha1.ReclaimNever), nil, []Pod{
				waiting(podIn("team-a", "a1", 1, "cpu=2"), runs(10*min)),
				waiting(podIn("team-a", "a2", 2, "cpu=2"), runs(20*min)),
				waiting(podIn("team-a", "a3", 3, "cpu=2"), runs(10*min)),
				waiting(podIn("team-b", "b1", 4, "cpu=2"), runs(10*min)),
			}),
			// a1 and a2 take a's 2 and b's 2; b1 waits for b's quota back (a1's end),
			// a3 then for a's own (a2's end).
			want: map[string]got{"a1": {}, "a2": {}, "b1": {Median: 10, Low: 10, High: 10}, "a3": {Median: 20, Low: 20, High: 20}},
		},
		"borrowing with reclaim: b takes its quota back once its preemption cooldown ends": {
			w: world(family(v1alpha1.ReclaimAny),
				[]Pod{running("team-a", "r1", "cpu=2", runs(30*min)), running("team-a", "r2", "cpu=2", runs(30*min))},
				[]Pod{waiting(podIn("team-b", "b1", 4, "cpu=2"), runs(10*min))}),
			// The simulation counts every pod's cooldown from its own start (30s).
			want: map[string]got{"b1": {Median: 0.5, Low: 0.5, High: 0.5}},
		},
		"a group starts all together": {
			w: world([]quota.Budget{budget("team-a", "a", "cpu=4")},
				[]Pod{running("team-a", "r", "cpu=2", runs(10*min))},
				[]Pod{
					waiting(podIn("team-a", "g1", 1, "cpu=1").Group("g", 3), runs(10*min)),
					waiting(podIn("team-a", "g2", 1, "cpu=1").Group("g", 3), runs(10*min)),
					waiting(podIn("team-a", "g3", 1, "cpu=1").Group("g", 3), runs(10*min)),
					waiting(podIn("team-a", "solo", 2, "cpu=1"), runs(30*min)),
				}),
			// solo fits at once; the group needs 3 of the 4 and gets them when r ends.
			want: map[string]got{"g1": {Median: 10, Low: 10, High: 10}, "g2": {Median: 10, Low: 10, High: 10}, "g3": {Median: 10, Low: 10, High: 10}, "solo": {}},
		},
		"an incomplete group: unknown, blocked": {
			w: world([]quota.Budget{budget("team-a", "a", "cpu=4")}, nil, []Pod{
				waiting(podIn("team-a", "g1", 1, "cpu=1").Group("g", 3), runs(min)),
				waiting(podIn("team-a", "g2", 1, "cpu=1").Group("g", 3), runs(min)),
			}),
			reasons: map[string]string{"g1": "group", "g2": "group"},
			want:    map[string]got{"g1": {Unknown: UnknownBlocked, Reason: "group"}, "g2": {Unknown: UnknownBlocked, Reason: "group"}},
		},
		"a closed budget: unknown": {
			w:       world([]quota.Budget{closed}, nil, []Pod{waiting(podIn("team-a", "w", 1, "cpu=1"), runs(min))}),
			reasons: map[string]string{"w": "is Closed"},
			want:    map[string]got{"w": {Unknown: UnknownBudgetClosed, Reason: "is Closed"}},
		},
		"a pod that never fits: unknown": {
			w:       world([]quota.Budget{budget("team-a", "a", "cpu=2")}, nil, []Pod{waiting(podIn("team-a", "w", 1, "cpu=3"), runs(min))}),
			reasons: map[string]string{"w": "cpu"},
			want:    map[string]got{"w": {Unknown: UnknownNeverFits, Reason: "cpu"}},
		},
		"no history for what it waits behind: unknown": {
			w: world([]quota.Budget{budget("team-a", "a", "cpu=2")},
				[]Pod{running("team-a", "r", "cpu=2", runs(10*min))},
				[]Pod{waiting(podIn("team-a", "w1", 1, "cpu=2"), Expectation{}), waiting(podIn("team-a", "w2", 2, "cpu=2"), runs(min))}),
			reasons: map[string]string{"w2": "no expected end"},
			want:    map[string]got{"w1": {Median: 10, Low: 10, High: 10}, "w2": {Unknown: UnknownNoHistory, Reason: "no expected end"}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			starts := Simulate(tc.w, Options{})
			have := map[string]got{}
			for _, s := range starts {
				have[s.Pod.Name] = summarize(s, tc.reasons[s.Pod.Name])
			}
			if diff := cmp.Diff(tc.want, have); diff != "" {
				t.Errorf("starts (-want +got):\n%s", diff)
			}
		})
	}
}

// The bounds: a start beyond the horizon, or after more steps than allowed, is unknown.
func TestSimulateBounds(t *testing.T) {
	w := world([]quota.Budget{budget("team-a", "a", "cpu=1")},
		[]Pod{running("team-a", "r", "cpu=1", runs(2*time.Hour))},
		[]Pod{waiting(podIn("team-a", "w1", 1, "cpu=1"), runs(time.Minute)), waiting(podIn("team-a", "w2", 2, "cpu=1"), runs(time.Minute))})
	for name, o := range map[string]Options{
		"horizon": {Horizon: time.Hour},
		"steps":   {MaxSteps: 1},
	} {
		t.Run(name, func(t *testing.T) {
			starts := Simulate(w, o)
			last := starts[len(starts)-1]
			if last.Known || last.Unknown != UnknownCapped {
				t.Errorf("w2: %+v, want unknown (%s)", last, UnknownCapped)
			}
		})
	}
	// Unbounded, both start: w1 when r ends, w2 a minute later.
	starts := Simulate(w, Options{})
	if !starts[1].Known || starts[1].Median.Sub(t0) != 2*time.Hour+time.Minute || starts[1].Ends != 2 {
		t.Errorf("w2: %+v, want a start 2h1m after t0 after 2 ends", starts[1])
	}
}

// Samples is the fewest samples behind a learned end the pod waited for.
func TestSimulateSamples(t *testing.T) {
	w := world([]quota.Budget{budget("team-a", "a", "cpu=1")},
		[]Pod{running("team-a", "r", "cpu=1", runs(10*time.Minute, 5*time.Minute, 20*time.Minute))},
		[]Pod{waiting(podIn("team-a", "w", 1, "cpu=1"), runs(time.Minute))})
	s := Simulate(w, Options{})[0]
	if s.Ends != 1 || s.Samples != 3 {
		t.Errorf("Ends %d, Samples %d; want 1 and 3", s.Ends, s.Samples)
	}
}

// The core's wakeups are simulated moments too: quota a lender frees is held for its
// own pods (WithLendHold) before a sibling borrows it.
func TestSimulateLendHold(t *testing.T) {
	a, b := budget("team-a", "a", "cpu=2"), budget("team-b", "b", "cpu=2")
	a.Parent, b.Parent, a.BorrowingLimit = "org", "org", podtest.ParseList("cpu=2")
	budgets := []quota.Budget{{Key: quota.BudgetKey{Name: "org"}, Hard: podtest.ParseList("cpu=100")}, a, b}
	w := world(budgets,
		[]Pod{running("team-a", "ar", "cpu=2", runs(time.Hour)), running("team-b", "br", "cpu=2", runs(10*time.Minute))},
		[]Pod{waiting(podIn("team-a", "a1", 1, "cpu=2"), runs(time.Minute))})
	for hold, want := range map[time.Duration]time.Duration{0: 10 * time.Minute, 5 * time.Second: 10*time.Minute + 5*time.Second} {
		s := Simulate(w, Options{Core: []quota.Option{quota.WithLendHold(hold)}})[0]
		if !s.Known || s.Median.Sub(t0) != want {
			t.Errorf("lend hold %v: a1 starts %v after t0 (%+v), want %v", hold, s.Median.Sub(t0), s, want)
		}
	}
}

// TestSimulateOnFlavors: a budget with quota on two flavors; a waiting pod starts when
// the first of them frees, on whichever that is; with one of them missing, never.
func TestSimulateOnFlavors(t *testing.T) {
	b := quota.Budget{Key: quota.BudgetKey{Namespace: "team-a", Name: "gpus"}, Flavors: []quota.FlavorQuota{
		{Name: "h100", Hard: podtest.ParseList("nvidia.com/gpu=1")},
		{Name: "a100", Hard: podtest.ParseList("nvidia.com/gpu=1")},
	}}
	onH100 := running("team-a", "on-h100", "nvidia.com/gpu=1", runs(30*time.Minute))
	onH100.Pod.NodeSelector = map[string]string{"gpu": "h100"}
	onA100 := running("team-a", "on-a100", "nvidia.com/gpu=1", runs(10*time.Minute))
	onA100.Pod.NodeSelector = map[string]string{"gpu": "a100"}
	w := world([]quota.Budget{b}, []Pod{onH100, onA100}, []Pod{waiting(podIn("team-a", "next", 1, "nvidia.com/gpu=1"), runs(time.Hour))})
	w.Flavors = []quota.Flavor{
		{Name: "h100", NodeLabels: map[string]string{"gpu": "h100"}},
		{Name: "a100", NodeLabels: map[string]string{"gpu": "a100"}},
	}
	starts := Simulate(w, Options{})
	if diff := cmp.Diff(got{Median: 10, Low: 10, High: 10}, summarize(starts[0], "")); diff != "" {
		t.Errorf("next starts when a100 frees (-want +got):\n%s", diff)
	}
	// A budget that names a Flavor that does not exist admits nothing (FlavorNotFound,
	// docs/budgets.md): its pods' starts are unknown, and the estimate says why.
	w.Flavors = w.Flavors[:1]
	starts = Simulate(w, Options{})
	want := got{Unknown: "BudgetClosed", Reason: "Budget team-a/gpus cannot admit pods: Flavor a100 not found"}
	if diff := cmp.Diff(want, summarize(starts[0], "")); diff != "" {
		t.Errorf("next, with Flavor a100 missing (-want +got):\n%s", diff)
	}
}

// A simulation stops at its next simulated moment once Done is closed, and gives no
// starts (they would be those of a world cut short): the manager's shutdown does not
// wait for a pass over a long queue.
func TestSimulateStopsWhenDone(t *testing.T) {
	w := busyWorld(200, false)
	moments := func(o Options) (n int) {
		o.afterAdmit = func(*quota.AdmissionQueue) { n++ }
		if starts := Simulate(w, o); o.Done == nil && len(starts) != len(w.Waiting) {
			t.Fatalf("a whole simulation gave %d starts for %d waiting pods", len(starts), len(w.Waiting))
		}
		return n
	}
	whole := moments(Options{})
	if whole < 30 {
		t.Fatalf("a whole simulation took %d moments: too few to tell whether Done stops it", whole)
	}

	done := make(chan struct{})
	n := 0
	starts := Simulate(w, Options{Done: done, afterAdmit: func(*quota.AdmissionQueue) {
		if n++; n == 3 {
			close(done)
		}
	}})
	if starts != nil {
		t.Errorf("a simulation stopped after 3 moments gave %d starts, want none", len(starts))
	}
	// Three moments of the first run; the other two runs are not made.
	if n != 3 {
		t.Errorf("the simulation went on for %d moments after Done was closed at the 3rd (a whole one takes %d), want 3", n, whole)
	}
	closed := make(chan struct{})
	close(closed)
	if got := moments(Options{Done: closed}); got != 0 {
		t.Errorf("with Done closed before it started, the simulation took %d moments, want none", got)
	}
}

// When no pod's duration has a range (declared durations, or learned runs that all
// took the same time), the low and high runs are the central run: Simulate makes it
// once. One pod with a range brings the other two runs back.
func TestSimulateRunsOnceWithoutRanges(t *testing.T) {
	budgets := []quota.Budget{budget("team-a", "a", "cpu=1")}
	exact := world(budgets, []Pod{running("team-a", "r", "cpu=1", runs(time.Hour))},
		[]Pod{waiting(podIn("team-a", "w1", 1, "cpu=1"), runs(time.Minute)), waiting(podIn("team-a", "w2", 2, "cpu=1"), runs(time.Minute))})
	moments := func(w World, sim bool) (n int) {
		o := Options{afterAdmit: func(*quota.AdmissionQueue) { n++ }}
		if sim {
			Simulate(w, o)
		} else {
			run(&w, &o, durations{}, false)
		}
		return n
	}
	if one, got := moments(exact, false), moments(exact, true); got != one {
		t.Errorf("without ranges Simulate took %d moments, want the central run's %d", got, one)
	}
	s := Simulate(exact, Options{})[1]
	if !s.Known || !s.Low.Equal(s.Median) || !s.High.Equal(s.Median) || s.Median.Sub(t0) != time.Hour+time.Minute {
		t.Errorf("w2: %+v, want a start 1h1m after t0 with no range", s)
	}

	spread := exact
	spread.Waiting = []Pod{exact.Waiting[0], waiting(podIn("team-a", "w2", 2, "cpu=1"), runs(time.Minute, 30*time.Second, 2*time.Minute))}
	if one, got := moments(spread, false), moments(spread, true); got <= one {
		t.Errorf("with a range Simulate took %d moments, want more than the central run's %d (three runs)", got, one)
	}
}

// Head marks the pod its budget admits next, at the world's Now.
func TestSimulateHead(t *testing.T) {
	w := world([]quota.Budget{budget("team-a", "a", "cpu=1")},
		[]Pod{running("team-a", "r", "cpu=1", runs(10*time.Minute, 5*time.Minute, 20*time.Minute))},
		[]Pod{waiting(podIn("team-a", "w1", 1, "cpu=1"), runs(time.Minute)), waiting(podIn("team-a", "w2", 2, "cpu=1"), runs(time.Minute))})
	starts := Simulate(w, Options{})
	if !starts[0].Head || starts[1].Head {
		t.Errorf("heads: w1 %v, w2 %v; want w1 only", starts[0].Head, starts[1].Head)
	}
}

// TestEqualRunsDrawExactly: a workload whose runs all lasted the same is drawn as
// that, to the nanosecond: the pod waiting behind one of its pods starts when the
// runs say, with no range, and no rounding of the logarithms the draws go through.
func TestEqualRunsDrawExactly(t *testing.T) {
	w := world([]quota.Budget{budget("team-a", "a", "cpu=1")},
		[]Pod{running("team-a", "r", "cpu=1", learnedRuns(20*time.Minute, 20*time.Minute, 20*time.Minute))},
		[]Pod{waiting(podIn("team-a", "next", 1, "cpu=1"), learnedRuns(time.Minute, time.Minute, time.Minute))})
	s := Simulate(w, Options{})[0]
	want := t0.Add(20 * time.Minute)
	if !s.Known || !s.Median.Equal(want) || !s.Low.Equal(want) || !s.High.Equal(want) {
		t.Errorf("start %v (%v to %v), known %v; want %v exactly", s.Median, s.Low, s.High, s.Known, want)
	}
}
