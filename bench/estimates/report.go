package estimates

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/quotagate/quotagate/bench/figures"
	"github.com/quotagate/quotagate/bench/report"
	"github.com/quotagate/quotagate/pkg/quota/controller"
)

// Suite is bench/estimates/benchmarks-estimates.json: one Report per workload; the Markdown
// report is rendered from it alone.
type Suite struct {
	Date    string                  `json:"date"`
	Command string                  `json:"command"`
	JSON    string                  `json:"json"`
	Took    string                  `json:"took"`
	Machine report.Machine          `json:"machine"`
	Manager figures.ManagerSettings `json:"managerSettings"`
	// EstimateInterval is the manager's --estimate-interval, Poll how often the
	// benchmark read the pendingpods.
	EstimateInterval string   `json:"estimateInterval"`
	Poll             string   `json:"poll"`
	Scale            float64  `json:"scale"`
	Seed             uint64   `json:"seed"`
	Warm             int      `json:"warm"`
	Workloads        []Report `json:"workloads"`
}

// Report is what one workload's run saw.
type Report struct {
	Workload Workload `json:"workload"`
	// Slots, Warm, Scale and Seed are the suite's, for the workload's tables.
	Slots int       `json:"slots"`
	Warm  int       `json:"warm"`
	Scale float64   `json:"scale"`
	Seed  uint64    `json:"seed"`
	Kinds []Kind    `json:"kinds"`
	Plan  []Arrival `json:"plan"`
	Pods  []Pod     `json:"pods"`
	// Queue is the budgets' gated pods at each poll.
	Queue         []int         `json:"queue"`
	Polls         int           `json:"polls"`
	PollErrors    int           `json:"pollErrors"`
	LastPollError string        `json:"lastPollError,omitempty"`
	Records       []TrackRecord `json:"trackRecords,omitempty"`
	Took          string        `json:"took"`
}

// Judgement is what the report concludes from the pods.
type Judgement struct {
	Warm     bool
	WarmAt   time.Duration // from the first Job's creation
	Judged   []Pod
	First    Errors
	Head     Errors
	NotSeen  int // judged pods admitted before any poll found an estimate of them
	NotEnded int // pods (of all) not seen ended
}

// Targets of the issue, for every workload: quotagate's median error at most
// OracleTarget times the oracle's, both when created and at the head; the share of
// starts its ranges held within CoverageSlack points of what they claim (Coverage);
// and on the harder workloads (Workload.Harder) a median error at least BaselineTarget
// times smaller than the baseline's.
const (
	OracleTarget   = 1.25
	Coverage       = 80.0
	CoverageSlack  = 5.0
	BaselineTarget = 1.5
)

// Verdict is a moment's errors set against the targets.
type Verdict struct {
	Quotagate, Oracle, Baseline Quantiles
	// OracleRatio is quotagate's median error over the oracle's, BaselineRatio the
	// baseline's over quotagate's (0 when either is not known), Coverage the share of
	// ranged estimates that held the start (percent).
	OracleRatio, BaselineRatio, Coverage float64
	// OracleMet, CoverageMet and BaselineMet say whether each target was met;
	// BaselineMet is true where the workload has no baseline target.
	OracleMet, CoverageMet, BaselineMet bool
}

// Met reports whether every target of the moment was met.
func (v Verdict) Met() bool { return v.OracleMet && v.CoverageMet && v.BaselineMet }

// verdict sets a moment's errors against the targets.
func verdict(e Errors, harder bool) Verdict {
	v := Verdict{Quotagate: QuantilesOf(e.Quotagate), Oracle: QuantilesOf(e.Oracle), Baseline: QuantilesOf(e.Baseline), Coverage: e.Coverage()}
	if v.Oracle.P50 > 0 && v.Quotagate.N > 0 {
		v.OracleRatio = v.Quotagate.P50 / v.Oracle.P50
	}
	v.BaselineRatio = e.Improvement()
	v.OracleMet = v.Quotagate.N > 0 && v.Oracle.N > 0 && v.Quotagate.P50 <= OracleTarget*v.Oracle.P50
	v.CoverageMet = e.Ranged > 0 && v.Coverage >= Coverage-CoverageSlack && v.Coverage <= Coverage+CoverageSlack
	v.BaselineMet = !harder || (v.Quotagate.N > 0 && v.BaselineRatio >= BaselineTarget)
	return v
}

