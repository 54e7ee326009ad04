package estimate

import (
	"fmt"
	"testing"
	"time"

	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/quota"
)

// A start says what the least trusted duration it waited for was learned from: a
// workload with no runs of its own, whose durations are its namespace's, before one
// learned from its own runs, and that before one with fewer.
func TestSimulateBasis(t *testing.T) {
	l := NewLearner(0)
	train := KeysOf(podtest.New("train-1").NS("team-a").Obj(), nil)
	for i := range 30 {
		l.Record(train, time.Duration(1+i%6)*time.Second)
	}
	learned := func(name string) Expectation {
		f := FactsOf(podtest.New(name).NS("team-a").Obj())
		e := l.ExpectFacts(&f, nil, t0)
		if e.Source != SourceLearned {
			t.Fatalf("%s: nothing learned", name)
		}
		return e
	}
	if e := learned("etl-2"); e.Level != LevelNamespace || e.Spread != namespaceSpread {
		t.Errorf("etl's durations: level %d, spread %v; want its namespace's, widened by %v", e.Level, e.Spread, namespaceSpread)
	}
	for name, tc := range map[string]struct {
		ahead []Pod
		want  string
	}{
		"its own workload's runs": {
			ahead: []Pod{running("team-a", "train-2", "cpu=1", learned("train-2"))},
			want:  "durations of 30 runs of Pod team-a/train",
		},
		"a workload with no runs: its namespace's, and it says so": {
			ahead: []Pod{running("team-a", "train-2", "cpu=1", learned("train-2")), running("team-a", "etl-1", "cpu=1", learned("etl-1"))},
			want:  "no run of Pod team-a/etl yet; durations of 30 runs of pods in namespace team-a",
		},
		"declared durations only: none": {
			ahead: []Pod{running("team-a", "r", "cpu=1", runs(time.Minute))},
		},
	} {
		t.Run(name, func(t *testing.T) {
			w := world([]quota.Budget{budget("team-a", "a", fmt.Sprintf("cpu=%d", len(tc.ahead)))}, tc.ahead,
				[]Pod{waiting(podIn("team-a", "etl-2", 1, fmt.Sprintf("cpu=%d", len(tc.ahead))), learned("etl-2"))})
			s := Simulate(w, Options{})[0]
			if !s.Known || s.Basis != tc.want {
				t.Errorf("start known %v, basis %q; want %q", s.Known, s.Basis, tc.want)
			}
		})
	}
}

// A start names no workload of another namespace: a pod of team-b that waits for a pod
// of team-a (their parent's room) learns only that the durations it waited for were
// learned in another namespace, and from how many runs.
func TestSimulateBasisOfAnotherNamespace(t *testing.T) {
	l := NewLearner(0)
	for i := range 30 {
		l.Record(KeysOf(podtest.New("train-1").NS("team-a").Obj(), nil), time.Duration(1+i%6)*time.Second)
		l.Record(KeysOf(podtest.New("etl-1").NS("team-b").Obj(), nil), time.Duration(1+i%6)*time.Second)
	}
	expect := func(ns, name string) Expectation {
		f := FactsOf(podtest.New(name).NS(ns).Obj())
		return l.ExpectFacts(&f, nil, t0)
	}
	org := quota.Budget{Key: quota.BudgetKey{Name: "org"}, Hard: podtest.ParseList("cpu=1")}
	a, b := budget("team-a", "a", "cpu=1"), budget("team-b", "b", "cpu=1")
	a.Parent, b.Parent = "org", "org"
	w := world([]quota.Budget{org, a, b}, []Pod{running("team-a", "train-2", "cpu=1", expect("team-a", "train-2"))},
		[]Pod{waiting(podIn("team-b", "etl-2", 1, "cpu=1"), expect("team-b", "etl-2"))})
	s := Simulate(w, Options{})[0]
	if want := "durations of 30 runs of a workload in another namespace"; !s.Known || s.Basis != want {
		t.Errorf("start known %v, basis %q; want %q", s.Known, s.Basis, want)
	}
}

// A basis learned in another namespace from one run (a pod that outran all its kind's
// runs but one) says "1 run".
func TestBasisOfOneRunInAnotherNamespace(t *testing.T) {
	w := weak{samples: 1, basis: "durations of 1 run of Job team-b/train longer than 40s", namespace: "team-b"}
	if got, want := w.basisFor("team-a"), "durations of 1 run of a workload in another namespace"; got != want {
		t.Errorf("basis for team-a %q, want %q", got, want)
	}
	if got := w.basisFor("team-b"); got != w.basis {
		t.Errorf("basis for team-b %q, want its own %q", got, w.basis)
	}
}

// TestNewWorkloadsRangeHoldsItsStart is make demo's new kind of Job: namespace team-a
// learned 30 Jobs job-00 to job-29 of 1 to 6 s; then Jobs etl-0 to etl-7 of one pod
// each, of a workload never seen, are created at once behind a Budget of 6 CPUs, and
// each runs 20 s. etl-6 and etl-7 start when the first six end, 20 s after they began.
// Whenever it is estimated (as the six start, a second in, at 3 s, past the longest run
// the namespace knows), the range holds that start, and the basis says the durations
// are another workload's. Widened pod by pod, the ranges reached 6 s at the most.
func TestNewWorkloadsRangeHoldsItsStart(t *testing.T) {
	l := NewLearner(0)
	for n := range 30 {
		l.Record(KeysOf(podtest.New("p").NS("team-a").Owner("batch/v1", "Job", fmt.Sprintf("job-%02d", n), true).Obj(), nil), time.Duration(1+(n*7)%6)*time.Second)
	}
	etl := func(i int, held time.Time) Expectation {
		f := FactsOf(podtest.New(fmt.Sprintf("etl-%d-x", i)).NS("team-a").Owner("batch/v1", "Job", fmt.Sprintf("etl-%d", i), true).Obj())
		f.Held = held
		e := l.ExpectFacts(&f, nil, t0)
		e.Start = held
		return e
	}
	const run = 20 * time.Second
	for _, elapsed := range []time.Duration{0, time.Second, 3 * time.Second, 8 * time.Second} {
		began := t0.Add(-elapsed)
		var running, gated []Pod
		for i := range 6 {
			running = append(running, Pod{Pod: view(podIn("team-a", fmt.Sprintf("etl-%d", i), -60, "cpu=1")), Expect: etl(i, began)})
		}
		for i := 6; i < 8; i++ {
			gated = append(gated, waiting(podIn("team-a", fmt.Sprintf("etl-%d", i), i, "cpu=1"), etl(i, time.Time{})))
		}
		truly := began.Add(run)
		for i, s := range Simulate(world([]quota.Budget{budget("team-a", "a", "cpu=6")}, running, gated), Options{}) {
			t.Logf("the six began %v ago: etl-%d in %v (between %v and %v), %s", elapsed, 6+i, s.Median.Sub(t0), s.Low.Sub(t0), s.High.Sub(t0), s.Basis)
			if !s.Known || truly.Before(s.Low) || truly.After(s.High) {
				t.Errorf("the six began %v ago: etl-%d's range %v to %v does not hold its start in %v", elapsed, 6+i, s.Low.Sub(t0), s.High.Sub(t0), truly.Sub(t0))
			}
			if want := "no run of Job team-a/etl yet; durations of 30 runs of pods in namespace team-a"; s.Basis != want {
				t.Errorf("the six began %v ago: basis %q, want %q", elapsed, s.Basis, want)
			}
		}
	}
}
