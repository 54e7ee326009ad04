package estimate

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/quotagate/quotagate/pkg/quota"
)

// TestSimulateWindows: a budget's windows (World.Changes) count as its clock reaches
// them. A window that raises a full budget starts the waiting pod when it opens, though
// no running pod ends; a Reclaim window's end evicts what ran in it, so the pod behind
// starts sooner than under Hold.
func TestSimulateWindows(t *testing.T) {
	min := time.Minute
	full := []Pod{running("team-a", "r", "cpu=2", Expectation{})} // holds for ever
	raised := budget("team-a", "a", "cpu=4")
	t.Run("a window opens", func(t *testing.T) {
		w := world([]quota.Budget{budget("team-a", "a", "cpu=2")}, full,
			[]Pod{waiting(podIn("team-a", "next", 1, "cpu=2"), runs(10*min))})
		if s := Simulate(w, Options{})[0]; s.Known {
			t.Fatalf("without the window, next starts at %v, want never", s.Median)
		}
		w.Changes = []BudgetChange{{At: t0.Add(30 * min), Budget: raised}}
		if s := Simulate(w, Options{})[0]; !s.Known || s.Median.Sub(t0) != 30*min {
			t.Errorf("next starts %+v, want when the window opens, 30m after t0", s)
		}
	})
	t.Run("a Reclaim window ends", func(t *testing.T) {
		// Open now (hard 4) until 20m: "in" starts at once and would run an hour. r ends
		// at 30m. With Hold, "after" waits for "in" to end (60m); with Reclaim, "in" is
		// evicted at 20m, and "after" starts when r ends (30m).
		for policy, want := range map[string]time.Duration{"": 60 * min, "night": 30 * min} {
			back := budget("team-a", "a", "cpu=2")
			back.ReclaimAfter = policy
			w := world([]quota.Budget{raised}, []Pod{running("team-a", "r", "cpu=2", runs(30*min))},
				[]Pod{waiting(podIn("team-a", "in", 1, "cpu=2"), runs(60*min)), waiting(podIn("team-a", "after", 2, "cpu=2"), runs(10*min))})
			w.Changes = []BudgetChange{{At: t0.Add(20 * min), Budget: back}}
			got := map[string]time.Duration{}
			for i, s := range Simulate(w, Options{}) {
				if s.Known {
					got[w.Waiting[i].Pod.Name] = s.Median.Sub(t0)
				}
			}
			if diff := cmp.Diff(map[string]time.Duration{"in": 0, "after": want}, got); diff != "" {
				t.Errorf("reclaim after %q: starts (-want +got):\n%s", policy, diff)
			}
		}
	})
}