func (r Report) judge() Judgement {
	var j Judgement
	names := r.Workload.initial()
	if len(r.Workload.Streams) == 0 {
		for _, k := range r.Kinds {
			names = append(names, k.Name)
		}
	}
	warm, ok := WarmAt(r.Pods, names, r.Warm)
	if !ok {
		return j
	}
	j.Warm, j.Judged = true, Judged(r.Pods, warm)
	if len(r.Pods) > 0 {
		j.WarmAt = warm.Sub(r.Pods[0].Created)
	}
	j.First = ErrorsAt(j.Judged, func(p Pod) *Sighting { return p.First })
	j.Head = ErrorsAt(j.Judged, func(p Pod) *Sighting { return p.Head })
	for _, p := range j.Judged {
		if p.First == nil {
			j.NotSeen++
		}
	}
	for _, p := range r.Pods {
		if p.Ended.IsZero() {
			j.NotEnded++
		}
	}
	return j
}

// row is the summary line of one workload's moment.
func row(workload, moment string, e Errors, harder bool) string {
	v := verdict(e, harder)
	target := "—"
	if harder {
		target = fmt.Sprintf("%.2f (≥ %.1f)", v.BaselineRatio, BaselineTarget)
	} else if v.Quotagate.N > 0 {
		target = fmt.Sprintf("%.2f", v.BaselineRatio)
	}
	return fmt.Sprintf("| %s | %s | %d | %.1f / %.1f | %.1f | %.2f (≤ %.2f) | %.1f | %s | %.0f%% of %d (%.0f ± %.0f) | %s |\n",
		workload, moment, v.Quotagate.N, v.Quotagate.P50, v.Quotagate.P90, v.Oracle.P50, v.OracleRatio, OracleTarget,
		v.Baseline.P50, target, v.Coverage, e.Ranged, Coverage, CoverageSlack, report.YesNo(v.Met()))
}

// misses names the targets a moment missed, for the line under the summary.
func misses(e Errors, harder bool) []string {
	v := verdict(e, harder)
	var out []string
	if !v.OracleMet {
		out = append(out, fmt.Sprintf("median error %.2f× the oracle's (target ≤ %.2f×)", v.OracleRatio, OracleTarget))
	}
	if !v.CoverageMet {
		out = append(out, fmt.Sprintf("ranges held %.0f%% of starts (target %.0f ± %.0f)", v.Coverage, Coverage, CoverageSlack))
	}
	if !v.BaselineMet {
		out = append(out, fmt.Sprintf("%.2f× smaller than the baseline's (target ≥ %.1f×)", v.BaselineRatio, BaselineTarget))
	}
	return out
}

// detail is the line under a workload's table for one moment: unknowns, bias and waits.
func detail(moment string, e Errors) string {
	qs, bs, w := QuantilesOf(e.QuotagateSigned), QuantilesOf(e.BaselineSigned), QuantilesOf(e.Waits)
	reasons := "none"
	if len(e.Reasons) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(e.Reasons)) {
			parts = append(parts, fmt.Sprintf("%s %d", cmp.Or(k, "(no reason)"), e.Reasons[k]))
		}
		reasons = strings.Join(parts, ", ")
	}
	return fmt.Sprintf("- **%s**: %d judged pods sighted; %d with an unknown estimate (%s), %d without a baseline (no pod had ended); "+
		"median signed error (estimate − start, positive is late) %+.1f s for quotagate, %+.1f s for the baseline; "+
		"the pods then waited %.1f s at the median (90th percentile %.1f s).\n",
		moment, e.Pods, e.Unknown, reasons, e.NoBaseline, qs.P50, bs.P50, w.P50, w.P90)
}

