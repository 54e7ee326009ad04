package figures

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Options are the flags of the nine figures (`go run ./bench`).
type Options struct {
	markdown, json, profiles string
	figures                  IntList
	n, reps                  int
	reactionReps             int
	createSamples            int
	concurrencies            IntList
	memoryLevels             IntList
	endToEndN, endToEndReps  int
	coreCount                int
	RenderOnly               bool
	eventlessReps            int
	ungateN, ungateBacklog   int
	ungateReps               int
	flavors                  int
	// onOff* size figure 8 (estimates on and off).
	onOffN, onOffDepth        int
	onOffReactions, onOffReps int
	onOffCreates              int
	onOffPace                 time.Duration
	// windowRounds sizes figure 9 (a window's edge to the first ungate).
	windowRounds int
}

func DefaultOptions() Options {
	return Options{
		markdown:       "docs/benchmarks.md",
		json:           "bench/figures/benchmarks.json",
		profiles:       "_output/bench",
		figures:        IntList{1, 2, 3, 4, 5, 6, 7, 8, 9},
		n:              2000,
		reps:           3,
		reactionReps:   500,
		createSamples:  1000,
		concurrencies:  IntList{1, 16},
		memoryLevels:   IntList{0, 10000, 50000},
		endToEndN:      500,
		endToEndReps:   2,
		coreCount:      3,
		eventlessReps:  1,
		ungateN:        200,
		ungateBacklog:  2000,
		ungateReps:     3,
		flavors:        2,
		onOffN:         1000,
		onOffDepth:     200,
		onOffReactions: 50,
		onOffCreates:   60,
		onOffReps:      3,
		onOffPace:      200 * time.Millisecond,
		windowRounds:   20,
	}
}

func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.markdown, "out", o.markdown, "Markdown report to write (relative to the repository root).")
	fs.StringVar(&o.json, "json", o.json, "JSON report to write (relative to the repository root).")
	fs.StringVar(&o.profiles, "profiles", o.profiles, "Directory for the pprof profiles (relative to the repository root).")
	fs.Var(&o.figures, "figures", "Figures to measure, comma-separated: 1 release, 2 reaction, 3 webhook, 4 memory, 5 core, 6 end to end, 7 create to ungate, 8 estimates on and off, 9 window edge to first ungate.")
	fs.IntVar(&o.n, "n", o.n, "Pods per release batch (figure 1).")
	fs.IntVar(&o.reps, "reps", o.reps, "Repetitions of each release batch (figure 1).")
	fs.IntVar(&o.reactionReps, "reaction-reps", o.reactionReps, "Repetitions of the reaction chain (figure 2).")
	fs.IntVar(&o.createSamples, "create-samples", o.createSamples, "Timed pod creates per concurrency and setting (figure 3).")
	fs.Var(&o.concurrencies, "concurrency", "Create concurrencies (figure 3).")
	fs.Var(&o.memoryLevels, "memory-levels", "Gated pod counts the heap is read at, ascending (figure 4).")
	fs.IntVar(&o.endToEndN, "e2e-n", o.endToEndN, "Pods per end-to-end batch (figure 6).")
	fs.IntVar(&o.endToEndReps, "e2e-reps", o.endToEndReps, "Repetitions of the end-to-end batch (figure 6).")
	fs.IntVar(&o.coreCount, "core-count", o.coreCount, "go test -count of the admission core's benchmarks (figure 5).")
	fs.IntVar(&o.eventlessReps, "eventless-reps", o.eventlessReps, "Repetitions of figure 1 with the manager's events dropped, a diagnostic of what they cost; 0 skips it.")
	fs.IntVar(&o.ungateN, "ungate-n", o.ungateN, "Pods created one at a time per series (figure 7).")
	fs.IntVar(&o.ungateBacklog, "ungate-backlog", o.ungateBacklog, "Pods of the backlog binding while figure 7's loaded series run.")
	fs.IntVar(&o.ungateReps, "ungate-reps", o.ungateReps, "Repetitions of each figure 7 series (each loaded one with a backlog of its own), samples pooled.")
	fs.IntVar(&o.flavors, "flavors", o.flavors, "Flavors the flavored arms of figures 1 and 2 split their budget over (0 skips those arms).")
	fs.IntVar(&o.onOffN, "onoff-n", o.onOffN, "Pods of 100m released and kept holding quota in each arm of figure 8 (estimates on and off).")
	fs.IntVar(&o.onOffDepth, "onoff-depth", o.onOffDepth, "Pods queued behind the held ones, and behind figure 8's reaction chain.")
	fs.IntVar(&o.onOffReactions, "onoff-reactions", o.onOffReactions, "Reactions per arm and repetition (figure 8).")
	fs.IntVar(&o.onOffCreates, "onoff-creates", o.onOffCreates, "Creates with room per arm and repetition (figure 8).")
	fs.IntVar(&o.onOffReps, "onoff-reps", o.onOffReps, "Repetitions of each arm of figure 8, each on a fresh control plane, the arms alternating.")
	fs.DurationVar(&o.onOffPace, "onoff-pace", o.onOffPace, "Mean pause before each of figure 8's samples (drawn from 0 to twice it), so that they fall at every moment of the estimator's passes.")
	fs.IntVar(&o.windowRounds, "window-rounds", o.windowRounds, "Windows opened, and raises by hand beside them, in figure 9.")
	fs.BoolVar(&o.RenderOnly, "render-only", o.RenderOnly, "Measure nothing: render the Markdown report again from the JSON one.")
}

func (o Options) want(figure int) bool {
	for _, f := range o.figures {
		if f == figure {
			return true
		}
	}
	return false
}

// IntList is a comma-separated list of integers as a flag.
type IntList []int

func (l *IntList) String() string {
	parts := make([]string, len(*l))
	for i, v := range *l {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ",")
}

func (l *IntList) Set(s string) error {
	var out IntList
	for _, part := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil {
			return fmt.Errorf("%q is not a comma-separated list of integers", s)
		}
		out = append(out, v)
	}
	*l = out
	return nil
}
