package estimates

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(seconds(s)) }

func TestBaseline(t *testing.T) {
	tests := map[string]struct {
		position, slots int
		mean            time.Duration
		want            time.Time
	}{
		"the head of a queue of 8 slots waits an eighth of a run": {position: 1, slots: 8, mean: 40 * time.Second, want: at(5)},
		"the 12th waits a run and a half":                         {position: 12, slots: 8, mean: 40 * time.Second, want: at(60)},
		"one slot: a run per position":                            {position: 3, slots: 1, mean: 10 * time.Second, want: at(30)},
		"no run seen yet: no estimate":                            {position: 3, slots: 8, mean: 0, want: time.Time{}},
		"no slot: no estimate":                                    {position: 3, slots: 0, mean: time.Second, want: time.Time{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Baseline(t0, tc.position, tc.mean, tc.slots)); diff != "" {
				t.Errorf("Baseline (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMeanRun(t *testing.T) {
	started := map[string]time.Time{"a": at(0), "b": at(10), "c": at(30), "d": at(30)}
	ended := map[string]time.Time{
		"a": at(10), // 10 s
		"b": at(40), // 30 s
		"c": at(80), // 50 s, ending after 60 s
		"x": at(5),  // never seen started: not a run
	}
	if diff := cmp.Diff(20*time.Second, MeanRun(started, ended, at(60))); diff != "" {
		t.Errorf("MeanRun at 60 s (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(30*time.Second, MeanRun(started, ended, at(100))); diff != "" {
		t.Errorf("MeanRun at 100 s, c ended (-want +got):\n%s", diff)
	}
	if got := MeanRun(started, ended, at(5)); got != 0 {
		t.Errorf("MeanRun before any end = %s, want 0", got)
	}
}

func TestWarmAt(t *testing.T) {
	pods := []Pod{
		{Kind: "a", Ended: at(10)}, {Kind: "a", Ended: at(30)}, {Kind: "a", Ended: at(20)},
		{Kind: "b", Ended: at(50)}, {Kind: "b", Ended: at(15)},
		{Kind: "b"}, // not ended
	}
	got, ok := WarmAt(pods, []string{"a", "b"}, 2)
	if !ok {
		t.Fatal("WarmAt with 2 ends of each kind: not warm")
	}
	// a's 2nd end is at 20 s, b's at 50 s: warm when the later kind is.
	if diff := cmp.Diff(at(50), got); diff != "" {
		t.Errorf("WarmAt (-want +got):\n%s", diff)
	}
	if _, ok := WarmAt(pods, []string{"a", "b"}, 3); ok {
		t.Error("WarmAt with 3 ends of a and 2 of b asked for 3: warm, want not")
	}
	if _, ok := WarmAt(pods, []string{"a", "b", "c"}, 1); ok {
		t.Error("WarmAt with a kind that never ended: warm, want not")
	}
}

func TestJudged(t *testing.T) {
	pods := []Pod{{Name: "late", Created: at(30)}, {Name: "early", Created: at(5)}, {Name: "on-time", Created: at(10)}, {Name: "mid", Created: at(20)}}
	var got []string
	for _, p := range Judged(pods, at(10)) {
		got = append(got, p.Name)
	}
	if diff := cmp.Diff([]string{"mid", "late"}, got); diff != "" {
		t.Errorf("Judged after 10 s, in creation order (-want +got):\n%s", diff)
	}
}

func TestErrorsAt(t *testing.T) {
	pods := []Pod{
		// Started at 100 s; quotagate said 90 (10 s early), the baseline 130 (30 s late).
		{Name: "scored", Started: at(100), First: &Sighting{At: at(40), Quotagate: at(90), Baseline: at(130)}},
		// Quotagate 5 s late, the baseline 5 s early.
		{Name: "scored-2", Started: at(60), First: &Sighting{At: at(50), Quotagate: at(65), Baseline: at(55)}},
		{Name: "unknown", Started: at(80), First: &Sighting{At: at(45), Unknown: "NoHistory", Baseline: at(70)}},
		{Name: "no-baseline", Started: at(80), First: &Sighting{At: at(1), Quotagate: at(70)}},
		{Name: "never-sighted", Started: at(2)},
		{Name: "never-started", First: &Sighting{At: at(3), Quotagate: at(70), Baseline: at(70)}},
	}
	got := ErrorsAt(pods, func(p Pod) *Sighting { return p.First })
	want := Errors{
		Pods: 4, Unknown: 1, Reasons: map[string]int{"NoHistory": 1}, NoBaseline: 1,
		Quotagate: []float64{10, 5}, Baseline: []float64{30, 5},
		QuotagateSigned: []float64{-10, 5}, BaselineSigned: []float64{30, -5},
		Waits: []float64{60, 10},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ErrorsAt (-want +got):\n%s", diff)
	}
}

func TestQuantilesOf(t *testing.T) {
	samples := []float64{9, 1, 8, 2, 7, 3, 6, 4, 5, 10}
	if diff := cmp.Diff(Quantiles{N: 10, P50: 5, P90: 9}, QuantilesOf(samples)); diff != "" {
		t.Errorf("QuantilesOf 1..10 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(9.0, samples[0]); diff != "" {
		t.Errorf("QuantilesOf sorted its samples in place (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Quantiles{}, QuantilesOf(nil)); diff != "" {
		t.Errorf("QuantilesOf nothing (-want +got):\n%s", diff)
	}
}

func TestImprovement(t *testing.T) {
	tests := map[string]struct {
		errors Errors
		want   float64
	}{
		"the baseline's median twice the manager's": {Errors{Quotagate: []float64{1, 2, 3}, Baseline: []float64{2, 4, 6}}, 2},
		"the manager worse":                         {Errors{Quotagate: []float64{4}, Baseline: []float64{1}}, 0.25},
		"no errors":                                 {Errors{}, 0},
		"the manager exact":                         {Errors{Quotagate: []float64{0}, Baseline: []float64{3}}, math.Inf(1)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.errors.Improvement()); diff != "" {
				t.Errorf("Improvement (-want +got):\n%s", diff)
			}
		})
	}
}

// Pods are joined to their Jobs by namespace and name: two namespaces may hold Jobs
// of one name, and a Job of a high priority keeps it.
func TestAssemble(t *testing.T) {
	jobs := []job{
		{namespace: "a", name: "uniform-x7k2p", kind: "uniform", created: at(0)},
		{namespace: "b", name: "uniform-x7k2p", kind: "uniform", priority: High, created: at(0.5)},
		{namespace: "a", name: "bimodal-bcdfg", kind: "bimodal", created: at(1)},
		{namespace: "a", name: "lognormal-zzzzz", kind: "lognormal", created: at(2)}, // its pod never seen
	}
	first := &Sighting{At: at(2), Position: 3}
	got := assemble(jobs,
		map[string]time.Time{"a/uniform-x7k2p-abcde": at(0.5), "a/bimodal-bcdfg-22222": at(9), "b/uniform-x7k2p-fghij": at(3)},
		map[string]time.Time{"a/uniform-x7k2p-abcde": at(20)},
		map[string]*Sighting{"a/bimodal-bcdfg-22222": first},
		map[string]*Sighting{})
	want := []Pod{
		{Name: "a/uniform-x7k2p-abcde", Kind: "uniform", Created: at(0), Started: at(0.5), Ended: at(20)},
		{Name: "b/uniform-x7k2p-fghij", Kind: "uniform", Priority: High, Created: at(0.5), Started: at(3)},
		{Name: "a/bimodal-bcdfg-22222", Kind: "bimodal", Created: at(1), Started: at(9), First: first},
		{Kind: "lognormal", Created: at(2)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("assemble (-want +got):\n%s", diff)
	}
}

func TestByPosition(t *testing.T) {
	sighted := func(name string, position int, early float64) Pod {
		return Pod{Name: name, Started: at(100), First: &Sighting{At: at(10), Position: position, Quotagate: at(100 - early), Baseline: at(100)}}
	}
	judged := []Pod{
		sighted("p1", 1, 1), sighted("p4", 4, 1),
		// none at 5 to 8
		sighted("p9", 9, 6), sighted("p12", 12, 8), sighted("p10", 10, 7),
		{Name: "never-sighted", Started: at(5)},
	}
	var got []string
	for _, b := range ByPosition(judged, func(p Pod) *Sighting { return p.First }, 4) {
		got = append(got, fmt.Sprintf("%d-%d: %v", b.From, b.To, b.Errors.QuotagateSigned))
	}
	want := []string{"1-4: [-1 -1]", "9-12: [-6 -8 -7]"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ByPosition in bands of 4 (-want +got):\n%s", diff)
	}
	if n := len(ByPosition(judged, func(p Pod) *Sighting { return p.First }, 0)); n != 5 {
		t.Errorf("ByPosition in bands of 0 (taken as 1): %d bands, want 5 (positions 1, 4, 9, 10 and 12)", n)
	}
}
