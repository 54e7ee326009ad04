package estimates

import (
	"context"
	"os"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/quotagate/quotagate/bench/figures"
	"github.com/quotagate/quotagate/bench/report"
)

// Run plans each workload, measures it and writes the report; with renderOnly it
// renders the Markdown report again from the JSON one.
func Run(ctx context.Context, o Options, renderOnly bool) error {
	if err := o.validate(); err != nil {
		return err
	}
	root, abs, err := report.RepoPaths()
	if err != nil {
		return err
	}
	if renderOnly {
		return report.RenderAgain(&Suite{}, abs(o.json), abs(o.markdown))
	}
	// Keep the manager's logs to errors, as the figures do.
	ctrl.SetLogger(zap.New(zap.Level(zapcore.ErrorLevel), zap.WriteTo(os.Stderr)))
	began := time.Now()
	s := Suite{
		Date:             began.UTC().Format("2006-01-02 15:04 MST"),
		Command:          "go run ./bench " + strings.Join(os.Args[1:], " "),
		JSON:             report.Link(o.markdown, o.json),
		Machine:          report.NewMachine(),
		Manager:          figures.DefaultManagerSettings(),
		EstimateInterval: o.interval.String(),
		Poll:             pollInterval.String(),
		Scale:            o.scale,
		Seed:             o.seed,
		Warm:             o.warm,
	}
	workloads, _ := o.selected()
	for _, w := range workloads {
		r, err := runWorkload(ctx, root, o, w)
		if err != nil {
			return err
		}
		s.Workloads = append(s.Workloads, r)
	}
	s.Machine.LoadAfter = report.LoadAverage()
	s.Took = time.Since(began).Round(time.Second).String()
	return report.Write(s, abs(o.json), abs(o.markdown))
}

// runWorkload plans w and measures it on a control plane of its own.
func runWorkload(ctx context.Context, root string, o Options, w Workload) (Report, error) {
	began := time.Now()
	plan := Plan(w, o.seed, o.pods, o.scale)
	r := Report{Workload: w, Slots: w.slots(), Warm: o.warm, Scale: o.scale, Seed: o.seed, Kinds: w.Kinds, Plan: plan}
	m, err := measure(ctx, root, o, w, plan)
	if err != nil {
		return Report{}, err
	}
	r.Pods, r.Queue, r.Polls, r.PollErrors, r.LastPollError, r.Records = m.pods, m.queue, m.polls, m.pollErrors, m.lastError, m.records
	r.Took = time.Since(began).Round(time.Second).String()
	return r, nil
}
