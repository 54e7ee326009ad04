package estimates

import (
	"strings"
	"testing"
)

// reportOf is a report of kinds a and b, warm at one end each: a's pod ends at 10 s,
// b's at 20 s, and the pods created after 20 s are judged.
func reportOf(judged ...Pod) Report {
	pods := []Pod{
		{Name: "a-1", Kind: "a", Created: at(0), Started: at(0), Ended: at(10)},
		{Name: "b-1", Kind: "b", Created: at(0), Started: at(0), Ended: at(20)},
		// Created before the run was warm: not judged, however wrong.
		{Name: "a-2", Kind: "a", Created: at(5), Started: at(30), Ended: at(40),
			First: &Sighting{At: at(6), Quotagate: at(1000), Baseline: at(1000)}},
	}
	return Report{
		Command: "go run ./bench -estimates", JSON: "benchmarks-estimates.json", Slots: 2, Warm: 1, Scale: 1, Seed: 1,
		Kinds: []Kind{{Name: "a"}, {Name: "b"}},
		Pods:  append(pods, judged...),
		Queue: []int{3, 1, 2},
	}
}

func TestMarkdownJudgesThePodsCreatedOnceWarm(t *testing.T) {
	r := reportOf(
		// Quotagate 2 s off, the baseline 8 s: 4 times better.
		Pod{Name: "a-3", Kind: "a", Created: at(21), Started: at(50), Ended: at(60),
			First: &Sighting{At: at(22), Position: 3, Quotagate: at(52), Baseline: at(58), Oracle: at(54)},
			Head:  &Sighting{At: at(45), Position: 1, Quotagate: at(51), Baseline: at(50), Oracle: at(50.5)}},
		// Unknown when created: counted, not scored.
		Pod{Name: "b-2", Kind: "b", Created: at(22), Started: at(70), Ended: at(90),
			First: &Sighting{At: at(23), Position: 4, Unknown: "NoHistory", Baseline: at(75)}},
	)
	md := r.Markdown()
	for _, want := range []string{
		"| when created (first estimate) | 1 | 2.0 / 2.0 | 8.0 / 8.0 | 4.00 | ≥ 2 | yes |",
		"| at the head of the queue | 1 | 1.0 / 1.0 | 0.0 / 0.0 | 0.00 | ≥ 2 | **no** |",
		"2 of 5 Jobs were created after that",
		// The oracle 4 s off when created (the baseline 8: 2×), 0.5 s at the head (the baseline 0).
		"erred by 4.0 / 4.0 s (median / p90) when created and 0.5 / 0.5 s at the head",
		"The baseline's median error is 2.00× the oracle's when created and 0.00× at the head",
		"1 with an unknown estimate (NoHistory 1)",
		"median signed error (estimate − start, positive is late) +2.0 s for quotagate, +8.0 s for the baseline",
		// a's pods held 10, 10 and 10 s; b's 20 and 20 s.
		"| a |  | 10.0 / 10.0 | 1 | 2.0 / 1.0 | 8.0 / 0.0 |",
		"| b |  | 20.0 / 20.0 | 1 | 0.0 / 0.0 | 0.0 / 0.0 |",
		"median 2, 90th percentile 3, most 3",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
}

func TestMarkdownSaysWhenNeverWarm(t *testing.T) {
	r := reportOf()
	r.Warm = 2 // each kind had one pod ended
	md := r.Markdown()
	if want := "| — | 0 | — | — | — | ≥ 2 | **no**: some kind never had 2 pods ended |"; !strings.Contains(md, want) {
		t.Errorf("the report lacks %q:\n%s", want, md)
	}
}
