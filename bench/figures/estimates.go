package figures

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/bench/report"
	"github.com/quotagate/quotagate/pkg/quota/controller"
)

// Figure 8, estimates on and off: whether the manager's estimator (a simulation of the
// admission queues every --estimate-interval when something changed) delays
// admission. Each arm runs on a fresh local control plane, with the manager at its
// defaults (estimates on) or with --estimate-interval=0 (off): N pods of 100m gated
// behind a Budget with no room are released by raising it, and stay, holding quota;
// Depth more pods then queue behind them; then the reaction chain (figure 2) with Depth
// more pods queued behind it, so that the estimator has queues to simulate after every
// end; then create → ungate in a Budget with room (figure 7's timer, the gate added by
// the client). The arms alternate within each
// pair of repetitions (on then off, off then on, ...), so both meet the same drift of
// the machine, and the report gives the ratio of each percentile, on over off, with
// its bootstrap interval.

// EstimatesArm is what one arm measured, its repetitions pooled.
type EstimatesArm struct {
	// ReleaseSeconds is how long each repetition's release of N pods took.
	ReleaseSeconds []float64 `json:"releaseSeconds"`
	ReactionMillis []float64 `json:"reactionMillis"`
	CreateMillis   []float64 `json:"createToUngateMillis"`
	// Passes is how many estimator passes simulated a world during the arm's reactions
	// and creates, and SimulateSeconds how long they took in all
	// (quotagate_estimate_pass_duration_seconds, phase "simulate"): what the on arm
	// did that the off arm did not.
	Passes          uint64  `json:"passes"`
	SimulateSeconds float64 `json:"simulateSeconds"`
}

// estimatesResult is figure 8.
type estimatesResult struct {
	N         int `json:"n"`
	Depth     int `json:"depth"`
	Reactions int `json:"reactions"`
	Creates   int `json:"creates"`
	Reps      int `json:"reps"`
	// PaceMillis is the mean pause before each sample (Env.pace).
	PaceMillis float64      `json:"paceMillis"`
	On         EstimatesArm `json:"on"`
	Off        EstimatesArm `json:"off"`
	// Order is the arms in the order they ran.
	Order []string `json:"order"`
}

// measureEstimatesOnOff runs figure 8: reps repetitions of each arm, each on a fresh
// control plane under dir's parent, alternating.
func measureEstimatesOnOff(ctx context.Context, root string, s ManagerSettings, n, depth, reactions, creates, reps int, pace time.Duration) (estimatesResult, error) {
	r := estimatesResult{N: n, Depth: depth, Reactions: reactions, Creates: creates, Reps: reps, PaceMillis: float64(pace.Milliseconds())}
	for i := range reps {
		arms := []bool{true, false}
		if i%2 == 1 {
			slices.Reverse(arms)
		}
		for _, on := range arms {
			name, arm := "on", &r.On
			if !on {
				name, arm = "off", &r.Off
			}
			report.Logf("Figure 8: estimates %s, repetition %d of %d", name, i+1, reps)
			settings := s
			settings.EstimatesOff = !on
			if err := estimatesArm(ctx, root, settings, n, depth, reactions, creates, pace, arm); err != nil {
				return r, fmt.Errorf("estimates %s, repetition %d: %w", name, i+1, err)
			}
			r.Order = append(r.Order, name)
		}
	}
	return r, nil
}

