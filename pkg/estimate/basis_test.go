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
