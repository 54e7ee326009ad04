package estimates

import (
	"strings"
	"testing"
)

// reportOf is a report of a workload of kinds a and b into one budget, warm at one end
// each: a's pod ends at 10 s, b's at 20 s, and the pods created after 20 s are judged.
func reportOf(harder bool, judged ...Pod) Report {
	pods := []Pod{
		{Name: "w-budget-1/a-1", Kind: "a", Created: at(0), Started: at(0), Ended: at(10)},
		{Name: "w-budget-1/b-1", Kind: "b", Created: at(0), Started: at(0), Ended: at(20)},
		// Created before the run was warm: not judged, however wrong.
		{Name: "w-budget-1/a-2", Kind: "a", Created: at(5), Started: at(30), Ended: at(40),
			First: &Sighting{At: at(6), Quotagate: at(1000), Baseline: at(1000)}},
	}
	kinds := []Kind{{Name: "a"}, {Name: "b"}}
	return Report{
		Workload: Workload{Name: "w", Kinds: kinds, Budgets: []BudgetSpec{{Name: "budget", Slots: 2}},
			Streams: []Stream{{Kind: 0, Share: 1}, {Kind: 1, Share: 1}}, Harder: harder},
		Slots: 2, Warm: 1, Scale: 1, Seed: 1, Kinds: kinds,
		Pods:  append(pods, judged...),
		Queue: []int{3, 1, 2},
	}
}

func suiteOf(rs ...Report) Suite {
	return Suite{Command: "go run ./bench -estimates", JSON: "benchmarks-estimates.json", Warm: 1, Scale: 1, Seed: 1, Workloads: rs}
}

