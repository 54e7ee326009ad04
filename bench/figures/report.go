package figures

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/quotagate/quotagate/bench/report"
)

// Report is everything a run measured; bench/figures/benchmarks.json is this, and
// docs/benchmarks.md is rendered from it.
type Report struct {
	Date    string `json:"date"`
	Command string `json:"command"`
	// JSON is the file name of the JSON report, beside the Markdown one (unset in
	// reports written before it: benchmarks.json).
	JSON     string          `json:"json,omitempty"`
	Took     string          `json:"took"`
	Machine  report.Machine  `json:"machine"`
	Manager  ManagerSettings `json:"managerSettings"`
	Release  *releaseResult  `json:"releaseThroughput,omitempty"`
	Reaction *reactionResult `json:"reactionLatency,omitempty"`
	Webhook  *webhookResult  `json:"webhookCost,omitempty"`
	Memory   *memoryResult   `json:"memory,omitempty"`
	Core     *coreResult     `json:"core,omitempty"`
	EndToEnd *releaseResult  `json:"endToEnd,omitempty"`
	// CreateToUngate is figure 7 (ungate.go).
	CreateToUngate *ungateResult `json:"createToUngate,omitempty"`
	// Estimates is figure 8 (estimates.go).
	Estimates *estimatesResult `json:"estimatesOnOff,omitempty"`
	// WindowEdge is figure 9 (windowedge.go).
	WindowEdge *windowEdgeResult `json:"windowEdge,omitempty"`
	// Profiles are `go tool pprof -top` of the profiles taken, by what they profile.
	Profiles map[string]string `json:"profiles,omitempty"`
}

// Row is one line of the summary table.
type Row struct {
	Figure, Quotagate, Baseline, Ratio, Goal, Met string
}

// rows renders the summary table from the report; figures not measured are left out.
func (r Report) rows() []Row {
	var rows []Row
	if x := r.Release; x != nil {
		rows = append(rows, releaseRow(fmt.Sprintf("1. Release throughput, %d pods (pods/s)", x.N), *x, 0.9))
		if len(x.Flavored) > 0 {
			rows = append(rows, flavoredReleaseRow(*x))
		}
	}
	if x := r.Reaction; x != nil {
		q, b := report.Summarize(x.Quotagate), report.Summarize(x.Baseline)
		rows = append(rows, Row{
			Figure:    fmt.Sprintf("2. Reaction latency, %d repetitions (ms)", q.N),
			Quotagate: fmt.Sprintf("p50 %.1f, p99 %.1f", q.P50, q.P99),
			Baseline:  fmt.Sprintf("p50 %.1f, p99 %.1f", b.P50, b.P99),
			Ratio:     fmt.Sprintf("%.2f (p99)", report.Ratio(q.P99, b.P99)),
			Goal:      "p99 < 50 ms",
			Met:       report.YesNo(q.N > 0 && q.P99 < 50),
		})
		if len(x.Flavored) > 0 {
			rows = append(rows, flavoredReactionRow(*x))
		}
	}
	if x := r.Webhook; x != nil {
		rows = append(rows, createRows("", x.With, x.Without, 1.2, "")...)
		rows = append(rows, createRows(" with the gate policy", x.Policy, x.Without, 1.1, "")...)
		rows = append(rows, createRows(" with a bare webhook that only adds the gate (the floor for gating by webhook)",
			x.BareWebhook, x.Without, 1.2, "none: what any gating webhook costs")...)
		rows = append(rows, createRows(" with the policy's mutation alone (the API server's floor for gating by policy)",
			x.GateOnly, x.Without, 1.1, "none: what any gate policy costs")...)
	}
	if x := r.Memory; x != nil && len(x.Points) >= 2 {
		first, last := x.Points[0], x.Points[len(x.Points)-1]
		per := x.perPod()
		rows = append(rows, Row{
			Figure:    fmt.Sprintf("4. Manager heap per gated pod, %d to %d pods (bytes)", first.Pods, last.Pods),
			Quotagate: fmt.Sprintf("%.0f B/pod (%.1f MiB at %d)", per, report.MiB(last.HeapInuse), last.Pods),
			Baseline:  fmt.Sprintf("%.1f MiB at %d pods", report.MiB(first.HeapInuse), first.Pods),
			Ratio:     fmt.Sprintf("%.2f (heap)", report.Ratio(float64(last.HeapInuse), float64(first.HeapInuse))),
			Goal:      "< 2 KiB/pod",
			Met:       report.YesNo(per < 2048),
		})
	}
	if x := r.Core; x != nil {
		rows = append(rows, coreRows(*x)...)
	}
	if x := r.EndToEnd; x != nil {
		rows = append(rows, releaseRow(fmt.Sprintf("6. Freed capacity to Running on kwok, %d pods (pods/s)", x.N), *x, 0.9))
	}
	if x := r.CreateToUngate; x != nil {
		rows = append(rows, ungateRows(*x)...)
	}
	if x := r.Estimates; x != nil {
		rows = append(rows, estimatesRows(*x)...)
	}
	if x := r.WindowEdge; x != nil {
		rows = append(rows, windowEdgeRow(*x))
	}
	return rows
}

