package figures

import (
	"fmt"
	"strings"

	"github.com/quotagate/quotagate/bench/report"
)

// ungateGoalMillis is figure 7's goal: quotagate's p99 within this of the bare
// watcher's.
const ungateGoalMillis = 2.0

// ungateRows are figure 7's summary rows, one per admission mode and load.
func ungateRows(x ungateResult) []Row {
	var rows []Row
	for _, s := range x.Series {
		q, b := report.Summarize(s.Quotagate), report.Summarize(s.Baseline)
		load := "idle cluster"
		if s.Load == "backlog" {
			load = fmt.Sprintf("%d-pod backlog binding", x.Backlog)
		}
		rows = append(rows, Row{
			Figure:    fmt.Sprintf("7. Create → ungate, %s, %s, %d pods (ms)", s.Mode, load, q.N),
			Quotagate: fmt.Sprintf("p50 %.1f, p99 %.1f", q.P50, q.P99),
			Baseline:  fmt.Sprintf("p50 %.1f, p99 %.1f", b.P50, b.P99),
			Ratio:     ungateDiff(s, q.P99-b.P99),
			Goal:      fmt.Sprintf("p99 within %g ms of baseline", ungateGoalMillis),
			Met:       report.YesNo(q.N > 0 && q.P99-b.P99 <= ungateGoalMillis),
		})
	}
	return rows
}

// ungateSection is figure 7's method and the backlog's binding times.
func ungateSection(x ungateResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### Create → ungate (figure 7)\n\n")
	fmt.Fprintf(&b, "%d pods are created one after the other in an opted-in namespace whose Budget has room,\n", x.N)
	if x.Reps > 1 {
		fmt.Fprintf(&b, "in each of %d repetitions of every series (samples pooled; a loaded series has a backlog of its own each time),\n", x.Reps)
	}
	fmt.Fprintf(&b, "with the gate added at admission (the mode named in the row). Each sample is the time from the\n")
	fmt.Fprintf(&b, "create call's return to the arrival, on a watch in this process, of the event that shows the\n")
	fmt.Fprintf(&b, "pod without the gate. Baseline: pods created with a gate of the benchmark's, which a bare\n")
	fmt.Fprintf(&b, "watcher in this process removes with the same JSON patch as soon as its watch shows the pod.\n")
	fmt.Fprintf(&b, "The arms alternate pod by pod in one series (which goes first rotates too), so all\n")
	fmt.Fprintf(&b, "meet the same moments of the backlog and of the machine's load. A third arm, a diagnostic, is the\n")
	fmt.Fprintf(&b, "same bare watcher watching every pod of the cluster, as the manager must.\n")
	fmt.Fprintf(&b, "The measured pods carry a second gate, so they are not scheduled. Backlog: %d pods, created\n", x.Backlog)
	fmt.Fprintf(&b, "gated in a namespace of their own and ungated by the bare client (%d patches in flight) as the\n", createWorkers)
	fmt.Fprintf(&b, "first measured create is sent, bind through kube-scheduler to the kwok nodes while the creates run;\n")
	fmt.Fprintf(&b, "the manager watches them as it watches every pod.\n\n")
	for _, s := range x.Series {
		fmt.Fprintf(&b, "- %s, %s: of quotagate's mean of %.1f ms, %.1f ms were the manager's own (first sight of the pod to its ungate patch sent, `quotagate_pod_wait_seconds`); the rest is the API server and the two watch deliveries.\n",
			s.Mode, s.Load, mean(s.Quotagate), s.ManagerWaitMillis)
		if lo, hi, ok := report.DiffInterval(s.Quotagate, s.Baseline, 99); ok {
			d := report.Summarize(s.Quotagate).P99 - report.Summarize(s.Baseline).P99
			fmt.Fprintf(&b, "  quotagate's p99 is %+.1f ms from the bare watcher's; 95%% interval %+.1f to %+.1f ms (bootstrap, %d resamples of each arm): %s.\n",
				d, lo, hi, report.BootstrapResamples, ungateVerdict(lo, hi))
		}
		if len(s.BaselineAllPods) > 0 {
			q, all := report.Summarize(s.Quotagate), report.Summarize(s.BaselineAllPods)
			fmt.Fprintf(&b, "  A bare watcher of every pod (a third arm, in a namespace of its own: the manager's view of the cluster, backlog events included): p50 %.1f, p99 %.1f ms; quotagate's p99 %+.1f ms from it.\n",
				all.P50, all.P99, q.P99-all.P99)
		}
		switch {
		case len(s.BacklogBound) == 0:
		case x.Reps > 1:
			secs := make([]string, len(s.BacklogBound))
			for i, ms := range s.BacklogBound {
				secs[i] = fmt.Sprintf("%.1f", ms/1000)
			}
			fmt.Fprintf(&b, "  The backlog was bound %s s after its ungate began, in each repetition.\n", strings.Join(secs, ", "))
		case len(s.BacklogBound) == 1:
			fmt.Fprintf(&b, "  The backlog was bound %.1f s after its ungate began.\n", s.BacklogBound[0]/1000)
		case len(s.BacklogBound) == 2: // reports of runs that measured the arms one after the other
			fmt.Fprintf(&b, "  The backlog was bound %.1f s (quotagate arm) and %.1f s (baseline arm) after its ungate began.\n",
				s.BacklogBound[0]/1000, s.BacklogBound[1]/1000)
		}
	}
	return b.String()
}

// ungateDiff is the summary's p99 difference, with its 95% bootstrap interval.
func ungateDiff(s ungateSerie, d float64) string {
	lo, hi, ok := report.DiffInterval(s.Quotagate, s.Baseline, 99)
	if !ok {
		return fmt.Sprintf("%+.1f ms (p99)", d)
	}
	return fmt.Sprintf("%+.1f ms (p99; 95%% interval %+.1f to %+.1f)", d, lo, hi)
}

// ungateVerdict says what an interval of the p99 difference tells about the goal.
func ungateVerdict(lo, hi float64) string {
	switch {
	case hi <= ungateGoalMillis:
		return fmt.Sprintf("within the goal of %g ms even at the interval's top", ungateGoalMillis)
	case lo > ungateGoalMillis:
		return fmt.Sprintf("beyond the goal of %g ms even at the interval's bottom", ungateGoalMillis)
	}
	return fmt.Sprintf("the interval holds %g ms, so this run cannot tell whether the goal is met", ungateGoalMillis)
}

func mean(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return report.Ratio(sum, float64(len(xs)))
}