// estimatesArm measures one repetition of one arm on a control plane of its own.
func estimatesArm(ctx context.Context, root string, s ManagerSettings, n, depth, reactions, creates int, pace time.Duration, arm *EstimatesArm) (err error) {
	dir, err := os.MkdirTemp("", "quotagate-bench-onoff-")
	if err != nil {
		return err
	}
	e, err := StartEnv(ctx, root, dir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, e.StopManager(), e.Cluster.Stop(), os.RemoveAll(dir)) }()
	if err := e.UseManager(ctx, s, false); err != nil {
		return err
	}
	e.pace = pace
	took, err := e.releaseAndKeep(ctx, n, depth)
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	arm.ReleaseSeconds = append(arm.ReleaseSeconds, took.Seconds())
	// Counted from here, where the manager surely leads (its metrics are exported only
	// then): the passes that overlap the reactions and the creates.
	passes, seconds, err := simulateTotals()
	if err != nil {
		return err
	}
	defer func() {
		p, sum, terr := simulateTotals()
		arm.Passes, arm.SimulateSeconds = arm.Passes+p-passes, arm.SimulateSeconds+sum-seconds
		err = errors.Join(err, terr)
	}()
	ns, err := e.NewNamespace(ctx, "onoff-reaction", true)
	if err != nil {
		return err
	}
	d, err := e.ReactionBehind(ctx, ns, depth, reactions)
	if err != nil {
		return fmt.Errorf("reaction: %w", err)
	}
	arm.ReactionMillis = append(arm.ReactionMillis, report.Millis(d)...)
	cns, err := e.NewNamespace(ctx, "onoff-create", true)
	if err != nil {
		return err
	}
	if err := e.CreateBudget(ctx, cns, strconv.Itoa(creates)); err != nil {
		return err
	}
	t, err := e.NewCreateTimer(ctx, cns, v1alpha1.SchedulingGate, []string{v1alpha1.SchedulingGate, HoldGate})
	if err != nil {
		return err
	}
	defer t.Watch.Stop()
	times, err := e.TakeTurns(ctx, []*CreateTimer{t}, creates)
	if err != nil {
		return fmt.Errorf("create → ungate: %w", err)
	}
	arm.CreateMillis = append(arm.CreateMillis, report.Millis(times[0])...)
	return nil
}

// simulateTotals reads the count and sum of quotagate_estimate_pass_duration_seconds
// of phase "simulate" from the registry the in-process manager's metrics are in.
func simulateTotals() (count uint64, sum float64, err error) {
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		return 0, 0, fmt.Errorf("reading the manager's metrics: %w", err)
	}
	for _, f := range families {
		if f.GetName() != "quotagate_estimate_pass_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "phase" && l.GetValue() == "simulate" {
					count += m.GetHistogram().GetSampleCount()
					sum += m.GetHistogram().GetSampleSum()
				}
			}
		}
	}
	return count, sum, nil
}

// releaseAndKeep creates n gated pods of 100m behind a Budget with no room, raises it
// to fit them all once the manager counts them, and returns how long from that write
// every pod took to lose the gate. The pods stay: they hold the Budget's quota (a
// second gate keeps them off the scheduler), in the world every estimator pass builds,
// with queued more gated pods waiting behind them.
func (e *Env) releaseAndKeep(ctx context.Context, n, queued int) (time.Duration, error) {
	ns, err := e.NewNamespace(ctx, "onoff-release", true)
	if err != nil {
		return 0, err
	}
	if err := e.CreateBudget(ctx, ns, "0"); err != nil {
		return 0, err
	}
	pw, err := WatchPods(ctx, e.Client, ns, v1alpha1.SchedulingGate)
	if err != nil {
		return 0, err
	}
	defer pw.Stop()
	if err := e.CreatePods(ctx, ns, PodSpec{Prefix: "p", CPU: "100m", Gates: []string{v1alpha1.SchedulingGate, HoldGate}}, 0, n); err != nil {
		return 0, err
	}
	if err := e.WaitGated(ctx, ns, n); err != nil {
		return 0, err
	}
	start := time.Now()
	// Room for the n pods exactly: the queued ones wait.
	if err := e.setBudgetCPU(ctx, ns, fmt.Sprintf("%dm", 100*n)); err != nil {
		return 0, err
	}
	if err := pw.WaitFor(ctx, "quotagate to release every pod", func(pw *PodWatch) bool { return len(pw.Ungated) == n }); err != nil {
		return 0, err
	}
	pw.Mu.Lock()
	took := LastOf(pw.Ungated).Sub(start)
	pw.Mu.Unlock()
	spec := PodSpec{Prefix: "q", CPU: "100m", Gates: []string{v1alpha1.SchedulingGate, HoldGate}}
	if err := e.CreatePods(ctx, ns, spec, 0, queued); err != nil {
		return 0, err
	}
	return took, e.WaitGated(ctx, ns, queued)
}

