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
	"github.com/quotagate/quotagate/pkg/quota/controller"
)

// Run plans the workload, measures it and writes the report; with renderOnly it
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
		return report.RenderAgain(&Report{}, abs(o.json), abs(o.markdown))
	}
	// Keep the manager's logs to errors, as the figures do.
	ctrl.SetLogger(zap.New(zap.Level(zapcore.ErrorLevel), zap.WriteTo(os.Stderr)))
	began := time.Now()
	plan := Plan(o.seed, o.pods, o.slots, o.scale)
	r := Report{
		Date:             began.UTC().Format("2006-01-02 15:04 MST"),
		Command:          "go run ./bench " + strings.Join(os.Args[1:], " "),
		JSON:             report.Link(o.markdown, o.json),
		Machine:          report.NewMachine(),
		Manager:          figures.DefaultManagerSettings(),
		EstimateInterval: controller.DefaultEstimateInterval.String(),
		Poll:             pollInterval.String(),
		Slots:            o.slots,
		Scale:            o.scale,
		Seed:             o.seed,
		Warm:             o.warm,
		Kinds:            Kinds,
		Plan:             plan,
	}
	m, err := measure(ctx, root, o, plan)
	if err != nil {
		return err
	}
	r.Pods, r.Queue, r.Polls, r.PollErrors, r.LastPollError = m.pods, m.queue, m.polls, m.pollErrors, m.lastError
	r.Machine.LoadAfter = report.LoadAverage()
	r.Took = time.Since(began).Round(time.Second).String()
	return report.Write(r, abs(o.json), abs(o.markdown))
}
