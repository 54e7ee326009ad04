package estimates

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/quotagate/quotagate/bench/figures"
	"github.com/quotagate/quotagate/bench/report"
)

// Report is bench/estimates/benchmarks-estimates.json; docs/benchmarks-estimates.md is
// rendered from it alone.
type Report struct {
	Date    string                  `json:"date"`
	Command string                  `json:"command"`
	JSON    string                  `json:"json"`
	Took    string                  `json:"took"`
	Machine report.Machine          `json:"machine"`
	Manager figures.ManagerSettings `json:"managerSettings"`
	// EstimateInterval is the manager's --estimate-interval, Poll how often the
	// benchmark read the pendingpods.
	EstimateInterval string    `json:"estimateInterval"`
	Poll             string    `json:"poll"`
	Slots            int       `json:"slots"`
	Scale            float64   `json:"scale"`
	Seed             uint64    `json:"seed"`
	Warm             int       `json:"warm"`
	Kinds            []Kind    `json:"kinds"`
	Plan             []Arrival `json:"plan"`
	Pods             []Pod     `json:"pods"`
	// Queue is the budget's gated pods at each poll.
	Queue         []int  `json:"queue"`
	Polls         int    `json:"polls"`
	PollErrors    int    `json:"pollErrors"`
	LastPollError string `json:"lastPollError,omitempty"`
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

func (r Report) judge() Judgement {
	var j Judgement
	names := make([]string, len(r.Kinds))
	for i, k := range r.Kinds {
		names[i] = k.Name
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

// row is the summary line of one moment.
func row(moment string, e Errors) string {
	q, b := QuantilesOf(e.Quotagate), QuantilesOf(e.Baseline)
	x := e.Improvement()
	return fmt.Sprintf("| %s | %d | %.1f / %.1f | %.1f / %.1f | %.2f | ≥ %.0f | %s |\n",
		moment, q.N, q.P50, q.P90, b.P50, b.P90, x, Goal, report.YesNo(q.N > 0 && x >= Goal))
}

// floor is the oracle's errors (Oracle: it knows each kind's true distribution and the
// exact queue), the floor under any estimate from durations, and the baseline's ratio to
// it: the most any such estimate could reach against the baseline on this workload.
func floor(first, head Errors) string {
	f, h := QuantilesOf(first.Oracle), QuantilesOf(head.Oracle)
	ratio := func(e Errors, o Quantiles) float64 {
		if o.P50 <= 0 {
			return 0
		}
		return QuantilesOf(e.Baseline).P50 / o.P50
	}
	return fmt.Sprintf("**The floor.** An oracle that knows each kind's true distribution and the exact queue at each poll "+
		"(%d draws of every run still to come, a running pod's from its kind's runs longer than it has run; its estimate the median start) "+
		"erred by %.1f / %.1f s (median / p90) when created and %.1f / %.1f s at the head. It minimizes the expected error of any "+
		"estimate that knows only the runs' distributions and the queue, so such an estimate does better only by chance; "+
		"it leaves out the time from a pod's end to the next ungate, and %d and %d pods are a sample with noise of its own. "+
		"The baseline's median error is %.2f× the oracle's when created and %.2f× at the head, beside the goal of %.0f.\n",
		oracleDraws, f.P50, f.P90, h.P50, h.P90, len(first.Oracle), len(head.Oracle), ratio(first, f), ratio(head, h), Goal)
}

// detail is the line under the table for one moment: unknowns, bias and waits.
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

// kindTable is the median absolute errors of the first estimates by kind.
func kindTable(r Report, j Judgement) string {
	var b strings.Builder
	b.WriteString("| kind | run time | held, median / mean (s) | judged pods | quotagate median abs. error, first / head (s) | baseline (s) |\n|---|---|---|---|---|---|\n")
	for _, k := range r.Kinds {
		var mine []Pod
		for _, p := range j.Judged {
			if p.Kind == k.Name {
				mine = append(mine, p)
			}
		}
		held := Held(r.Pods, k.Name)
		f := ErrorsAt(mine, func(p Pod) *Sighting { return p.First })
		h := ErrorsAt(mine, func(p Pod) *Sighting { return p.Head })
		fmt.Fprintf(&b, "| %s | %s | %.1f / %.1f | %d | %.1f / %.1f | %.1f / %.1f |\n", k.Name, k.Distribution,
			QuantilesOf(held).P50, mean(held), len(mine),
			QuantilesOf(f.Quotagate).P50, QuantilesOf(h.Quotagate).P50, QuantilesOf(f.Baseline).P50, QuantilesOf(h.Baseline).P50)
	}
	return b.String()
}

// Markdown renders docs/benchmarks-estimates.md.
func (r Report) Markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	j := r.judge()
	p("# quotagate benchmarks: estimated starts against a naive baseline\n\n")
	p("Generated by `%s` on %s (the run took %s). Do not edit: rerun it (`make bench-estimates`);\n", r.Command, r.Date, r.Took)
	p("the raw numbers, every pod's sightings included, are in [%s](%s). What an estimate is and how it\n", r.JSON, r.JSON)
	p("is built: [visibility.md](visibility.md#estimated-start).\n\n")
	p("## Summary\n\n")
	p("Absolute error of the estimated start against the pod's admission (its ungate), over the pods whose\n")
	p("Job was created once every kind had %d pods ended and that had both estimates known.\n\n", r.Warm)
	p("| moment | pods | quotagate median / p90 (s) | baseline median / p90 (s) | baseline ÷ quotagate (median) | goal | met? |\n|---|---|---|---|---|---|---|\n")
	if !j.Warm {
		p("| — | 0 | — | — | — | ≥ %.0f | **no**: some kind never had %d pods ended |\n", Goal, r.Warm)
	} else {
		p("%s", row("when created (first estimate)", j.First))
		p("%s", row("at the head of the queue", j.Head))
	}
	p("\n")
	if j.Warm && len(j.First.Oracle)+len(j.Head.Oracle) > 0 {
		p("%s\n", floor(j.First, j.Head))
	}
	if j.Warm {
		p("Every kind had %d pods ended %.0f s after the first Job; %d of %d Jobs were created after that. ", r.Warm, j.WarmAt.Seconds(), len(j.Judged), len(r.Pods))
		p("%d of them were admitted before any poll found an estimate of them; %d of all pods were not seen ended.\n\n", j.NotSeen, j.NotEnded)
		p("%s%s\n", detail("When created", j.First), detail("At the head", j.Head))
		p("### By kind\n\n%s\n", kindTable(r, j))
		p("### First estimates by position\n\n%s\n", positionTable(r, j))
		p("The manager expects each running pod to end at its kind's median (of the runs longer than it has run so far)\n")
		p("and each queued pod to run its kind's mean once admitted; the baseline expects every pod to run the mean\n")
		p("of all kinds'. A bias per pod ahead shows as a signed error that drifts with the position.\n\n")
	}
	q := QuantilesOf(ints(r.Queue))
	p("Gated pods in the budget at each poll: median %.0f, 90th percentile %.0f, most %.0f. Polls: %d answered, %d failed",
		q.P50, q.P90, slices.Max(append(ints(r.Queue), 0)), r.Polls, r.PollErrors)
	if r.LastPollError != "" {
		p(" (last: %s)", r.LastPollError)
	}
	p(".\n\n")
	p("## Workload\n\n")
	p("%d Jobs of one pod of 1 CPU each, into one namespace whose Budget admits %d such pods at once; seed %d, run times and arrival gaps ×%g.\n",
		len(r.Plan), r.Slots, r.Seed, r.Scale)
	p("The first %d Jobs are created at once, the rest one at a time, exponentially spaced at the rate the Budget admits on average\n", min(2*r.Slots, len(r.Plan)))
	p("(%d ÷ the kinds' mean run time), or as soon as fewer than %d pods wait, so the Budget stays full. Each Job's kind is drawn at even odds:\n\n", r.Slots, r.Slots)
	p("| kind | run time (at ×1) | mean | Jobs |\n|---|---|---|---|\n")
	for i, k := range r.Kinds {
		n := 0
		for _, a := range r.Plan {
			if a.Kind == i {
				n++
			}
		}
		p("| %s | %s | %.1f s | %d |\n", k.Name, k.Distribution, k.Mean.Seconds(), n)
	}
	p("\n%s\n", method(r))
	m := r.Machine
	p("## Machine\n\n")
	p("| | |\n|---|---|\n| CPUs (nproc) | %d |\n| memory | %.1f GiB |\n| Go | %s |\n| Kubernetes | %s |\n| kwok | %s |\n| load average before / after | %s / %s |\n",
		m.NProc, m.MemoryGiB, m.GoVersion, m.KubeVersion, m.KwokVersion, m.LoadBefore, m.LoadAfter)
	p("| manager settings | `--kube-api-qps=%g --kube-api-burst=%d --workers=%d --estimate-interval=%s` (the defaults) |\n",
		r.Manager.QPS, r.Manager.Burst, r.Manager.Workers, r.EstimateInterval)
	return b.String()
}

func method(r Report) string {
	return fmt.Sprintf(`## How it is measured

On a local control plane (`+"`test/localcluster`"+`: etcd, kube-apiserver, kube-scheduler,
kube-controller-manager and kwok as processes) with the manager in the benchmark's process, its
defaults unchanged. Each Job's pod is created by the Job controller from the Job's template, with
quotagate's gate; the Job's name is generated from its kind's (`+"`uniform-x7k2p`"+`), so the manager
learns each kind's run times under one key (the Job's name without its generated suffix). kwok's
create and ready stages are told to take no time and its complete stage to mark the pod Succeeded
its drawn run time after it is Ready: a pod holds its quota from its admission for its run time, plus
the scheduler's binding.

Every %s the benchmark reads the Budget's pendingpods through the manager's visibility handler
(pkg/visibility, in this process, without kube-apiserver's aggregation in front). For each pod it
keeps the first answer that carried an `+"`estimatedStart`"+` (**when created**: the manager publishes
one after its next pass, at most %s after the pod arrived), and the first that had the pod at
position 1 (**at the head**). Beside each, the **baseline** estimates at the same moment: position ×
the mean run time of the pods ended so far (all kinds, from their ungate to their end as the
benchmark's watch saw them) ÷ %d, the Budget's pods at once. A pod's start is when the watch first
showed it without the gate (its admission, what an estimate estimates; not status.startTime). An
error is |estimate − start|; an Unknown estimate is counted, not scored.
`, r.Poll, r.EstimateInterval, r.Slots)
}

// positionTable is the first estimates' errors by the pod's position then, in bands of
// half the slots.
func positionTable(r Report, j Judgement) string {
	var b strings.Builder
	b.WriteString("| position when first estimated | pods | quotagate median abs. / signed error (s) | baseline (s) | waited, median (s) |\n|---|---|---|---|---|\n")
	for _, band := range ByPosition(j.Judged, func(p Pod) *Sighting { return p.First }, r.Slots/2) {
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