// createRows is figure 3's rows for one admission setting, one per concurrency: its
// creates against the baseline's, judged against a p99 ratio of limit. For a floor,
// unjudged is what its goal column says instead: its rows still give the interval's
// verdict against limit, and are not judged.
func createRows(setting string, with, without map[int][]float64, limit float64, unjudged string) []Row {
	var rows []Row
	for _, c := range slices.Sorted(maps.Keys(with)) {
		w, wo := report.Summarize(with[c]), report.Summarize(without[c])
		goal, met := unjudged, "—"
		if unjudged == "" {
			goal, met = fmt.Sprintf("p99 ratio <= %.1f", limit), report.YesNo(w.N > 0 && report.Ratio(w.P99, wo.P99) <= limit)
		}
		rows = append(rows, Row{
			Figure:    fmt.Sprintf("3. Pod create latency%s, concurrency %d, %d creates (ms)", setting, c, w.N),
			Quotagate: fmt.Sprintf("p50 %.1f, p99 %.1f", w.P50, w.P99),
			Baseline:  fmt.Sprintf("p50 %.1f, p99 %.1f", wo.P50, wo.P99),
			Ratio:     createRatio(with[c], without[c], limit),
			Goal:      goal,
			Met:       met,
		})
	}
	return rows
}

// createRatio is figure 3's p99 ratio of an admission setting's creates to the
// baseline's, with its 95% bootstrap interval and what the interval says of the goal:
// the p99 of 1,000 creates is their tenth slowest, and moves between runs.
func createRatio(with, without []float64, goal float64) string {
	w, wo := report.Summarize(with), report.Summarize(without)
	x := report.Ratio(w.P99, wo.P99)
	lo, hi, ok := report.RatioInterval(with, without, 99)
	if !ok {
		return fmt.Sprintf("%.2f (p99)", x)
	}
	verdict := "holds the goal: this run cannot tell"
	switch {
	case hi <= goal:
		verdict = "within the goal"
	case lo > goal:
		verdict = "beyond the goal"
	}
	return fmt.Sprintf("%.2f (p99; 95%% interval %.2f to %.2f, %s)", x, lo, hi, verdict)
}

// createRatios renders figure 3's ratios at the median and the p99, each with its 95%
// bootstrap interval: every admission setting against the creates with none, the
// webhook against the bare webhook (what its code, its skip rules and its selector
// add), and the shipped policy against its mutation alone (what its match conditions,
// its bound-pod guard and its selector add).
func createRatios(x webhookResult) string {
	type pair struct {
		what          string
		with, without map[int][]float64
	}
	pairs := []pair{
		{"webhook / none", x.With, x.Without},
		{"bare webhook / none", x.BareWebhook, x.Without},
		{"webhook / bare webhook", x.With, x.BareWebhook},
		{"gate policy / none", x.Policy, x.Without},
		{"mutation alone / none", x.GateOnly, x.Without},
		{"gate policy / mutation alone", x.Policy, x.GateOnly},
	}
	cell := func(with, without []float64, p float64) string {
		lo, hi, ok := report.RatioInterval(with, without, p)
		if !ok {
			return "—"
		}
		at := func(xs []float64) float64 { return report.Percentile(slices.Sorted(slices.Values(xs)), p) }
		return fmt.Sprintf("%.2f (%.2f to %.2f)", report.Ratio(at(with), at(without)), lo, hi)
	}
	var b strings.Builder
	b.WriteString("| creates | concurrency | p50 ratio (95% interval) | p99 ratio (95% interval) |\n|---|---|---|---|\n")
	for _, pr := range pairs {
		for _, c := range slices.Sorted(maps.Keys(pr.with)) {
			if len(pr.without[c]) == 0 {
				continue
			}
			fmt.Fprintf(&b, "| %s | %d | %s | %s |\n", pr.what, c, cell(pr.with[c], pr.without[c], 50), cell(pr.with[c], pr.without[c], 99))
		}
	}
	return b.String()
}

