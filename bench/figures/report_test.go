package figures

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRows(t *testing.T) {
	r := Report{
		Release: &releaseResult{N: 1000, Quotagate: []float64{2, 2.5, 4}, Baseline: []float64{2, 2, 2}},
		Reaction: &reactionResult{
			Quotagate: []float64{10, 20, 60},
			Baseline:  []float64{5, 5, 10},
		},
		Webhook: &webhookResult{
			With:    map[int][]float64{1: {2, 3}, 16: {10, 11}},
			Without: map[int][]float64{1: {2, 3}, 16: {5, 5}},
		},
		Memory: &memoryResult{Points: []memoryPoint{{Pods: 0, HeapInuse: 10 << 20}, {Pods: 1024, HeapInuse: 10<<20 + 1024*1000}}},
		Core: &coreResult{Metrics: map[string]map[string][]float64{
			"BenchmarkAdmitDecisions":                      {"decisions/s": {3e5, 2e5, 4e5}},
			"BenchmarkFreeingEvent/gated-elsewhere=1000":   {"ns/op": {10000}},
			"BenchmarkFreeingEvent/gated-elsewhere=100000": {"ns/op": {12000}},
		}},
	}
	want := []Row{
		{Figure: "1. Release throughput, 1000 pods (pods/s)", Quotagate: "400 (slowest 250)", Baseline: "500 (slowest 500)", Ratio: "0.80", Goal: ">= 0.9 of baseline", Met: "**no**"},
		{Figure: "2. Reaction latency, 3 repetitions (ms)", Quotagate: "p50 20.0, p99 60.0", Baseline: "p50 5.0, p99 10.0", Ratio: "6.00 (p99)", Goal: "p99 < 50 ms", Met: "**no**"},
		{Figure: "3. Pod create latency, concurrency 1, 2 creates (ms)", Quotagate: "p50 2.0, p99 3.0", Baseline: "p50 2.0, p99 3.0", Ratio: "1.00 (p99; 95% interval 0.67 to 1.50, holds the goal: this run cannot tell)", Goal: "p99 ratio <= 1.2", Met: "yes"},
		{Figure: "3. Pod create latency, concurrency 16, 2 creates (ms)", Quotagate: "p50 10.0, p99 11.0", Baseline: "p50 5.0, p99 5.0", Ratio: "2.20 (p99; 95% interval 2.00 to 2.20, beyond the goal)", Goal: "p99 ratio <= 1.2", Met: "**no**"},
		{Figure: "4. Manager heap per gated pod, 0 to 1024 pods (bytes)", Quotagate: "1000 B/pod (11.0 MiB at 1024)", Baseline: "10.0 MiB at 0 pods", Ratio: "1.10 (heap)", Goal: "< 2 KiB/pod", Met: "yes"},
		{Figure: "5. Admission core: decisions/s, 100,000 gated pods, 1,000 budgets (3 runs)", Quotagate: "300000 (slowest 200000)", Baseline: "—", Ratio: "—", Goal: "none set", Met: "—"},
		{Figure: "5. Admission core: one freeing event, 100,000 vs 1,000 pods gated elsewhere (µs, ns)", Quotagate: "12.0", Baseline: "10.0", Ratio: "1.20", Goal: "does not grow (ratio <= 1.5)", Met: "yes"},
	}
	if diff := cmp.Diff(want, r.rows()); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
}

func TestRowsLeaveOutWhatWasNotMeasured(t *testing.T) {
	if got := (Report{}).rows(); len(got) != 0 {
		t.Errorf("rows of an empty report = %v, want none", got)
	}
}

func TestCPUTable(t *testing.T) {
	x := releaseResult{
		N: 500, Quotagate: []float64{1, 1}, Baseline: []float64{1, 1},
		QuotagateCPU: map[string]float64{"kube-apiserver": 4, "etcd": 1},
		BaselineCPU:  map[string]float64{"kube-apiserver": 3},
	}
	want := "| process | CPU s per 1,000 pods, quotagate | CPU s per 1,000 pods, bare client |\n|---|---|---|\n" +
		"| etcd | 1.00 | 0.00 |\n| kube-apiserver | 4.00 | 3.00 |\n" +
		"| all of them | 5.00 | 3.00 |\n| cores kept busy, on average | 2.50 | 1.50 |\n"
	if diff := cmp.Diff(want, cpuTable(x)); diff != "" {
		t.Errorf("cpuTable (-want +got):\n%s", diff)
	}
}

