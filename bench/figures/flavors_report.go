package figures

import (
	"fmt"
	"strings"

	"github.com/quotagate/quotagate/bench/report"
)

// flavoredReleaseRow sets figure 1's flavored arm beside its plain quotagate arm. The
// goal is that the split costs no more than the plain arm's own noise: the flavored
// median is at least the plain arm's slowest repetition.
func flavoredReleaseRow(x releaseResult) Row {
	f, q := report.Summarize(x.Flavored), report.Summarize(x.Quotagate)
	rate := func(seconds float64) float64 { return report.Ratio(float64(x.N), seconds) }
	return Row{
		Figure:    fmt.Sprintf("1. Release throughput, %d pods, the budget split over %d Flavors, against one Budget (pods/s)", x.N, x.Flavors),
		Quotagate: fmt.Sprintf("%.0f (slowest %.0f)", rate(f.P50), rate(f.Max)),
		Baseline:  fmt.Sprintf("%.0f (slowest %.0f), no flavors", rate(q.P50), rate(q.Max)),
		Ratio:     fmt.Sprintf("%.2f", report.Ratio(rate(f.P50), rate(q.P50))),
		Goal:      "median >= the slowest repetition without flavors",
		Met:       report.YesNo(f.N > 0 && q.N > 0 && rate(f.P50) >= rate(q.Max)),
	}
}

// flavoredReactionRow sets figure 2's flavored chain beside its plain quotagate chain,
// with the p99 ratio's 95% bootstrap interval, judged by figure 2's own goal.
func flavoredReactionRow(x reactionResult) Row {
	f, q := report.Summarize(x.Flavored), report.Summarize(x.Quotagate)
	ratio := fmt.Sprintf("%.2f (p99)", report.Ratio(f.P99, q.P99))
	if lo, hi, ok := report.RatioInterval(x.Flavored, x.Quotagate, 99); ok {
		ratio = fmt.Sprintf("%.2f (p99; 95%% interval %.2f to %.2f)", report.Ratio(f.P99, q.P99), lo, hi)
	}
	return Row{
		Figure:    fmt.Sprintf("2. Reaction latency, each pod admitted on the last of %d Flavors, against one Budget, %d repetitions (ms)", x.Flavors, f.N),
		Quotagate: fmt.Sprintf("p50 %.1f, p99 %.1f", f.P50, f.P99),
		Baseline:  fmt.Sprintf("p50 %.1f, p99 %.1f, no flavors", q.P50, q.P99),
		Ratio:     ratio,
		Goal:      "p99 < 50 ms",
		Met:       report.YesNo(f.N > 0 && f.P99 < 50),
	}
}

// flavoredLine gives figure 1's flavored arm repetition by repetition beside the plain
// arm's, so the reader sees the spread the summary row is judged against, with the
// first pod's time and the events written per pod.
func flavoredLine(x releaseResult) string {
	if len(x.Flavored) == 0 || x.N == 0 {
		return ""
	}
	each := func(seconds []float64) string {
		parts := make([]string, len(seconds))
		for i, s := range seconds {
			parts[i] = fmt.Sprintf("%.0f", report.Ratio(float64(x.N), s))
		}
		return strings.Join(parts, ", ")
	}
	f, q := report.Summarize(millis1k(x.FirstFlavored)), report.Summarize(millis1k(x.FirstQuotagate))
	return fmt.Sprintf("The budget split over %d Flavors, same run, repetitions alternating with the plain arm's: "+
		"%s pods/s in each repetition, against %s pods/s without flavors; first pod after %.0f ms (median), "+
		"against %.0f ms; %d events written while releasing, against %d. Ungate errors: %s.\n",
		x.Flavors, each(x.Flavored), each(x.Quotagate), f.P50, q.P50,
		x.FlavoredEvents, x.QuotagateEvents, countsText(x.FlavoredUngateErrors))
}
