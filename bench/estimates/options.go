package estimates

import (
	"errors"
	"flag"
)

// Options are the flags of the estimates benchmark (`go run ./bench -estimates`).
type Options struct {
	Enabled        bool
	markdown, json string
	pods, slots    int
	scale          float64
	seed           uint64
	warm           int
}

func DefaultOptions() Options {
	return Options{
		markdown: "docs/benchmarks-estimates.md",
		json:     "bench/estimates/benchmarks-estimates.json",
		pods:     160,
		slots:    8,
		scale:    1,
		seed:     1,
		warm:     10,
	}
}

func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.Enabled, "estimates", o.Enabled, "Run the estimates benchmark instead of the figures: Jobs of three kinds queue in a full Budget, and the manager's estimated starts are set against a naive baseline's.")
	fs.StringVar(&o.markdown, "estimates-out", o.markdown, "Markdown report of the estimates benchmark (relative to the repository root).")
	fs.StringVar(&o.json, "estimates-json", o.json, "JSON report of the estimates benchmark (relative to the repository root).")
	fs.IntVar(&o.pods, "estimates-pods", o.pods, "Jobs (of one pod each) the estimates benchmark creates; at scale 1 the budget admits about 14 a minute.")
	fs.IntVar(&o.slots, "estimates-slots", o.slots, "Pods (of 1 CPU each) the estimates benchmark's Budget admits at once.")
	fs.Float64Var(&o.scale, "estimates-scale", o.scale, "Factor on every run time and arrival gap of the estimates benchmark (0.25: a run four times shorter, with runs short beside the estimator's 5 s interval).")
	fs.Uint64Var(&o.seed, "estimates-seed", o.seed, "Seed of the estimates benchmark's workload: the same seed draws the same Jobs, kinds, run times and arrivals.")
	fs.IntVar(&o.warm, "estimates-warm", o.warm, "The estimates benchmark judges the pods created once every kind has this many pods ended.")
}

func (o Options) validate() error {
	switch {
	case o.pods < 1 || o.slots < 1 || o.warm < 1:
		return errors.New("-estimates-pods, -estimates-slots and -estimates-warm must be at least 1")
	case o.scale <= 0:
		return errors.New("-estimates-scale must be positive")
	}
	return nil
}