// releaseRow compares pods/s from the median and slowest repetitions.
func releaseRow(figure string, x releaseResult, goal float64) Row {
	q, b := report.Summarize(x.Quotagate), report.Summarize(x.Baseline)
	rate := func(s report.Summary) string {
		return fmt.Sprintf("%.0f (slowest %.0f)", report.Ratio(float64(x.N), s.P50), report.Ratio(float64(x.N), s.Max))
	}
	rq := report.Ratio(report.Ratio(float64(x.N), q.P50), report.Ratio(float64(x.N), b.P50))
	return Row{
		Figure: figure, Quotagate: rate(q), Baseline: rate(b),
		Ratio: fmt.Sprintf("%.2f", rq), Goal: fmt.Sprintf(">= %.1f of baseline", goal), Met: report.YesNo(q.N > 0 && rq >= goal),
	}
}

// coreRows: decisions/s of one Admit over 100,000 pods, and the cost of a freeing event
// with 100,000 pods gated elsewhere against 1,000 (it must not grow).
func coreRows(x coreResult) []Row {
	var rows []Row
	if d := x.Metrics["BenchmarkAdmitDecisions"]["decisions/s"]; len(d) > 0 {
		s := report.Summarize(d)
		rows = append(rows, Row{
			Figure:    fmt.Sprintf("5. Admission core: decisions/s, 100,000 gated pods, 1,000 budgets (%d runs)", s.N),
			Quotagate: fmt.Sprintf("%.0f (slowest %.0f)", s.P50, s.Min),
			Baseline:  "—", Ratio: "—", Goal: "none set", Met: "—",
		})
	}
	// CPU time per operation, where the benchmark reports it, is steadier than wall
	// time on a shared machine.
	unit := "ns/op"
	if len(x.Metrics["BenchmarkFreeingEvent/gated-elsewhere=1000"]["cpu-ns/op"]) > 0 {
		unit = "cpu-ns/op"
	}
	small := x.Metrics["BenchmarkFreeingEvent/gated-elsewhere=1000"][unit]
	large := x.Metrics["BenchmarkFreeingEvent/gated-elsewhere=100000"][unit]
	if len(small) > 0 && len(large) > 0 {
		s, l := report.Summarize(small), report.Summarize(large)
		rows = append(rows, Row{
			Figure:    "5. Admission core: one freeing event, 100,000 vs 1,000 pods gated elsewhere (µs, " + strings.TrimSuffix(unit, "/op") + ")",
			Quotagate: fmt.Sprintf("%.1f", l.P50/1000),
			Baseline:  fmt.Sprintf("%.1f", s.P50/1000),
			Ratio:     fmt.Sprintf("%.2f", report.Ratio(l.P50, s.P50)),
			Goal:      "does not grow (ratio <= 1.5)",
			Met:       report.YesNo(report.Ratio(l.P50, s.P50) <= 1.5),
		})
	}
	return rows
}

// table renders rows as a Markdown table.
func table(rows []Row) string {
	var b strings.Builder
	b.WriteString("| figure | quotagate | baseline | ratio | goal | met? |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", r.Figure, r.Quotagate, r.Baseline, r.Ratio, r.Goal, r.Met)
	}
	return b.String()
}

// cpuTable renders the CPU seconds each process used while each releaser worked, per
// 1,000 pods released, then their total and how many cores that kept busy on average.
func cpuTable(x releaseResult) string {
	if len(x.Quotagate) == 0 || x.N == 0 {
		return ""
	}
	type column struct {
		cpu  map[string]float64
		runs []float64 // seconds per repetition
	}
	cols := []column{{x.QuotagateCPU, x.Quotagate}, {x.BaselineCPU, x.Baseline}}
	header := "| process | CPU s per 1,000 pods, quotagate | CPU s per 1,000 pods, bare client |"
	if len(x.Flavored) > 0 {
		cols = append(cols, column{x.FlavoredCPU, x.Flavored})
		header += fmt.Sprintf(" CPU s per 1,000 pods, quotagate over %d flavors |", x.Flavors)
	}
	if len(x.EventlessQuotagate) > 0 {
		cols = append(cols, column{x.EventlessQuotagateCPU, x.EventlessQuotagate})
		header += " CPU s per 1,000 pods, quotagate with events dropped |"
	}
	var b strings.Builder
	b.WriteString(header + "\n|---" + strings.Repeat("|---", len(cols)) + "|\n")
	totals := make([]float64, len(cols))
	per := func(c column) float64 { return float64(len(c.runs)*x.N) / 1000 }
	for _, n := range slices.Sorted(maps.Keys(x.QuotagateCPU)) {
		b.WriteString("| " + n + " |")
		for i, c := range cols {
			fmt.Fprintf(&b, " %.2f |", report.Ratio(c.cpu[n], per(c)))
			totals[i] += c.cpu[n]
		}
		b.WriteString("\n")
	}
	b.WriteString("| all of them |")
	for i, c := range cols {
		fmt.Fprintf(&b, " %.2f |", report.Ratio(totals[i], per(c)))
	}
	b.WriteString("\n| cores kept busy, on average |")
	for i, c := range cols {
		var wall float64
		for _, r := range c.runs {
			wall += r
		}
		fmt.Fprintf(&b, " %.2f |", report.Ratio(totals[i], wall))
	}
	b.WriteString("\n")
	return b.String()
}