func TestMarkdownJudgesThePodsCreatedOnceWarm(t *testing.T) {
	r := reportOf(true,
		// Quotagate 2 s off and within its range, the baseline 8 s, the oracle 4 s.
		Pod{Name: "w-budget-1/a-3", Kind: "a", Created: at(21), Started: at(50), Ended: at(60),
			First: &Sighting{At: at(22), Position: 3, Quotagate: at(52), Low: at(45), High: at(55), Baseline: at(58), Oracle: at(54)},
			Head:  &Sighting{At: at(45), Position: 1, Quotagate: at(51), Low: at(50.5), High: at(52), Baseline: at(50), Oracle: at(50.5)}},
		// Unknown when created: counted, not scored.
		Pod{Name: "w-budget-1/b-2", Kind: "b", Created: at(22), Started: at(70), Ended: at(90),
			First: &Sighting{At: at(23), Position: 4, Unknown: "NoHistory", Baseline: at(75)}},
	)
	r.Records = []TrackRecord{{Budget: "w-budget-1/budget", Known: true, Pods: 4, MedianError: 2.5, Within: 3,
		Metrics: map[string]MetricCounts{"first": {Pods: 4, Within: 3}, "head": {Pods: 5, Within: 1}}}}
	md := suiteOf(r).Markdown()
	for _, want := range []string{
		// Quotagate 2 s, half the oracle's 4 s; the baseline's 8 s is 4× quotagate's;
		// 1 of 1 range held the start: 100%, outside 80 ± 5.
		"| w | when created | 1 | 2.0 / 2.0 | 4.0 | 0.50 (≤ 1.25) | 8.0 | 4.00 (≥ 1.5) | 100% of 1 (80 ± 5) | **no** |",
		// At the head: 1 s against the oracle's 0.5 (2×), the baseline exact, the range missed.
		"| w | at the head | 1 | 1.0 / 1.0 | 0.5 | 2.00 (≤ 1.25) | 0.0 | 0.00 (≥ 1.5) | 0% of 1 (80 ± 5) | **no** |",
		"- **w, when created**: missed: ranges held 100% of starts (target 80 ± 5).",
		"- **w, at the head**: missed: median error 2.00× the oracle's (target ≤ 1.25×); ranges held 0% of starts (target 80 ± 5); 0.00× smaller than the baseline's (target ≥ 1.5×).",
		"| w | w-budget-1/budget | 4, 2.5, 75% | 3 / 4 (75%) | 1 / 5 (20%) |",
		"2 of 5 Jobs were created after that",
		"1 with an unknown estimate (NoHistory 1)",
		"median signed error (estimate − start, positive is late) +2.0 s for quotagate, +8.0 s for the baseline",
		"| a | 1 | 2.0 / 1.0 | 4.0 / 0.5 | 8.0 / 0.0 | 100% / 0% |",
		"| b | 1 | 0.0 / 0.0 | 0.0 / 0.0 | 0.0 / 0.0 | 0% / 0% |",
		"median 2, 90th percentile 3, most 3",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
}

// A workload without the baseline target is judged on the oracle and the coverage
// alone: four of five ranges held (80%), the median error at the oracle's.
func TestVerdictMeetsTheTargets(t *testing.T) {
	var pods []Pod
	for i := range 5 {
		start := 100.0
		low, high := 95.0, 105.0
		if i == 4 {
			low, high = 101, 105 // the one range that missed
		}
		pods = append(pods, Pod{Name: "p", Kind: "a", Started: at(start),
			First: &Sighting{At: at(10), Quotagate: at(start + 3), Low: at(low), High: at(high), Baseline: at(start + 2), Oracle: at(start - 3)}})
	}
	v := verdict(ErrorsAt(pods, func(p Pod) *Sighting { return p.First }), false)
	if !v.Met() || v.Coverage != 80 || v.OracleRatio != 1 {
		t.Errorf("verdict %+v: want every target met, coverage 80%%, error 1× the oracle's", v)
	}
	// The same against the baseline target: its 2 s beat quotagate's 3 s.
	if v := verdict(ErrorsAt(pods, func(p Pod) *Sighting { return p.First }), true); v.Met() || v.BaselineMet {
		t.Errorf("verdict %+v on a harder workload: want the baseline target missed", v)
	}
}

func TestMarkdownSaysWhenNeverWarm(t *testing.T) {
	r := reportOf(false)
	r.Warm = 2 // each kind had one pod ended
	md := suiteOf(r).Markdown()
	if want := "| w | — | 0 | — | — | — | — | — | — | **no**: some kind never had 2 pods ended |"; !strings.Contains(md, want) {
		t.Errorf("the report lacks %q:\n%s", want, md)
	}
}

// A kind that arrives later is judged from its first pod: warm-up waits only for the
// kinds of the start, and the first estimate of its first pod is reported, its basis
// and whether its range held the start.
func TestLateKindIsJudgedFromItsFirstPod(t *testing.T) {
	r := reportOf(false,
		Pod{Name: "w-budget-1/c-2", Kind: "c", Created: at(26), Started: at(60), Ended: at(65),
			First: &Sighting{At: at(27), Position: 3, Quotagate: at(50), Baseline: at(50), Basis: "durations of 3 runs of Job w/c"}},
		Pod{Name: "w-budget-1/c-1", Kind: "c", Created: at(25), Started: at(40), Ended: at(45),
			First: &Sighting{At: at(26), Position: 2, Quotagate: at(41), Low: at(36), High: at(46), Baseline: at(41),
				Basis: "no run of Job w/c yet; durations of 3 runs of pods in namespace w"}})
	r.Workload.Kinds = append(r.Workload.Kinds, Kind{Name: "c"})
	r.Workload.Streams = append(r.Workload.Streams, Stream{Kind: 2, Share: 1, From: 3})
	r.Kinds = r.Workload.Kinds
	md := suiteOf(r).Markdown()
	for _, want := range []string{
		"| c | 2 | 1.0 / 0.0 |", // errors of 1 and 10 s: the nearest-rank median is 1
		`c, first pod (w-budget-1/c-1): basis "no run of Job w/c yet; durations of 3 runs of pods in namespace w"; its range, 10 to 20 s ahead, held the start 14 s ahead.`,
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
}