// groupTable is the median absolute errors, first and at the head, of the judged pods
// in each group (by kind, by priority, by budget).
func groupTable(title string, j Judgement, groups []string, of func(Pod) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| %s | judged pods | quotagate median abs. error, first / head (s) | oracle (s) | baseline (s) | within range, first / head |\n|---|---|---|---|---|---|\n", title)
	for _, g := range groups {
		var mine []Pod
		for _, p := range j.Judged {
			if of(p) == g {
				mine = append(mine, p)
			}
		}
		f := ErrorsAt(mine, func(p Pod) *Sighting { return p.First })
		h := ErrorsAt(mine, func(p Pod) *Sighting { return p.Head })
		fmt.Fprintf(&b, "| %s | %d | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f | %.0f%% / %.0f%% |\n", g, len(mine),
			QuantilesOf(f.Quotagate).P50, QuantilesOf(h.Quotagate).P50, QuantilesOf(f.Oracle).P50, QuantilesOf(h.Oracle).P50,
			QuantilesOf(f.Baseline).P50, QuantilesOf(h.Baseline).P50, f.Coverage(), h.Coverage())
	}
	return b.String()
}

// Markdown renders docs/benchmarks-estimates.md.
func (s Suite) Markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# quotagate benchmarks: estimated starts against a naive baseline and an oracle\n\n")
	p("Generated by `%s` on %s (the run took %s). Do not edit: rerun it (`make bench-estimates`);\n", s.Command, s.Date, s.Took)
	p("the raw numbers, every pod's sightings included, are in [%s](%s). What an estimate is and how it\n", s.JSON, s.JSON)
	p("is built: [visibility.md](visibility.md#estimated-start).\n\n")
	p("## Summary\n\n")
	p("Absolute error of the estimated start against the pod's admission (its ungate), over the pods whose\n")
	p("Job was created once every kind that arrives from the start had %d pods ended (a kind that appears later is judged\n", s.Warm)
	p("from its first pod), that had both estimates known: quotagate's (median / p90), the oracle's and the naive\n")
	p("baseline's (position × mean) medians, and the share of starts within quotagate's stated range (it claims %.0f%%).\n", Coverage)
	p("The targets (issue 51): median error within %.2f× the oracle's, coverage within %.0f points of %.0f%%, and on the\n", OracleTarget, CoverageSlack, Coverage)
	p("two harder workloads a median error at least %.1f× smaller than the baseline's.\n\n", BaselineTarget)
	p("| workload | moment | pods | quotagate median / p90 (s) | oracle median (s) | quotagate ÷ oracle | baseline median (s) | baseline ÷ quotagate | within range | met? |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range s.Workloads {
		j := r.judge()
		if !j.Warm {
			p("| %s | — | 0 | — | — | — | — | — | — | **no**: some kind never had %d pods ended |\n", r.Workload.Name, r.Warm)
			continue
		}
		p("%s", row(r.Workload.Name, "when created", j.First, r.Workload.Harder))
		p("%s", row(r.Workload.Name, "at the head", j.Head, r.Workload.Harder))
	}
	p("\n")
	for _, r := range s.Workloads {
		j := r.judge()
		if !j.Warm {
			continue
		}
		for _, m := range []struct {
			moment string
			e      Errors
		}{{"when created", j.First}, {"at the head", j.Head}} {
			if miss := misses(m.e, r.Workload.Harder); len(miss) > 0 {
				p("- **%s, %s**: missed: %s.\n", r.Workload.Name, m.moment, strings.Join(miss, "; "))
			}
		}
	}
	p("\n**The oracle.** At each poll it knows each kind's true distribution and the exact world (every budget, every pod\n")
	p("that holds quota and since when, every gated pod with its priority); it draws every run still to come %d times\n", oracleDraws)
	p("(a running pod's from its kind's runs longer than it has run), plays each draw through quotagate's own admission\n")
	p("core (priorities, borrowing) and answers each pod's median start. It minimizes the expected error of an estimate\n")
	p("from the runs' distributions and the world as it stands; it does not know the pods not created yet, so where they\n")
	p("go ahead (the mix's etl Jobs at high priority) an estimate that expects them can beat it, and it leaves out the\n")
	p("time from a pod's end to the next ungate.\n\n")
	p("### The manager's track record\n\n")
	p("What the manager said of its own estimates at the end of each run, per budget: its track record as\n")
	p("`kubectl quotagate why` prints it (of the last admissions with a known first estimate, that estimate's median\n")
	p("error and the share admitted within its range), and from its metrics the share within range at each moment\n")
	p("(`quotagate_estimate_within_range_total` ÷ `quotagate_estimate_error_seconds`' count). It counts every pod of\n")
	p("the run, the warm-up's too, so it is set beside the judged pods' numbers above, not equal to them.\n\n")
	p("| workload | budget | why: pods, median error (s), within range | metrics: first, within / pods | metrics: head, within / pods |\n|---|---|---|---|---|\n")
	for _, r := range s.Workloads {
		for _, t := range r.Records {
			why := "none"
			if t.Known {
				why = fmt.Sprintf("%d, %.1f, %.0f%%", t.Pods, t.MedianError, pct(float64(t.Within), float64(t.Pods)))
			}
			f, h := t.Metrics["first"], t.Metrics["head"]
			p("| %s | %s | %s | %.0f / %d (%.0f%%) | %.0f / %d (%.0f%%) |\n", r.Workload.Name, t.Budget, why,
				f.Within, f.Pods, pct(f.Within, float64(f.Pods)), h.Within, h.Pods, pct(h.Within, float64(h.Pods)))
		}
	}
	p("\n")
	for _, r := range s.Workloads {
		p("%s", r.section())
	}
	p("%s\n", method(s))
	m := s.Machine
	p("## Machine\n\n")
	p("| | |\n|---|---|\n| CPUs (nproc) | %d |\n| memory | %.1f GiB |\n| Go | %s |\n| Kubernetes | %s |\n| kwok | %s |\n| load average before / after | %s / %s |\n",
		m.NProc, m.MemoryGiB, m.GoVersion, m.KubeVersion, m.KwokVersion, m.LoadBefore, m.LoadAfter)
	defaults := " (the defaults)"
	if s.EstimateInterval != controller.DefaultEstimateInterval.String() {
		defaults = fmt.Sprintf(" (the defaults, but the estimate interval's default is %s)", controller.DefaultEstimateInterval)
	}
	p("| manager settings | `--kube-api-qps=%g --kube-api-burst=%d --workers=%d --estimate-interval=%s`%s |\n",
		s.Manager.QPS, s.Manager.Burst, s.Manager.Workers, s.EstimateInterval, defaults)
	return b.String()
}

