package quota

import (
	"flag"
	"fmt"
	"runtime/debug"
	"strings"
	"testing"
)

var (
	randomSeeds = flag.Int("quota.seeds", 300, "seeds for TestRandomizedAdmission (go test -run Randomized -args -quota.seeds=N); -short runs 30")
	randomSteps = flag.Int("quota.steps", 150, "steps per seed for TestRandomizedAdmission")
	randomSeed0 = flag.Int("quota.seed", -1, "run only this seed of TestRandomizedAdmission")
	randomFirst = flag.Int("quota.first", 0, "first seed of TestRandomizedAdmission: -quota.first=F -quota.seeds=N runs seeds F to F+N-1, so that a long run can be split across processes")
)

// TestRandomizedAdmission drives the core with random events (pods added, deleted,
// finished, relabelled; budgets created, deleted, resized, opened, closed, re-parented;
// namespaces relabelled; ungate patches that apply, apply but are reported failed or
// lose their response, fail, race a concurrent write, or find the pod gone; evictions
// refused for a while, accepted, or applied with the answer lost and reported only
// when a retry finds the pod gone, before or after the informer shows it; informer
// views confirmed late; fresh reads; failovers and restarts to a standby whose cache
// lags, which reads the pins of running pods back from their admitted-by annotations;
// namespace events that arrive after the pods of the namespace; uncovered pods held or,
// in some seeds, released) and checks it against an independent model after every step:
//
//   - the promise: a pod the API server shows ungated is never counted as waiting by
//     the core (its charge is never given back while it runs), whatever the core was
//     told about the patch;
//   - safety: a pod admitted because it fits is charged to exactly the budgets the
//     model says cover it, all of them admitting, and none of them ends up over hard;
//     nothing is admitted in a namespace the core has not been told about, and an
//     uncovered pod is admitted only where uncovered pods are released;
//     a group that had nothing admitted is admitted with at least group-size members;
//   - accounting: every budget's used equals the model's sum over the pods the core was
//     told are admitted or running, and the core's own bookkeeping is consistent;
//   - liveness: once the world calms down (every budget open and fixed, running pods
//     finishing), every gated pod is admitted unless it can never fit or its group is
//     incomplete.
func TestRandomizedAdmission(t *testing.T) {
	n := *randomSeeds
	if testing.Short() {
		n = min(n, 30)
	}
	seeds := make([]int, 0, n)
	if *randomSeed0 >= 0 {
		seeds = append(seeds, *randomSeed0)
	} else {
		for s := range n {
			seeds = append(seeds, *randomFirst+s)
		}
	}
	var windows windowTally
	var notGiven, notKept int
	for _, seed := range seeds {
		w := newWorld(seed)
		if err := w.runRecovering(*randomSteps); err != nil {
			t.Fatalf("seed %d (rerun with -args -quota.seed=%d): %v\nlast events:\n%s", seed, seed, err, strings.Join(w.lastEvents(25+975*boolInt(*randomSeed0 >= 0)), "\n"))
		}
		windows.add(w.windows.tally)
		notGiven += w.notSent.given
		notKept += w.notSent.kept
	}
	if len(seeds) == 0 {
		t.Fatal("no seeds to run: -quota.seeds must be at least 1")
	}
	t.Logf("%d seeds from %d x %d steps; %d windows ended, %d with Reclaim, which evicted %d pods; %d attempts not sent, the charge given back, %d on a retry, kept", len(seeds), seeds[0], *randomSteps, windows.ends, windows.reclaimEnds, windows.victims, notGiven, notKept)
	if len(seeds) >= 30 && windows.victims == 0 {
		t.Errorf("no window's end evicted a pod in %d worlds: the model no longer plays Reclaim", len(seeds))
	}
	if len(seeds) >= 30 && (notGiven == 0 || notKept == 0) {
		t.Errorf("in %d worlds, %d attempts not sent were given back and %d kept: the model no longer plays NotSent on both paths", len(seeds), notGiven, notKept)
	}
}

// TestRandomizedRegressions runs, at every go test, the worlds of TestRandomizedAdmission
// that once failed beyond the default seeds and steps.
func TestRandomizedRegressions(t *testing.T) {
	for _, tc := range []struct {
		seed, steps int
		why         string
		tenant      bool // the world with the hostile tenant's moves
		// full: the world of TestRandomizedAdmission itself (newWorld: the tenant, start
		// rules, windows and attempts not sent), not only the tenant's.
		full bool
	}{
		// A Budget deleted and created again under the same parent while pods of its
		// namespace waited on the family for lendable quota: the claims memo kept them
		// under the members that covered them when they began to wait, so the new
		// member's entry, computed again after a charge, missed them (reindexMembers).
		{seed: 601, steps: 400, why: "a new member's waiting pods missing from the claims memo"},
		// A pod created running, first seen with no labels, relabelled by the tenant into
		// Budget b1's selector: a failover charged it to b1 by its labels then, for it
		// carried no record of the labels it was charged by (TakeRecords).
		{seed: 312, steps: 400, why: "a running pod no manager admitted, relabelled before a failover", tenant: true},
		// A group member created running with limits.memory: 1e25 belonged to no group
		// (a value beyond counting kept it out), so its group was preempted without it.
		{seed: 699, steps: 400, why: "a running group member carrying a value beyond counting", tenant: true},
		// A CompositePodGroup's gang whose only covered member waited in a PodGroup short
		// of its minCount, while the complete PodGroup's pod was covered by no budget: no
		// budget's queue held a member that could go, so that pod stayed "queued, not
		// evaluated yet" (group.goersUncovered).
		{seed: 5094, steps: 150, why: "a gang's complete part covered by no budget, its covered member parked", full: true},
	} {
		w := newWorldOf(tc.seed, tc.tenant)
		if tc.full {
			w = newWorld(tc.seed)
		}
		if err := w.runRecovering(tc.steps); err != nil {
			t.Errorf("seed %d, %d steps (%s; rerun with -args -quota.seed=%d -quota.steps=%d): %v", tc.seed, tc.steps, tc.why, tc.seed, tc.steps, err)
		}
	}
}

// runRecovering is run, with a panic of the core (its own checks panic: the claims
// memo, the settled agenda) returned as an error, so the failure names its seed.
func (w *world) runRecovering(steps int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	return w.run(steps)
}
