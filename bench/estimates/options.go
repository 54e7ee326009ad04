package estimates

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/quotagate/quotagate/pkg/quota/controller"
)

// Options are the flags of the estimates benchmark (`go run ./bench -estimates`).
type Options struct {
	Enabled        bool
	markdown, json string
	pods           int
	scale          float64
	seed           uint64
	warm           int
	workloads      string
	interval       time.Duration
}

func DefaultOptions() Options {
	return Options{
		markdown:  "docs/benchmarks-estimates.md",
		json:      "bench/estimates/benchmarks-estimates.json",
		pods:      160,
		scale:     1,
		seed:      1,
		warm:      10,
		workloads: "fifo,mix,family",
		interval:  controller.DefaultEstimateInterval,
	}
}

func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.Enabled, "estimates", o.Enabled, "Run the estimates benchmark instead of the figures: Jobs of known run times queue in full Budgets (three workloads), and the manager's estimated starts are set against a naive baseline's and an oracle's.")
	fs.StringVar(&o.markdown, "estimates-out", o.markdown, "Markdown report of the estimates benchmark (relative to the repository root).")
	fs.StringVar(&o.json, "estimates-json", o.json, "JSON report of the estimates benchmark (relative to the repository root).")
	fs.IntVar(&o.pods, "estimates-pods", o.pods, "Jobs (of one pod each) the estimates benchmark creates per workload; at scale 1 the budgets admit about 10 to 14 a minute.")
	fs.Float64Var(&o.scale, "estimates-scale", o.scale, "Factor on every run time and arrival gap of the estimates benchmark (0.25: a run four times shorter, with runs short beside the estimator's 5 s interval).")
	fs.Uint64Var(&o.seed, "estimates-seed", o.seed, "Seed of the estimates benchmark's workloads: the same seed draws the same Jobs, kinds, run times and arrivals.")
	fs.IntVar(&o.warm, "estimates-warm", o.warm, "The estimates benchmark judges the pods created once every kind that arrives from the start has this many pods ended.")
	fs.StringVar(&o.workloads, "estimates-workloads", o.workloads, "Comma-separated workloads the estimates benchmark runs, in turn, each on a fresh control plane: fifo, mix, family.")
	fs.DurationVar(&o.interval, "estimates-interval", o.interval, "The manager's --estimate-interval in the estimates benchmark: the least time between two estimator passes.")
}

// selected are the workloads o names, in the order it names them.
func (o Options) selected() ([]Workload, error) {
	all := Workloads(o.pods)
	var out []Workload
	for name := range strings.SplitSeq(o.workloads, ",") {
		i := slices.IndexFunc(all, func(w Workload) bool { return w.Name == strings.TrimSpace(name) })
		if i < 0 {
			return nil, fmt.Errorf("-estimates-workloads: no workload %q (fifo, mix, family)", name)
		}
		out = append(out, all[i])
	}
	return out, nil
}

func (o Options) validate() error {
	switch {
	case o.pods < 1 || o.warm < 1:
		return errors.New("-estimates-pods and -estimates-warm must be at least 1")
	case o.scale <= 0:
		return errors.New("-estimates-scale must be positive")
	case o.interval <= 0:
		return errors.New("-estimates-interval must be positive: the benchmark judges the estimator's estimates")
	}
	_, err := o.selected()
	return err
}