func pct(n, of float64) float64 {
	if of == 0 {
		return 0
	}
	return 100 * n / of
}

// section is one workload's part of the report: what it is, what was judged, and its
// errors by kind, priority, budget and position.
func (r Report) section() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w := r.Workload
	j := r.judge()
	p("## Workload %q\n\n", w.Name)
	p("%s. %d Jobs of one pod of 1 CPU each (seed %d, run times and arrival gaps ×%g; the run took %s):\n\n", upper(w.About), len(r.Plan), r.Seed, r.Scale, r.Took)
	p("| kind | run time (at ×1) | mean | budget | priority | from Job | Jobs | held, median / mean (s) |\n|---|---|---|---|---|---|---|---|\n")
	for _, st := range w.Streams {
		n := 0
		for _, a := range r.Plan {
			if a.Kind == st.Kind && a.Budget == st.Budget && a.Priority == st.Priority {
				n++
			}
		}
		k := w.Kinds[st.Kind]
		held := Held(r.Pods, k.Name)
		p("| %s | %s | %.1f s | %s (%d pods%s) | %d | %d | %d | %.1f / %.1f |\n", k.Name, k.Distribution, k.Mean.Seconds(),
			w.Budgets[st.Budget].Name, w.Budgets[st.Budget].Slots, borrow(w.Budgets[st.Budget]), st.Priority, st.From+1, n,
			QuantilesOf(held).P50, mean(held))
	}
	if w.Family > 0 {
		p("\nThe budgets are children of a ClusterBudget of %d pods; each reclaims nothing it lent (`preemption.reclaim: Never`).\n", w.Family)
	}
	p("\n")
	if !j.Warm {
		p("Some kind never had %d pods ended: nothing was judged.\n\n", r.Warm)
		return b.String()
	}
	p("Every kind from the start had %d pods ended %.0f s after the first Job; %d of %d Jobs were created after that. ", r.Warm, j.WarmAt.Seconds(), len(j.Judged), len(r.Pods))
	p("%d of them were admitted before any poll found an estimate of them; %d of all pods were not seen ended.\n\n", j.NotSeen, j.NotEnded)
	p("%s%s\n", detail("When created", j.First), detail("At the head", j.Head))
	p("%s\n", groupTable("kind", j, kindNames(w.Kinds), func(p Pod) string { return p.Kind }))
	if len(priorities(w)) > 1 {
		p("%s\n", groupTable("priority", j, priorities(w), func(p Pod) string { return strconv.Itoa(int(p.Priority)) }))
	}
	if len(w.Budgets) > 1 {
		var names []string
		for _, bs := range w.Budgets {
			names = append(names, bs.Name)
		}
		p("%s\n", groupTable("budget", j, names, func(p Pod) string { return budgetOf(w, p.Name) }))
	}
	p("%s\n", positionTable(r, j))
	if lines := newKinds(r); len(lines) > 0 {
		p("The first estimate of the workload that appeared mid-run: %s.\n\n", strings.Join(lines, "; "))
	}
	q := QuantilesOf(ints(r.Queue))
	p("Gated pods in the budgets at each poll: median %.0f, 90th percentile %.0f, most %.0f. Polls: %d answered, %d failed",
		q.P50, q.P90, slices.Max(append(ints(r.Queue), 0)), r.Polls, r.PollErrors)
	if r.LastPollError != "" {
		p(" (last: %s)", r.LastPollError)
	}
	p(".\n\n")
	return b.String()
}