// eventlessLine compares, for figure 1's diagnostic, the release rate with the
// manager's events dropped to the bare client's.
func eventlessLine(x releaseResult) string {
	if len(x.EventlessQuotagate) == 0 {
		return ""
	}
	e, b, q := report.Summarize(x.EventlessQuotagate), report.Summarize(x.Baseline), report.Summarize(x.Quotagate)
	rate := func(s report.Summary) float64 { return report.Ratio(float64(x.N), s.P50) }
	return fmt.Sprintf("Diagnostic, same run: with its event recorder dropping every event, the manager released "+
		"%.0f pods/s (median of %d), %.2f of the bare client's %.0f pods/s; with events it released %.0f pods/s "+
		"and wrote %.2f events per pod released.\n",
		rate(e), e.N, report.Ratio(rate(e), rate(b)), rate(b), rate(q), report.Ratio(float64(x.QuotagateEvents), float64(q.N*x.N)))
}

// writesLine says what the manager wrote per pod in figure 1's batches, from parking
// to release: the ungate patches, the condition of the pods at the head of the queue
// (set while they wait, removed once admitted), events and status.
func writesLine(x releaseResult) string {
	if len(x.QuotagateWrites) == 0 {
		return ""
	}
	pods := len(x.Quotagate) * x.N
	sum := 0
	for _, n := range x.QuotagateWrites {
		sum += n
	}
	return fmt.Sprintf("The manager's API writes per pod, from parking to release: %.3f in all; pods %.3f, "+
		"pods/status %.3f (the condition of why a pod waits, on the pods at the head of the queue), events %.3f "+
		"(%s over %d pods).\n",
		report.Ratio(float64(sum), float64(pods)), report.Ratio(float64(x.QuotagateWrites["pods"]), float64(pods)),
		report.Ratio(float64(x.QuotagateWrites["pods/status"]), float64(pods)), report.Ratio(float64(x.QuotagateWrites["events"]), float64(pods)),
		countsText(x.QuotagateWrites), pods)
}

// coreTable lists the median of every metric of every core benchmark.
func coreTable(x coreResult) string {
	var b strings.Builder
	b.WriteString("| benchmark | median of each metric |\n|---|---|\n")
	for _, name := range slices.Sorted(maps.Keys(x.Metrics)) {
		var parts []string
		for _, unit := range slices.Sorted(maps.Keys(x.Metrics[name])) {
			parts = append(parts, fmt.Sprintf("%.4g %s", report.Summarize(x.Metrics[name][unit]).P50, unit))
		}
		fmt.Fprintf(&b, "| %s | %s |\n", strings.TrimPrefix(name, "Benchmark"), strings.Join(parts, ", "))
	}
	return b.String()
}

// firstLine says how soon the first pod of a release was seen, per releaser.
func firstLine(x releaseResult) string {
	if len(x.FirstQuotagate) == 0 {
		return ""
	}
	q, b := report.Summarize(millis1k(x.FirstQuotagate)), report.Summarize(millis1k(x.FirstBaseline))
	return fmt.Sprintf("First pod seen released after (median of %d): %.0f ms from the Budget raise with quotagate, "+
		"%.0f ms from the first patch with the bare client. Ungate errors: %s.\n", q.N, q.P50, b.P50, countsText(x.UngateErrors))
}

func millis1k(seconds []float64) []float64 {
	out := make([]float64, len(seconds))
	for i, s := range seconds {
		out[i] = s * 1000
	}
	return out
}

// countsText is a count per reason, "none" when there is none: "reason n, ..." in
// reason order (counts print as whole numbers, whether kept as int or float64).
func countsText[V int | float64](m map[string]V) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, float64(m[k])))
	}
	return strings.Join(parts, ", ")
}
