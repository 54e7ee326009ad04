package estimates

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fifo is the first workload, of the three Kinds into one Budget of 8 pods.
func fifo() Workload { return Workloads(160)[0] }

func TestPlanIsSeeded(t *testing.T) {
	a, b := Plan(fifo(), 7, 50, 1), Plan(fifo(), 7, 50, 1)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("Plan with the same seed differs (-first +second):\n%s", diff)
	}
	if diff := cmp.Diff(a, Plan(fifo(), 8, 50, 1)); diff == "" {
		t.Error("Plan with seeds 7 and 8 drew the same workload")
	}
}

func TestPlanShape(t *testing.T) {
	const pods, slots = 2000, 8
	plan := Plan(fifo(), 1, pods, 1)
	if len(plan) != pods {
		t.Fatalf("Plan drew %d Jobs, want %d", len(plan), pods)
	}
	for i, a := range plan[:2*slots] {
		if a.At != 0 {
			t.Errorf("Job %d of the first 2×slots arrives at %s, want at once", i, a.At)
		}
	}
	runs := make([][]float64, len(Kinds))
	var last time.Duration
	for i, a := range plan {
		if a.At < last {
			t.Fatalf("Job %d arrives at %s, before Job %d at %s", i, a.At, i-1, last)
		}
		last = a.At
		if a.Run < minRun {
			t.Errorf("Job %d runs %s, under %s", i, a.Run, minRun)
		}
		runs[a.Kind] = append(runs[a.Kind], a.Run.Seconds())
	}
	// The rest arrive at the rate the budget admits: slots ÷ the mean run time.
	var meanRun float64
	for _, k := range Kinds {
		meanRun += k.Mean.Seconds() / float64(len(Kinds))
	}
	wantSpan := float64(pods-2*slots) * meanRun / slots
	if got := last.Seconds(); math.Abs(got-wantSpan) > 0.1*wantSpan {
		t.Errorf("the last Job arrives at %.0f s, want within 10%% of %.0f s", got, wantSpan)
	}
	for i, k := range Kinds {
		n := len(runs[i])
		if n < pods/len(Kinds)*8/10 {
			t.Errorf("kind %s drew %d Jobs of %d, want about a third", k.Name, n, pods)
		}
		var sum float64
		for _, r := range runs[i] {
			sum += r
		}
		if mean := sum / float64(n); math.Abs(mean-k.Mean.Seconds()) > 0.1*k.Mean.Seconds() {
			t.Errorf("kind %s: mean run %.1f s, want within 10%% of its distribution's %.1f s", k.Name, mean, k.Mean.Seconds())
		}
	}
	// Each kind's own shape: the uniform stays in its range, the bimodal never in
	// between its modes.
	for _, r := range runs[0] {
		if r < 16 || r > 24 {
			t.Errorf("uniform run %.1f s outside 16 to 24 s", r)
		}
	}
	for _, r := range runs[2] {
		if (r > 11 && r < 54) || r < 9 || r > 66 {
			t.Errorf("bimodal run %.1f s outside 9 to 11 s and 54 to 66 s", r)
		}
	}
}

func TestPlanScale(t *testing.T) {
	full, quarter := Plan(fifo(), 3, 100, 1), Plan(fifo(), 3, 100, 0.25)
	for i := range full {
		if full[i].Kind != quarter[i].Kind {
			t.Fatalf("Job %d: kind %d at ×1, %d at ×0.25: scale changed the draw", i, full[i].Kind, quarter[i].Kind)
		}
		want := max(time.Duration(float64(full[i].Run)*0.25), minRun)
		if d := quarter[i].Run - want; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("Job %d runs %s at ×0.25, want %s (a quarter of %s)", i, quarter[i].Run, want, full[i].Run)
		}
	}
}

// The mix's etl Jobs are its high-priority ones, train's its low ones; the family's
// etl Jobs arrive only from their stream's From on, and only in team-b.
func TestPlanStreams(t *testing.T) {
	const pods = 400
	ws := Workloads(pods)
	mix, family := ws[1], ws[2]
	byPriority := map[int32]int{}
	for i, a := range Plan(mix, 1, pods, 1) {
		want := map[string]int32{"train": Low, "etl": High}[mix.Kinds[a.Kind].Name]
		if a.Priority != want || a.Budget != 0 {
			t.Errorf("mix Job %d: %s at priority %d in budget %d, want priority %d in budget 0", i, mix.Kinds[a.Kind].Name, a.Priority, a.Budget, want)
		}
		byPriority[a.Priority]++
	}
	if byPriority[High] < pods*4/10 || byPriority[Low] < pods*4/10 {
		t.Errorf("mix drew %v Jobs by priority, want about half each", byPriority)
	}
	from := family.Streams[3].From
	if from != pods*2/5 {
		t.Fatalf("the family's etl stream starts at Job %d, want %d", from, pods*2/5)
	}
	var budgets [2]int
	etl := 0
	for i, a := range Plan(family, 1, pods, 1) {
		budgets[a.Budget]++
		if family.Kinds[a.Kind].Name != "etl" {
			continue
		}
		etl++
		if i < from || a.Budget != 1 {
			t.Errorf("family Job %d is etl in budget %d, want etl only from Job %d on, in team-b (1)", i, a.Budget, from)
		}
	}
	if etl < (pods-from)/5 {
		t.Errorf("family drew %d etl Jobs of the %d from Job %d on, want about 0.3 of them", etl, pods-from, from)
	}
	if budgets[0] <= budgets[1] {
		t.Errorf("family drew %v Jobs into team-a and team-b, want team-a the busier", budgets)
	}
	if got, want := family.initial(), []string{"uniform", "lognormal"}; !slices.Equal(got, want) {
		t.Errorf("the family's kinds from the start are %v, want %v (etl appears later)", got, want)
	}
}

func TestJobOfPod(t *testing.T) {
	for pod, want := range map[string]string{
		"uniform-x7k2p-abcde": "uniform-x7k2p",
		"a-b":                 "a",
		"plain":               "plain",
	} {
		if got := jobOfPod(pod); got != want {
			t.Errorf("jobOfPod(%q) = %q, want %q", pod, got, want)
		}
	}
}