// onOffRatio is a percentile's ratio, on over off, with its 95% bootstrap interval,
// and whether the interval holds 1 (on is within noise of off).
func onOffRatio(on, off []float64, p float64) (text string, holdsOne bool) {
	at := func(xs []float64) float64 { return report.Percentile(slices.Sorted(slices.Values(xs)), p) }
	x := report.Ratio(at(on), at(off))
	lo, hi, ok := report.RatioInterval(on, off, p)
	if !ok {
		return fmt.Sprintf("%.2f", x), false
	}
	return fmt.Sprintf("%.2f (%.2f to %.2f)", x, lo, hi), lo <= 1 && hi >= 1
}

// estimatesRows are figure 8's rows: reaction and create → ungate, estimates on
// against off, each judged by whether the intervals of the p50 and p99 ratios hold 1.
func estimatesRows(x estimatesResult) []Row {
	var rows []Row
	for _, m := range []struct {
		what    string
		on, off []float64
	}{
		{fmt.Sprintf("8. Reaction, estimates on / off, %d pods held, %d queued (ms)", x.N, x.Depth), x.On.ReactionMillis, x.Off.ReactionMillis},
		{fmt.Sprintf("8. Create → ungate, estimates on / off, %d pods held (ms)", x.N), x.On.CreateMillis, x.Off.CreateMillis},
	} {
		on, off := report.Summarize(m.on), report.Summarize(m.off)
		p50, ok50 := onOffRatio(m.on, m.off, 50)
		p99, ok99 := onOffRatio(m.on, m.off, 99)
		rows = append(rows, Row{
			Figure:    fmt.Sprintf("%s, %d and %d samples", m.what, on.N, off.N),
			Quotagate: fmt.Sprintf("on: p50 %.1f, p99 %.1f", on.P50, on.P99),
			Baseline:  fmt.Sprintf("off: p50 %.1f, p99 %.1f", off.P50, off.P99),
			Ratio:     fmt.Sprintf("p50 %s; p99 %s", p50, p99),
			Goal:      "both intervals hold 1",
			Met:       report.YesNo(on.N > 0 && off.N > 0 && ok50 && ok99),
		})
	}
	return rows
}

// estimatesSection describes figure 8 and what else its arms measured.
func estimatesSection(x estimatesResult) string {
	rel := func(a EstimatesArm) string {
		s := report.Summarize(a.ReleaseSeconds)
		return fmt.Sprintf("median %.2f s, slowest %.2f s", s.P50, s.Max)
	}
	return fmt.Sprintf(`### Estimates on and off (figure 8)

Whether the manager's estimator delays admission. Each arm runs on a fresh local control plane with
the manager at its defaults (estimates on, a pass at most every %s when something changed) or with
`+"`--estimate-interval=0`"+` (off); %d repetitions of each, the arms alternating (%s). In each, %d pods of
100m are released by raising a Budget and stay, holding its quota, with %d more queued behind them; then
%d reactions (figure 2's chain, with %d pods queued behind it: after every end the estimator has queues
to simulate) and %d creates, one at a time, into a Budget with room (figure 7's timer; the client adds
the gate), all timed on one watch in this process, each sample after a pause drawn from 0 to %.0f ms (the same
seeded draws in every arm) so that the samples fall at every moment of the estimator's passes. A ratio is on over off at that percentile, its 95%%
interval from 2,000 resamples of each arm's pooled samples (fixed seed); an interval that holds 1 says
this run cannot tell the arms apart. The release of the %d pods took %s with estimates on and %s off.
While the reactions and creates ran, %d estimator passes simulated a world with estimates on, %.1f s in all (%d with them off).
`, controller.DefaultEstimateInterval, x.Reps, strings.Join(x.Order, ", "), x.N, x.Depth, x.Reactions, x.Depth, x.Creates, 2*x.PaceMillis, x.N, rel(x.On), rel(x.Off),
		x.On.Passes, x.On.SimulateSeconds, x.Off.Passes)
}
