package estimate

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/quota"
)

// placed is a Placement as the tests compare it: the budgets by name, the places as
// "budget position/total", and the wait's reason code.
type placed struct {
	Admitted bool
	Budgets  []string
	Flavor   string
	Preempts int
	Places   []string
	Code     quota.ReasonCode
	Held     bool
	Found    bool
}

func summarizePlace(p Placement) placed {
	out := placed{Admitted: p.Admitted, Flavor: p.Flavor, Preempts: p.Preempts, Held: p.Wait.Held, Found: p.Found}
	if !p.Admitted {
		out.Code = p.Reason.Code
	}
	for _, b := range p.Budgets {
		out.Budgets = append(out.Budgets, b.String())
	}
	for _, pl := range p.Wait.Places {
		out.Places = append(out.Places, pl.Budget.String()+" "+strconv.Itoa(pl.Position)+"/"+strconv.Itoa(pl.Total))
	}
	return out
}

// TestPlace: what the core says at once of a pod added to the world (the what-if of
// podsimulations), before any pod ends.
func TestPlace(t *testing.T) {
	min := time.Minute
	strict := budget("team-a", "a", "cpu=4")
	strict.Strategy = v1alpha1.StrictFIFO
	closed := budget("team-a", "a", "cpu=4")
	closed.State = v1alpha1.StateClosed
	preempting := budget("team-a", "a", "cpu=2")
	preempting.WithinBudget = v1alpha1.WithinBudgetLowerPriority
	flavored := quota.Budget{Key: quota.BudgetKey{Namespace: "team-a", Name: "gpus"}, Flavors: []quota.FlavorQuota{
		{Name: "h100", Hard: podtest.ParseList("nvidia.com/gpu=1")},
		{Name: "a100", Hard: podtest.ParseList("nvidia.com/gpu=1")},
	}}
	onH100 := running("team-a", "on-h100", "nvidia.com/gpu=1", runs(30*min))
	onH100.Pod.NodeSelector = map[string]string{"gpu": "h100"}
	flavors := []quota.Flavor{
		{Name: "h100", NodeLabels: map[string]string{"gpu": "h100"}},
		{Name: "a100", NodeLabels: map[string]string{"gpu": "a100"}},
	}
	for name, tc := range map[string]struct {
		w    World
		core []quota.Option // the manager's (Options.Core)
		uids []string
		want []placed
	}{
		"room: admitted at once, charged to the covering budget": {
			w:    world([]quota.Budget{budget("team-a", "a", "cpu=4")}, []Pod{running("team-a", "r", "cpu=2", runs(10*min))}, []Pod{waiting(podIn("team-a", "new", 10, "cpu=2"), runs(min))}),
			uids: []string{"new"},
			want: []placed{{Admitted: true, Found: true, Budgets: []string{"team-a/a"}}},
		},
		"full: the new pods wait behind the gated pods created before them": {
			w: world([]quota.Budget{budget("team-a", "a", "cpu=4")}, []Pod{running("team-a", "r", "cpu=4", runs(10*min))}, []Pod{
				waiting(podIn("team-b", "other-0", 1, "cpu=2"), runs(min)), // another namespace's: not covered by a
				waiting(podIn("team-a", "old-0", 1, "cpu=2"), runs(min)),
				waiting(podIn("team-a", "old-1", 2, "cpu=2"), runs(min)),
				waiting(podIn("team-a", "new-0", 10, "cpu=2"), runs(min)),
				waiting(podIn("team-a", "new-1", 10, "cpu=2"), runs(min)),
			}),
			uids: []string{"new-0", "new-1"},
			want: []placed{
				{Found: true, Places: []string{"team-a/a 3/4"}, Code: quota.CodeInsufficient},
				{Found: true, Places: []string{"team-a/a 4/4"}, Code: quota.CodeInsufficient},
			},
		},
		"strict FIFO: a small new pod waits behind a big old one": {
			w: world([]quota.Budget{strict}, []Pod{running("team-a", "r", "cpu=3", runs(10*min))}, []Pod{
				waiting(podIn("team-a", "big", 1, "cpu=4"), runs(min)),
				waiting(podIn("team-a", "new", 10, "cpu=1"), runs(min)),
			}),
			uids: []string{"new"},
			want: []placed{{Found: true, Places: []string{"team-a/a 2/2"}, Code: quota.CodeBehindHead}},
		},
		"a higher priority goes ahead of older pods": {
			w: world([]quota.Budget{budget("team-a", "a", "cpu=2")}, []Pod{running("team-a", "r", "cpu=2", runs(10*min))}, []Pod{
				waiting(podIn("team-a", "old", 1, "cpu=2"), runs(min)),
				waiting(podIn("team-a", "new", 10, "cpu=2").Priority(100), runs(min)),
			}),
			uids: []string{"new"},
			want: []placed{{Found: true, Places: []string{"team-a/a 1/2"}, Code: quota.CodeInsufficient}},
		},
		"a closed budget": {
			w:    world([]quota.Budget{closed}, nil, []Pod{waiting(podIn("team-a", "new", 10, "cpu=1"), runs(min))}),
			uids: []string{"new"},
			want: []placed{{Found: true, Places: []string{"team-a/a 1/1"}, Code: quota.CodeBudgetClosed}},
		},
		"more than the budget's hard": {
			w:    world([]quota.Budget{budget("team-a", "a", "cpu=2")}, nil, []Pod{waiting(podIn("team-a", "new", 10, "cpu=3"), runs(min))}),
			uids: []string{"new"},
			want: []placed{{Found: true, Places: []string{"team-a/a 1/1"}, Code: quota.CodeNeverFits}},
		},
		"no budget covers it in an enabled namespace: held, uncovered": {
			w:    world([]quota.Budget{budget("team-b", "b", "cpu=2")}, nil, []Pod{waiting(podIn("team-a", "new", 10, "cpu=1"), runs(min))}),
			uids: []string{"new"},
			want: []placed{{Found: true, Held: true, Code: quota.CodeUncovered}},
		},
		"flavors: admitted at once on the flavor with room": {
			w: func() World {
				w := world([]quota.Budget{flavored}, []Pod{onH100}, []Pod{waiting(podIn("team-a", "new", 10, "nvidia.com/gpu=1"), runs(min))})
				w.Flavors = flavors
				return w
			}(),
			uids: []string{"new"},
			want: []placed{{Admitted: true, Found: true, Budgets: []string{"team-a/gpus"}, Flavor: "a100"}},
		},
		"preemption: a new pod waits for its preemption cooldown first": {
			w: world([]quota.Budget{preempting}, []Pod{running("team-a", "low", "cpu=2", runs(10*min))}, []Pod{
				waiting(podIn("team-a", "new", 10, "cpu=2").Priority(100), runs(min)),
			}),
			uids: []string{"new"},
			want: []placed{{Found: true, Places: []string{"team-a/a 1/1"}, Code: quota.CodePreemptionPending}},
		},
		"preemption without a cooldown: admitted once a lower priority pod is preempted": {
			w: world([]quota.Budget{preempting}, []Pod{running("team-a", "low", "cpu=2", runs(10*min))}, []Pod{
				waiting(podIn("team-a", "new", 10, "cpu=2").Priority(100), runs(min)),
			}),
			core: []quota.Option{quota.WithPreemptionCooldown(0, 0)},
			uids: []string{"new"},
			want: []placed{{Admitted: true, Found: true, Budgets: []string{"team-a/a"}, Preempts: 1}},
		},
		"a pod that is not in the world": {
			w:    world([]quota.Budget{budget("team-a", "a", "cpu=2")}, nil, nil),
			uids: []string{"missing"},
			want: []placed{{}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			uids := make([]types.UID, len(tc.uids))
			for i, u := range tc.uids {
				uids[i] = types.UID(u)
			}
			var have []placed
			for _, p := range Place(tc.w, Options{Core: tc.core}, uids) {
				have = append(have, summarizePlace(p))
			}
			if diff := cmp.Diff(tc.want, have); diff != "" {
				t.Errorf("placements (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPlaceKeepsTheWorld: Place decides on a core of its own; the world it is given
// simulates as before.
func TestPlaceKeepsTheWorld(t *testing.T) {
	w := world([]quota.Budget{budget("team-a", "a", "cpu=2")}, []Pod{running("team-a", "r", "cpu=2", runs(10*time.Minute))},
		[]Pod{waiting(podIn("team-a", "new", 10, "cpu=2"), runs(time.Minute))})
	before := Simulate(w, Options{})
	Place(w, Options{}, []types.UID{"new"})
	if diff := cmp.Diff(before, Simulate(w, Options{})); diff != "" {
		t.Errorf("starts after Place (-before +after):\n%s", diff)
	}
}

// TestSuppose: the added pods (the last of the world's waiting pods) get their
// placements and starts; without starts, NoStarts says why.
func TestSuppose(t *testing.T) {
	w := world([]quota.Budget{budget("team-a", "a", "cpu=2")}, []Pod{running("team-a", "r", "cpu=2", runs(10*time.Minute))}, []Pod{
		waiting(podIn("team-a", "old", 1, "cpu=2"), runs(5*time.Minute)),
		waiting(podIn("team-a", "new-0", 10, "cpu=2"), runs(time.Minute)),
		waiting(podIn("team-a", "new-1", 10, "cpu=2"), runs(time.Minute)),
	})
	got := Suppose(w, Options{}, 2, "")
	var names, places []string
	var starts []float64
	for i, p := range got.Pods {
		names = append(names, p.Name)
		places = append(places, summarizePlace(got.Placements[i]).Places...)
		starts = append(starts, got.Starts[i].Median.Sub(t0).Minutes())
	}
	if diff := cmp.Diff([]string{"new-0", "new-1"}, names); diff != "" {
		t.Errorf("pods (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"team-a/a 2/3", "team-a/a 3/3"}, places); diff != "" {
		t.Errorf("places (-want +got):\n%s", diff)
	}
	// r ends at 10, old runs 5 minutes, new-0 one.
	if diff := cmp.Diff([]float64{15, 16}, starts); diff != "" {
		t.Errorf("median starts in minutes (-want +got):\n%s", diff)
	}
	off := Suppose(w, Options{}, 2, "off")
	if off.Starts != nil || off.NoStarts != "off" || len(off.Placements) != 2 {
		t.Errorf("without starts: %d starts, %q, %d placements", len(off.Starts), off.NoStarts, len(off.Placements))
	}
}

// TestSupposeStopsOnceTheAddedPodsStart: a what-if's starts are those the estimator
// would give its pods with as many draws, and its runs stop once those pods have
// started: added ahead of a long queue (a higher priority), it takes fewer steps than
// the queue's simulation.
func TestSupposeStopsOnceTheAddedPodsStart(t *testing.T) {
	w := busyWorld(400, false)
	for i := range 2 {
		pb := podIn("ns-0", fmt.Sprintf("new-%d", i), 1000, "cpu=1").Priority(100)
		w.Waiting = append(w.Waiting, waiting(pb, learnedRuns(time.Minute, 2*time.Minute, 4*time.Minute)))
	}
	steps := 0
	count := func() { steps++ }
	all := Simulate(w, Options{Draws: WhatIfDraws, Pace: count})
	whole := steps
	steps = 0
	got := Suppose(w, Options{Pace: count}, 2, "")
	if diff := cmp.Diff(all[len(all)-2:], got.Starts); diff != "" {
		t.Errorf("the what-if's starts (-the estimator's +the what-if's):\n%s", diff)
	}
	if !got.Starts[0].Known || !got.Starts[1].Known {
		t.Fatalf("the added pods' starts are unknown: %+v", got.Starts)
	}
	if steps*2 > whole {
		t.Errorf("the what-if took %d steps, the simulation of the whole queue %d: want it to stop once its pods started", steps, whole)
	}
}

// TestSupposeStopsWhenDone: a what-if whose client went away, or whose time is up,
// stops at its next step, wherever it is: feeding the world to its core, taking the
// core's decisions at Now, or simulating the starts. Pace is called at every step
// before Done is looked at, so the manager can bound the CPU a what-if takes.
func TestSupposeStopsWhenDone(t *testing.T) {
	// 3,000 gated pods of 1 CPU under a Budget of 2,000: Place feeds them in three
	// steps, and its core admits 2,000 at once, then decides nothing more.
	var gated []Pod
	for i := range 3000 {
		gated = append(gated, waiting(podIn("team-a", "w-"+strconv.Itoa(i), i, "cpu=1"), runs(time.Minute)))
	}
	w := world([]quota.Budget{budget("team-a", "a", "cpu=2000")}, nil, gated)
	const added = 2
	paced := func(o Options) (calls int) {
		o.Pace = func() { calls++ }
		Place(w, o, []types.UID{w.Waiting[len(w.Waiting)-1].Pod.UID})
		return calls
	}
	placeSteps := paced(Options{})
	if placeSteps < 3 {
		t.Fatalf("Place took %d steps for 3,000 pods: too few to tell where Done stops it", placeSteps)
	}
	whole := Suppose(w, Options{Pace: func() {}}, added, "")
	if whole.Stopped || len(whole.Placements) != added || len(whole.Starts) != added {
		t.Fatalf("a whole what-if: stopped %v, %d placements, %d starts, want %d of each", whole.Stopped, len(whole.Placements), len(whole.Starts), added)
	}

	for name, tc := range map[string]struct {
		closeAt        int // the Pace call that closes Done
		wantPlacements bool
	}{
		"while feeding the core":                  {closeAt: 1},
		"while taking the core's first decisions": {closeAt: placeSteps},
		"while simulating the starts":             {closeAt: placeSteps + 2, wantPlacements: true},
	} {
		t.Run(name, func(t *testing.T) {
			done := make(chan struct{})
			calls := 0
			got := Suppose(w, Options{Done: done, Pace: func() {
				if calls++; calls == tc.closeAt {
					close(done)
				}
			}}, added, "")
			if !got.Stopped || got.Starts != nil || (got.Placements != nil) != tc.wantPlacements {
				t.Errorf("stopped %v, %d placements, %d starts; want stopped, placements %v, no starts", got.Stopped, len(got.Placements), len(got.Starts), tc.wantPlacements)
			}
			if calls != tc.closeAt {
				t.Errorf("%d steps after Done was closed at step %d, want none", calls-tc.closeAt, tc.closeAt)
			}
		})
	}
}