func upper(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func borrow(b BudgetSpec) string {
	if b.Borrow == 0 {
		return ""
	}
	return fmt.Sprintf(", borrowing up to %d", b.Borrow)
}

func kindNames(kinds []Kind) []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = k.Name
	}
	return out
}

// priorities are the distinct priorities of w's streams, as text.
func priorities(w Workload) []string {
	var out []string
	for _, s := range w.Streams {
		if p := strconv.Itoa(int(s.Priority)); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// budgetOf is the name of the budget of w a pod ("namespace/name") was created in: its
// namespace is "<workload>-<budget>-<n>".
func budgetOf(w Workload, pod string) string {
	ns, _, _ := strings.Cut(pod, "/")
	for _, b := range w.Budgets {
		if strings.HasPrefix(ns, w.Name+"-"+b.Name+"-") {
			return b.Name
		}
	}
	return ""
}

// newKinds says, for each kind of w that appears after the start (a new workload),
// what the first estimate of its first pod was built from and whether its range held
// the pod's start: the case of issue 51, a new kind estimated from another's runs.
func newKinds(r Report) []string {
	initial := r.Workload.initial()
	var out []string
	for _, k := range r.Workload.Kinds {
		if slices.Contains(initial, k.Name) {
			continue
		}
		var first *Pod
		for i := range r.Pods {
			p := &r.Pods[i]
			if p.Kind == k.Name && p.First != nil && (first == nil || p.Created.Before(first.Created)) {
				first = p
			}
		}
		if first == nil {
			out = append(out, fmt.Sprintf("%s: no pod of it was seen with an estimate", k.Name))
			continue
		}
		s := first.First
		held := "it had no range"
		if !s.Low.IsZero() && !s.High.IsZero() && !first.Started.IsZero() {
			held = fmt.Sprintf("its range, %.0f to %.0f s ahead, did not hold the start %.0f s ahead", s.Low.Sub(s.At).Seconds(), s.High.Sub(s.At).Seconds(), first.Started.Sub(s.At).Seconds())
			if !first.Started.Before(s.Low) && !first.Started.After(s.High) {
				held = strings.Replace(held, "did not hold", "held", 1)
			}
		}
		out = append(out, fmt.Sprintf("%s, first pod (%s): basis %q; %s", k.Name, first.Name, cmp.Or(s.Basis, "(none)"), held))
	}
	return out
}

func method(s Suite) string {
	return fmt.Sprintf(`## How it is measured

Each workload runs on a fresh local control plane (`+"`test/localcluster`"+`: etcd, kube-apiserver,
kube-scheduler, kube-controller-manager and kwok as processes) with the manager in the benchmark's process, its
defaults unchanged. Each Job's pod is created by the Job controller from the Job's template, with
quotagate's gate and its PriorityClass; the Job's name is generated from its kind's (`+"`uniform-x7k2p`"+`), so the manager
learns each kind's run times under one key (the Job's name without its generated suffix). kwok's
create and ready stages are told to take no time and its complete stage to mark the pod Succeeded
its drawn run time after it is Ready: a pod holds its quota from its admission for its run time, plus
the scheduler's binding. The first 2 × the workload's pods at once are created together, the rest one at a time,
exponentially spaced at the rate the budgets admit on average, or as soon as fewer than that many pods wait, so
the budgets stay full and pods queue throughout.

Every %s the benchmark reads each Budget's pendingpods through the manager's visibility handler
(pkg/visibility, in this process, without kube-apiserver's aggregation in front). For each pod it
keeps the first answer that carried an `+"`estimatedStart`"+` (**when created**: the manager publishes
one after its next pass, at most %s after the pod arrived), and the first that had the pod at
position 1 of its budget (**at the head**). Beside each, the **baseline** estimates at the same moment: position ×
the mean run time of the pods ended so far (all kinds, from their ungate to their end as the
benchmark's watch saw them) ÷ the budget's pods at once; and the **oracle** (above) plays the world the API server
shows then. A pod's start is when the watch first showed it without the gate (its admission, what an estimate
estimates; not status.startTime). An error is |estimate − start|; an Unknown estimate is counted, not scored; a
start is within range when low ≤ start ≤ high.
`, s.Poll, s.EstimateInterval)
}

// positionTable is the first estimates' errors by the pod's position then, in bands of
// half the slots.
func positionTable(r Report, j Judgement) string {
	var b strings.Builder
	b.WriteString("| position when first estimated | pods | quotagate median abs. / signed error (s) | baseline (s) | waited, median (s) |\n|---|---|---|---|---|\n")
	for _, band := range ByPosition(j.Judged, func(p Pod) *Sighting { return p.First }, max(r.Slots/2, 1)) {
		e := band.Errors
		fmt.Fprintf(&b, "| %d to %d | %d | %.1f / %+.1f | %.1f / %+.1f | %.1f |\n", band.From, band.To, len(e.Quotagate),
			QuantilesOf(e.Quotagate).P50, QuantilesOf(e.QuotagateSigned).P50,
			QuantilesOf(e.Baseline).P50, QuantilesOf(e.BaselineSigned).P50, QuantilesOf(e.Waits).P50)
	}
	return b.String()
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	var sum float64
	for _, x := range v {
		sum += x
	}
	return sum / float64(len(v))
}

func ints(v []int) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}