func TestCPUTableWithEventless(t *testing.T) {
	x := releaseResult{
		N: 1000, Quotagate: []float64{1}, Baseline: []float64{2}, EventlessQuotagate: []float64{1, 1},
		QuotagateCPU:          map[string]float64{"etcd": 2},
		BaselineCPU:           map[string]float64{"etcd": 1},
		EventlessQuotagateCPU: map[string]float64{"etcd": 3},
	}
	want := "| process | CPU s per 1,000 pods, quotagate | CPU s per 1,000 pods, bare client | CPU s per 1,000 pods, quotagate with events dropped |\n|---|---|---|---|\n" +
		"| etcd | 2.00 | 1.00 | 1.50 |\n| all of them | 2.00 | 1.00 | 1.50 |\n| cores kept busy, on average | 2.00 | 0.50 | 1.50 |\n"
	if diff := cmp.Diff(want, cpuTable(x)); diff != "" {
		t.Errorf("cpuTable (-want +got):\n%s", diff)
	}
}

func TestEventlessLine(t *testing.T) {
	x := releaseResult{
		N: 1000, Quotagate: []float64{4, 4}, Baseline: []float64{2, 2}, EventlessQuotagate: []float64{2.5},
		QuotagateEvents: 1500,
	}
	want := "Diagnostic, same run: with its event recorder dropping every event, the manager released 400 pods/s " +
		"(median of 1), 0.80 of the bare client's 500 pods/s; with events it released 250 pods/s and wrote 0.75 events per pod released.\n"
	if diff := cmp.Diff(want, eventlessLine(x)); diff != "" {
		t.Errorf("eventlessLine (-want +got):\n%s", diff)
	}
	if got := eventlessLine(releaseResult{N: 1}); got != "" {
		t.Errorf("eventlessLine without the diagnostic = %q, want empty", got)
	}
}

func TestCoreRowsPreferCPUTime(t *testing.T) {
	x := coreResult{Metrics: map[string]map[string][]float64{
		"BenchmarkFreeingEvent/gated-elsewhere=1000":   {"ns/op": {50000}, "cpu-ns/op": {20000}},
		"BenchmarkFreeingEvent/gated-elsewhere=100000": {"ns/op": {90000}, "cpu-ns/op": {22000}},
	}}
	want := []Row{{
		Figure:    "5. Admission core: one freeing event, 100,000 vs 1,000 pods gated elsewhere (µs, cpu-ns)",
		Quotagate: "22.0", Baseline: "20.0", Ratio: "1.10", Goal: "does not grow (ratio <= 1.5)", Met: "yes",
	}}
	if diff := cmp.Diff(want, coreRows(x)); diff != "" {
		t.Errorf("coreRows (-want +got):\n%s", diff)
	}
}

func TestCoreTable(t *testing.T) {
	x := coreResult{Metrics: map[string]map[string][]float64{
		"BenchmarkB": {"ns/op": {3, 1, 2}, "B/op": {10}},
		"BenchmarkA": {"decisions/s": {250000}},
	}}
	want := "| benchmark | median of each metric |\n|---|---|\n| A | 2.5e+05 decisions/s |\n| B | 10 B/op, 2 ns/op |\n"
	if diff := cmp.Diff(want, coreTable(x)); diff != "" {
		t.Errorf("coreTable (-want +got):\n%s", diff)
	}
}

func TestFirstLine(t *testing.T) {
	x := releaseResult{FirstQuotagate: []float64{0.2, 0.1, 0.3}, FirstBaseline: []float64{0.05}, UngateErrors: map[string]float64{"timeout": 2, "conflict": 1}}
	want := "First pod seen released after (median of 3): 200 ms from the Budget raise with quotagate, " +
		"50 ms from the first patch with the bare client. Ungate errors: conflict 1, timeout 2.\n"
	if diff := cmp.Diff(want, firstLine(x)); diff != "" {
		t.Errorf("firstLine (-want +got):\n%s", diff)
	}
	if got := firstLine(releaseResult{}); got != "" {
		t.Errorf("firstLine of nothing = %q, want empty", got)
	}
}

