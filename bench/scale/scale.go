package scale

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/quotagate/quotagate/bench/figures"
	"github.com/quotagate/quotagate/bench/report"
)

// Options are the flags of the scale benchmark (`go run ./bench -scale`).
type Options struct {
	Enabled            bool
	markdown, json     string
	profiles           string
	sizes              figures.IntList
	budgetsPer1000Pods int
	namespaces         int
	createWorkers      int
	reactionReps       int
	sizeTimeout        time.Duration
	keepGoing          bool
}

func DefaultOptions() Options {
	return Options{
		markdown:           "docs/benchmarks-scale.md",
		json:               "bench/scale/benchmarks-scale.json",
		profiles:           "_output/bench",
		sizes:              figures.IntList{1000, 10000, 50000, 100000},
		budgetsPer1000Pods: 10,
		namespaces:         10,
		createWorkers:      64,
		reactionReps:       200,
		sizeTimeout:        45 * time.Minute,
	}
}

func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.Enabled, "scale", o.Enabled, "Run the scale benchmark instead of the figures: gated pods in many budgets, one fresh control plane per size.")
	fs.StringVar(&o.markdown, "scale-out", o.markdown, "Markdown report of the scale benchmark (relative to the repository root).")
	fs.StringVar(&o.json, "scale-json", o.json, "JSON report of the scale benchmark (relative to the repository root).")
	fs.StringVar(&o.profiles, "scale-profiles", o.profiles, "Directory for the manager's heap profile at each size, scale-heap-<pods>.pprof (relative to the repository root).")
	fs.Var(&o.sizes, "sizes", "Gated pod counts of the scale benchmark, comma-separated, ascending.")
	fs.IntVar(&o.budgetsPer1000Pods, "budgets-per-1000-pods", o.budgetsPer1000Pods, "Budgets per 1,000 pods in the scale benchmark (10: 100 pods a budget).")
	fs.IntVar(&o.namespaces, "namespaces", o.namespaces, "Namespaces the scale benchmark spreads its Budgets over (fewer if there are fewer budgets).")
	fs.IntVar(&o.createWorkers, "create-workers", o.createWorkers, "Pod creates in flight at once in the scale benchmark.")
	fs.IntVar(&o.reactionReps, "scale-reaction-reps", o.reactionReps, "Repetitions of the reaction chain measured beside each backlog.")
	fs.DurationVar(&o.sizeTimeout, "size-timeout", o.sizeTimeout, "Time one size of the scale benchmark may take before it is recorded as broken.")
	fs.BoolVar(&o.keepGoing, "keep-going", o.keepGoing, "Measure the larger sizes after one breaks (by default the run stops there).")
}

// validate checks the options and returns the sizes to measure.
func (o Options) validate() error {
	if len(o.sizes) == 0 {
		return errors.New("-sizes is empty")
	}
	if !slices.IsSorted(o.sizes) {
		return fmt.Errorf("-sizes must ascend: %v", o.sizes)
	}
	for _, n := range o.sizes {
		if n < 1 {
			return fmt.Errorf("-sizes: %d is not a pod count", n)
		}
	}
	if o.budgetsPer1000Pods < 1 || o.namespaces < 1 || o.createWorkers < 1 || o.reactionReps < 1 {
		return errors.New("-budgets-per-1000-pods, -namespaces, -create-workers and -scale-reaction-reps must be at least 1")
	}
	return nil
}

// layoutFor is how a size spreads over budgets and namespaces: at least one budget,
// and no more namespaces than budgets.
func (o Options) layoutFor(pods int) (budgets, namespaces int) {
	budgets = max(1, pods*o.budgetsPer1000Pods/1000)
	return budgets, min(o.namespaces, budgets)
}

// Run measures every size on a control plane of its own and writes the report after
// each, so a run cut short keeps what it measured; with renderOnly it renders the
// Markdown report again from the JSON one.
func Run(ctx context.Context, o Options, renderOnly bool) error {
	if err := o.validate(); err != nil {
		return err
	}
	root, abs, err := report.RepoPaths()
	if err != nil {
		return err
	}
	if renderOnly {
		return report.RenderAgain(&scaleReport{}, abs(o.json), abs(o.markdown))
	}
	ctrl.SetLogger(zap.New(zap.Level(zapcore.ErrorLevel), zap.WriteTo(os.Stderr)))
	o.profiles = abs(o.profiles)
	if err := os.MkdirAll(o.profiles, 0o755); err != nil {
		return err
	}
	began := time.Now()
	r := scaleReport{
		Date:               began.UTC().Format("2006-01-02 15:04 MST"),
		Command:            "go run ./bench " + strings.Join(os.Args[1:], " "),
		Machine:            report.NewMachine(),
		Manager:            figures.DefaultManagerSettings(),
		BudgetsPer1000Pods: o.budgetsPer1000Pods,
		Namespaces:         o.namespaces,
		CreateWorkers:      o.createWorkers,
		ReactionReps:       o.reactionReps,
	}
	for _, n := range o.sizes {
		budgets, namespaces := o.layoutFor(n)
		report.Logf("Scale: %d gated pods in %d budgets over %d namespaces", n, budgets, namespaces)
		pt := scalePoint{Pods: n, Budgets: budgets, Namespaces: namespaces, LoadBefore: report.LoadAverage()}
		sctx, cancel := context.WithTimeout(ctx, o.sizeTimeout)
		err := measureScale(sctx, root, o, &pt)
		cancel()
		pt.LoadAfter = report.LoadAverage()
		if err != nil {
			pt.Error = err.Error()
			report.Logf("  size %d broke: %v", n, err)
		}
		r.Sizes = append(r.Sizes, pt)
		r.Machine.LoadAfter = report.LoadAverage()
		r.Took = time.Since(began).Round(time.Second).String()
		if werr := report.Write(r, abs(o.json), abs(o.markdown)); werr != nil {
			return werr
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil && !o.keepGoing {
			break
		}
	}
	return nil
}