func TestShortenShapes(t *testing.T) {
	for in, want := range map[string]string{
		"0.44s  6.76%  k8s.io/apiserver/pkg/admission/plugin/policy/generic.(*Plugin[go.shape.struct { Policy *v1.MutatingAdmissionPolicy; Bindings []*v1.MutatingAdmissionPolicyBinding }]).Dispatch": "0.44s  6.76%  k8s.io/apiserver/pkg/admission/plugin/policy/generic.(*Plugin[…]).Dispatch",
		"generic.(*policyDispatcher[go.shape.*uint8,go.shape.*uint8]).Dispatch and x[go.shape.int]":                                                                                                    "generic.(*policyDispatcher[…]).Dispatch and x[…]",
		"slices.Sort[[]int] has no shape":        "slices.Sort[[]int] has no shape",
		"an unclosed [go.shape.struct { a []int": "an unclosed […]",
	} {
		if got := shortenShapes(in); got != want {
			t.Errorf("shortenShapes(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUngateSectionBacklogTimes(t *testing.T) {
	serie := func(bound ...float64) []ungateSerie {
		return []ungateSerie{{Mode: "policy", Load: "backlog", Quotagate: []float64{1}, Baseline: []float64{1}, BacklogBound: bound}}
	}
	for name, tc := range map[string]struct {
		x    ungateResult
		want string
	}{
		"three repetitions": {ungateResult{N: 200, Reps: 3, Series: serie(1000, 2500, 3000)},
			"The backlog was bound 1.0, 2.5, 3.0 s after its ungate began, in each repetition."},
		"one repetition": {ungateResult{N: 200, Reps: 1, Series: serie(1500)},
			"The backlog was bound 1.5 s after its ungate began."},
		"a report from before the pairing": {ungateResult{N: 200, Series: serie(1000, 2000)},
			"bound 1.0 s (quotagate arm) and 2.0 s (baseline arm)"},
	} {
		if got := ungateSection(tc.x); !strings.Contains(got, tc.want) {
			t.Errorf("%s: ungateSection says\n%s\nwant it to contain %q", name, got, tc.want)
		}
	}
	x := ungateResult{N: 2, Reps: 1, Series: []ungateSerie{{Mode: "webhook", Load: "idle",
		Quotagate: []float64{1, 9}, Baseline: []float64{1, 2}, BaselineAllPods: []float64{1, 5}}}}
	if want := "A bare watcher of every pod (a third arm, in a namespace of its own: the manager's view of the cluster, backlog events included): p50 1.0, p99 5.0 ms; quotagate's p99 +4.0 ms from it."; !strings.Contains(ungateSection(x), want) {
		t.Errorf("ungateSection says\n%s\nwant it to contain %q", ungateSection(x), want)
	}
}

// Figure 7 gives the p99 difference with its bootstrap interval, and says what the
// interval tells about the goal: met, missed, or not decided by the run.
func TestUngateDifferenceInterval(t *testing.T) {
	flat := func(v float64, n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	for name, tc := range map[string]struct {
		q, b []float64
		want string
	}{
		"met":  {flat(5.5, 100), flat(5, 100), "+0.5 ms from the bare watcher's; 95% interval +0.5 to +0.5 ms (bootstrap, 2000 resamples of each arm): within the goal of 2 ms even at the interval's top."},
		"miss": {flat(15, 100), flat(5, 100), "+10.0 ms from the bare watcher's; 95% interval +10.0 to +10.0 ms (bootstrap, 2000 resamples of each arm): beyond the goal of 2 ms even at the interval's bottom."},
		// One slow sample in 100 in quotagate's arm: some resamples leave it out.
		"undecided": {append(flat(5, 99), 50), flat(5, 100), "the interval holds 2 ms, so this run cannot tell whether the goal is met."},
	} {
		x := ungateResult{N: len(tc.q), Reps: 1, Series: []ungateSerie{{Mode: "policy", Load: "idle", Quotagate: tc.q, Baseline: tc.b}}}
		if got := ungateSection(x); !strings.Contains(got, tc.want) {
			t.Errorf("%s: ungateSection says\n%s\nwant it to contain %q", name, got, tc.want)
		}
	}
	x := ungateResult{N: 2, Series: []ungateSerie{{Mode: "policy", Load: "idle", Quotagate: flat(7, 10), Baseline: flat(5, 10)}}}
	if got, want := ungateRows(x)[0].Ratio, "+2.0 ms (p99; 95% interval +2.0 to +2.0)"; got != want {
		t.Errorf("summary ratio %q, want %q", got, want)
	}
}

func TestCreateRatios(t *testing.T) {
	x := webhookResult{
		With:        map[int][]float64{1: {4, 4, 4, 4}},
		BareWebhook: map[int][]float64{1: {3.2, 3.2, 3.2, 3.2}},
		Policy:      map[int][]float64{1: {3, 3, 3, 3}},
		GateOnly:    map[int][]float64{1: {2.5, 2.5, 2.5, 2.5}},
		Without:     map[int][]float64{1: {2, 2, 2, 2}},
	}
	want := "| creates | concurrency | p50 ratio (95% interval) | p99 ratio (95% interval) |\n|---|---|---|---|\n" +
		"| webhook / none | 1 | 2.00 (2.00 to 2.00) | 2.00 (2.00 to 2.00) |\n" +
		"| bare webhook / none | 1 | 1.60 (1.60 to 1.60) | 1.60 (1.60 to 1.60) |\n" +
		"| webhook / bare webhook | 1 | 1.25 (1.25 to 1.25) | 1.25 (1.25 to 1.25) |\n" +
		"| gate policy / none | 1 | 1.50 (1.50 to 1.50) | 1.50 (1.50 to 1.50) |\n" +
		"| mutation alone / none | 1 | 1.25 (1.25 to 1.25) | 1.25 (1.25 to 1.25) |\n" +
		"| gate policy / mutation alone | 1 | 1.20 (1.20 to 1.20) | 1.20 (1.20 to 1.20) |\n"
	if diff := cmp.Diff(want, createRatios(x)); diff != "" {
		t.Errorf("createRatios (-want +got):\n%s", diff)
	}

	// A report from before the floor arms renders the comparisons it has.
	x.GateOnly, x.BareWebhook = nil, nil
	got := createRatios(x)
	if strings.Contains(got, "mutation alone") || strings.Contains(got, "bare webhook") || !strings.Contains(got, "| gate policy / none | 1 | 1.50") {
		t.Errorf("createRatios without the mutation-alone arm:\n%s", got)
	}
}

func TestGateOnlyRowIsNotJudged(t *testing.T) {
	r := Report{Webhook: &webhookResult{
		With:     map[int][]float64{1: {2}},
		GateOnly: map[int][]float64{1: {3}},
		Without:  map[int][]float64{1: {2}},
	}}
	rows := r.rows()
	last := rows[len(rows)-1]
	if !strings.Contains(last.Figure, "mutation alone") || last.Met != "—" || !strings.HasPrefix(last.Ratio, "1.50 (p99") {
		t.Errorf("the mutation-alone row = %+v, want it unjudged with its p99 ratio 1.50", last)
	}
}

func TestFlavoredRows(t *testing.T) {
	r := Report{
		Release: &releaseResult{
			N: 1000, Quotagate: []float64{2, 2.5, 4}, Baseline: []float64{2, 2, 2},
			Flavors: 2, Flavored: []float64{2, 3, 5},
		},
		Reaction: &reactionResult{
			Quotagate: []float64{10, 20, 40},
			Baseline:  []float64{5, 5, 10},
			Flavors:   2,
			Flavored:  []float64{10, 20, 30},
		},
	}
	want := []Row{
		{Figure: "1. Release throughput, 1000 pods (pods/s)", Quotagate: "400 (slowest 250)", Baseline: "500 (slowest 500)", Ratio: "0.80", Goal: ">= 0.9 of baseline", Met: "**no**"},
		{
			Figure:    "1. Release throughput, 1000 pods, the budget split over 2 Flavors, against one Budget (pods/s)",
			Quotagate: "333 (slowest 200)", Baseline: "400 (slowest 250), no flavors", Ratio: "0.83",
			Goal: "median >= the slowest repetition without flavors", Met: "yes",
		},
		{Figure: "2. Reaction latency, 3 repetitions (ms)", Quotagate: "p50 20.0, p99 40.0", Baseline: "p50 5.0, p99 10.0", Ratio: "4.00 (p99)", Goal: "p99 < 50 ms", Met: "yes"},
		{
			Figure:    "2. Reaction latency, each pod admitted on the last of 2 Flavors, against one Budget, 3 repetitions (ms)",
			Quotagate: "p50 20.0, p99 30.0", Baseline: "p50 20.0, p99 40.0, no flavors", Ratio: "0.75 (p99; 95% interval 0.25 to 3.00)",
			Goal: "p99 < 50 ms", Met: "yes",
		},
	}
	if diff := cmp.Diff(want, r.rows()); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}

	// A flavored median below every plain repetition misses the goal, and a flavored
	// chain is judged by its own p99.
	r.Release.Flavored = []float64{4.5, 5, 5}
	r.Reaction.Flavored = []float64{10, 20, 60}
	rows := r.rows()
	if got := rows[1]; got.Met != "**no**" || got.Quotagate != "200 (slowest 200)" {
		t.Errorf("flavored release row with a median of 200 pods/s against a slowest plain 250 = %+v, want it missed", got)
	}
	if got := rows[3]; got.Met != "**no**" || got.Quotagate != "p50 20.0, p99 60.0" {
		t.Errorf("flavored reaction row with a p99 of 60 ms = %+v, want it missed", got)
	}
}

func TestCPUTableWithFlavored(t *testing.T) {
	x := releaseResult{
		N: 1000, Quotagate: []float64{1}, Baseline: []float64{2}, Flavors: 2, Flavored: []float64{2, 2},
		EventlessQuotagate:    []float64{1},
		QuotagateCPU:          map[string]float64{"etcd": 2},
		BaselineCPU:           map[string]float64{"etcd": 1},
		FlavoredCPU:           map[string]float64{"etcd": 6},
		EventlessQuotagateCPU: map[string]float64{"etcd": 1},
	}
	want := "| process | CPU s per 1,000 pods, quotagate | CPU s per 1,000 pods, bare client | CPU s per 1,000 pods, quotagate over 2 flavors | CPU s per 1,000 pods, quotagate with events dropped |\n|---|---|---|---|---|\n" +
		"| etcd | 2.00 | 1.00 | 3.00 | 1.00 |\n| all of them | 2.00 | 1.00 | 3.00 | 1.00 |\n| cores kept busy, on average | 2.00 | 0.50 | 1.50 | 1.00 |\n"
	if diff := cmp.Diff(want, cpuTable(x)); diff != "" {
		t.Errorf("cpuTable (-want +got):\n%s", diff)
	}
}

func TestFlavoredLine(t *testing.T) {
	x := releaseResult{
		N: 1000, Quotagate: []float64{2, 4}, FirstQuotagate: []float64{0.1, 0.3}, QuotagateEvents: 3,
		Flavors: 2, Flavored: []float64{2.5, 5}, FirstFlavored: []float64{0.05, 0.05}, FlavoredEvents: 4,
		FlavoredUngateErrors: map[string]float64{"conflict": 2},
	}
	want := "The budget split over 2 Flavors, same run, repetitions alternating with the plain arm's: 400, 200 pods/s in each repetition, " +
		"against 500, 250 pods/s without flavors; first pod after 50 ms (median), against 100 ms; 4 events written while releasing, against 3. " +
		"Ungate errors: conflict 2.\n"
	if diff := cmp.Diff(want, flavoredLine(x)); diff != "" {
		t.Errorf("flavoredLine (-want +got):\n%s", diff)
	}
	if got := flavoredLine(releaseResult{N: 1000, Quotagate: []float64{1}}); got != "" {
		t.Errorf("flavoredLine without the flavored arm = %q, want empty", got)
	}
	if md := (Report{Release: &x}).Markdown(); !strings.Contains(md, want) || !strings.Contains(md, "| 1. Release throughput, 1000 pods, the budget split over 2 Flavors") {
		t.Errorf("the Markdown report lacks the flavored arm's line or row:\n%s", md)
	}
}

func TestSplitN(t *testing.T) {
	for _, tc := range []struct {
		n, k int
		want []int
	}{{300, 2, []int{150, 150}}, {301, 2, []int{151, 150}}, {10, 3, []int{4, 3, 3}}, {5, 1, []int{5}}} {
		if diff := cmp.Diff(tc.want, splitN(tc.n, tc.k)); diff != "" {
			t.Errorf("splitN(%d, %d) (-want +got):\n%s", tc.n, tc.k, diff)
		}
	}
}

// Figure 9's row judges the window arm's p99 against a second, beside the edit arm.
func TestWindowEdgeRow(t *testing.T) {
	for _, tc := range []struct {
		window []float64
		want   Row
	}{
		{[]float64{12, 20, 900}, Row{Figure: "9. Window edge to first ungate, 3 windows (ms)", Quotagate: "p50 20.0, p99 900.0",
			Baseline: "p50 15.0, p99 30.0 (the same raise by hand, from its patch)", Ratio: "30.00 (p99)", Goal: "p99 < 1000 ms", Met: "yes"}},
		{[]float64{12, 20, 1200}, Row{Figure: "9. Window edge to first ungate, 3 windows (ms)", Quotagate: "p50 20.0, p99 1200.0",
			Baseline: "p50 15.0, p99 30.0 (the same raise by hand, from its patch)", Ratio: "40.00 (p99)", Goal: "p99 < 1000 ms", Met: "**no**"}},
	} {
		r := Report{WindowEdge: &windowEdgeResult{Rounds: 3, Window: tc.window, Edit: []float64{10, 15, 30}}}
		if diff := cmp.Diff([]Row{tc.want}, r.rows()); diff != "" {
			t.Errorf("rows (-want +got):\n%s", diff)
		}
		if md := r.Markdown(); !strings.Contains(md, "### Window edge → first ungate (figure 9)") {
			t.Errorf("the report has no section for figure 9:\n%s", md)
		}
	}
}
