package peers

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/quotagate/quotagate/bench/figures"
	"github.com/quotagate/quotagate/bench/report"
)

// Options are the flags of `go run ./bench -peers` (make bench-peers).
type Options struct {
	Enabled               bool
	kueue, kueueVersion   string
	markdown, json        string
	n, reps, reactionReps int
	createSamples         int
	// parts are the parts of the run (peerParts), comma-separated; schedScale divides
	// the sizes of Kueue's scheduler performance scenario.
	parts      string
	schedScale int
	// deepDepth and deepReps are the deep queue's; memoryLevels the pending pods of the
	// memory growth figure, divided by schedScale.
	deepDepth, deepReps int
	memoryLevels        figures.IntList
	// profile has quotagate's manager serve pprof, and takes CPU profiles of it
	// during Kueue's scenario.
	profile bool
	// merge is the JSON report of another run whose parts of issue 35 replace the
	// report's (mergeParts), instead of a run.
	merge string
}

// peerParts are what -peers-parts may name: the figures of issue 14 (release, reaction,
// create → ungate, memory with gated pods) and Kueue's scheduler performance scenario.
var peerParts = []string{"figures", partDeepQueue, partMemoryGrowth, partFamilyRelease, partSched}

// The parts of issue 35, by name.
const (
	partDeepQueue     = "deep-queue"
	partMemoryGrowth  = "memory-growth"
	partFamilyRelease = "family-release"
	partSched         = "kueue-scheduler"
)

func (o Options) want(part string) bool {
	return slices.Contains(strings.Split(o.parts, ","), part)
}

func DefaultOptions() Options {
	return Options{
		kueueVersion: "v0.17.0",
		markdown:     "docs/benchmarks-peers.md",
		json:         "bench/peers/benchmarks-peers.json",
		n:            1000, reps: 2, reactionReps: 100, createSamples: 200,
		parts: strings.Join(peerParts, ","), schedScale: 1,
		deepDepth: 536, deepReps: 50, memoryLevels: figures.IntList{1000, 10000, 50000},
	}
}

func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.Enabled, "peers", o.Enabled, "Measure quotagate beside Kueue and the bare client instead (make bench-peers).")
	fs.StringVar(&o.kueue, "kueue", o.kueue, "Kueue's manager binary (-peers; make bench-peers builds it from hack/tools/kueue).")
	fs.StringVar(&o.kueueVersion, "kueue-version", o.kueueVersion, "The version of that binary, for the report (-peers).")
	fs.StringVar(&o.markdown, "peers-out", o.markdown, "Markdown report of -peers (relative to the repository root).")
	fs.StringVar(&o.json, "peers-json", o.json, "JSON report of -peers (relative to the repository root).")
	fs.IntVar(&o.n, "peers-n", o.n, "Pods per release batch, and gated pods for the memory figure (-peers).")
	fs.IntVar(&o.reps, "peers-reps", o.reps, "Release repetitions per system (-peers).")
	fs.IntVar(&o.reactionReps, "peers-reaction-reps", o.reactionReps, "Reaction repetitions per system (-peers).")
	fs.IntVar(&o.createSamples, "peers-create-samples", o.createSamples, "Create→ungate samples per system (-peers).")
	fs.StringVar(&o.parts, "peers-parts", o.parts, "The parts to run, comma-separated, of "+strings.Join(peerParts, ",")+" (-peers).")
	fs.IntVar(&o.schedScale, "peers-scale", o.schedScale, "Divide the workload counts of Kueue's scheduler performance scenario and the memory growth levels by this (-peers; 1: full size).")
	fs.IntVar(&o.deepDepth, "peers-deep-depth", o.deepDepth, "Pods queued behind the head in the deep queue figure (-peers).")
	fs.IntVar(&o.deepReps, "peers-deep-reps", o.deepReps, "Rounds of the deep queue figure per system (-peers).")
	fs.StringVar(&o.merge, "peers-merge", o.merge, "Measure nothing: put the parts of this JSON report (a run of some -peers-parts, such as kueue-scheduler at full size) other than figures into the report at -peers-json, each saying the run it comes from, and render it again (-peers).")
	fs.BoolVar(&o.profile, "peers-profile", o.profile, "Take CPU profiles of quotagate's manager during Kueue's scheduler performance scenario and the family release, into the run's directory (-peers).")
	fs.Var(&o.memoryLevels, "peers-memory-levels", "Pending pods at which the memory growth figure reads each manager's memory, before -peers-scale divides them (-peers).")
}

// env is the benchmark's world (figures.Env), with the steps that measure Kueue and the
// managers running as processes as its methods.
type env struct {
	*figures.Env
	// sched is Kueue's scheduler performance scenario, when the run includes it.
	sched *schedPlan
	// pprof is quotagate's manager's /debug/pprof URL, with -peers-profile; dir is the
	// run's directory, where the profiles go.
	pprof, dir string
}

// system is one of the three measured side by side.
type system struct {
	ReleaseSeconds     []float64 `json:"releaseSeconds,omitempty"`
	FirstUngateSeconds []float64 `json:"firstUngateSeconds,omitempty"`
	ReactionMillis     []float64 `json:"reactionMillis,omitempty"`
	// CreateToUngateMilli is quotagate's with the gate policy, which admission.mode
	// auto picks on this API server; CreateToUngateWebhookMilli with its webhook.
	CreateToUngateMilli        []float64 `json:"createToUngateMillis,omitempty"`
	CreateToUngateWebhookMilli []float64 `json:"createToUngateWebhookMillis,omitempty"`
	// Idle is the manager's resident memory after start, Gated with N gated pods.
	Idle  figures.Memory `json:"idleMemory"`
	Gated figures.Memory `json:"gatedMemory"`
	// ReleaseCPU is the CPU seconds each process used during the releases, summed.
	ReleaseCPU map[string]float64 `json:"releaseCPUSeconds,omitempty"`
}

// PeersReport is bench/peers/benchmarks-peers.json.
type PeersReport struct {
	Date         string         `json:"date"`
	Command      string         `json:"command"`
	Took         string         `json:"took"`
	Machine      report.Machine `json:"machine"`
	KueueVersion string         `json:"kueueVersion"`
	N            int            `json:"n"`
	Quotagate    system         `json:"quotagate"`
	Kueue        system         `json:"kueue"`
	Bare         system         `json:"bareClient"`
	// The parts of issue 35, each when the run includes it (-peers-parts).
	DeepQueue     *deepQueue     `json:"deepQueue,omitempty"`
	MemoryGrowth  []memoryLevel  `json:"memoryGrowth,omitempty"`
	FamilyRelease *familyRelease `json:"familyRelease,omitempty"`
	Sched         *schedReport   `json:"kueueScheduler,omitempty"`
	// PartsFrom names, for a part measured in a run of its own (-peers-merge), that run.
	PartsFrom map[string]*partRun `json:"partsFrom,omitempty"`
}

// Run starts a local control plane and measures quotagate's manager, Kueue's
// manager (each a process of its own, at its defaults) and the bare client with the
// same pods, then writes the report.
func Run(ctx context.Context, o Options, renderOnly bool) (err error) {
	if renderOnly {
		_, abs, err := report.RepoPaths()
		if err != nil {
			return err
		}
		return report.RenderAgain(&PeersReport{}, abs(o.json), abs(o.markdown))
	}
	if o.merge != "" {
		return mergeParts(o)
	}
	for _, part := range strings.Split(o.parts, ",") {
		if !slices.Contains(peerParts, part) {
			return fmt.Errorf("-peers-parts: %q is none of %s", part, strings.Join(peerParts, ","))
		}
	}
	if o.kueue == "" {
		return errors.New("-kueue: the path of Kueue's manager binary is needed (make bench-peers builds it)")
	}
	root, abs, err := report.RepoPaths()
	if err != nil {
		return err
	}
	kueueBin, err := filepath.Abs(o.kueue)
	if err != nil {
		return err
	}
	if _, err := os.Stat(kueueBin); err != nil {
		return fmt.Errorf("-kueue: %w (make bench-peers builds it)", err)
	}
	ctrl.SetLogger(zap.New(zap.Level(zapcore.ErrorLevel), zap.WriteTo(os.Stderr)))
	began := time.Now()
	r := PeersReport{
		Date: began.UTC().Format("2006-01-02 15:04 MST"), Command: "go run ./bench " + strings.Join(os.Args[1:], " "),
		Machine: report.NewMachine(), KueueVersion: o.kueueVersion, N: o.n,
	}
	dir, err := os.MkdirTemp("", "quotagate-bench-peers-")
	if err != nil {
		return err
	}
	report.Logf("Building cmd/manager; logs and configuration in %s", dir)
	qgBin, err := buildQuotagateManager(ctx, root, dir)
	if err != nil {
		return err
	}
	bareBin, err := buildStatic(ctx, root, "./bench/baremanager", filepath.Join(dir, "baremanager"))
	if err != nil {
		return err
	}
	report.Logf("Starting the local control plane")
	fe, err := figures.StartEnv(ctx, root, filepath.Join(dir, "cluster"))
	if err != nil {
		return err
	}
	e := &env{Env: fe, dir: dir}
	defer func() { err = errors.Join(err, e.Cluster.Stop()) }()
	if o.want("kueue-scheduler") {
		if err := e.planSched(ctx, root, o.schedScale, &r); err != nil {
			return err
		}
	}

	if err := measureQuotagateAndBare(ctx, e, o, qgBin, bareBin, dir, &r); err != nil {
		return err
	}
	if err := measureKueue(ctx, e, o, kueueBin, root, dir, &r); err != nil {
		return err
	}
	r.Machine.LoadAfter = report.LoadAverage()
	r.Took = time.Since(began).Round(time.Second).String()
	report.Logf("Done in %s", r.Took)
	return report.Write(r, abs(o.json), abs(o.markdown))
}

func measureQuotagateAndBare(ctx context.Context, e *env, o Options, bin, bareBin, dir string, r *PeersReport) (err error) {
	p, pprof, err := e.startQuotagateProcess(ctx, bin, dir, o.profile)
	if err != nil {
		return err
	}
	e.pprof = pprof
	defer func() { e.pprof = "" }()
	defer func() { err = errors.Join(err, p.Stop()) }()
	e.Meter["quotagate manager"] = p.pid()
	defer delete(e.Meter, "quotagate manager")
	if r.Quotagate.Idle, err = figures.ProcessMemory(p.pid()); err != nil {
		return err
	}
	if o.want("figures") {
		if err := measureFiguresQuotagateAndBare(ctx, e, o, p, bareBin, dir, r); err != nil {
			return err
		}
	}
	if err := measureGrowthQuotagateAndBare(ctx, e, o, p, r); err != nil {
		return err
	}
	if e.sched != nil {
		report.Logf("quotagate: Kueue's scheduler performance scenario, %d workloads", len(e.sched.Workloads))
		if pprof != "" {
			stop := profileCPU(ctx, pprof, dir, "quotagate-sched-cpu")
			defer stop()
		}
		if r.Sched.Quotagate, err = e.runSched(ctx, *e.sched, e.quotagateSched()); err != nil {
			return fmt.Errorf("quotagate, Kueue's scheduler performance scenario: %w", err)
		}
	}
	return nil
}

func measureFiguresQuotagateAndBare(ctx context.Context, e *env, o Options, p *peerProcess, bareBin, dir string, r *PeersReport) error {
	if err := measureBareManager(ctx, e, o.n, bareBin, dir, r, func(also func(context.Context) error) error {
		report.Logf("quotagate and the bare manager: memory with %d gated pods", o.n)
		gated, err := e.parkedMemory(ctx, o.n, p.pid(), also)
		r.Quotagate.Gated = gated
		return err
	}); err != nil {
		return fmt.Errorf("quotagate memory: %w", err)
	}
	r.Quotagate.ReleaseCPU, r.Bare.ReleaseCPU = map[string]float64{}, map[string]float64{}
	ro := figures.ReleaseOpts{N: o.n}
	for i := range o.reps {
		q, err := e.ReleaseByQuotagate(ctx, ro)
		if err != nil {
			return fmt.Errorf("quotagate release, repetition %d: %w", i+1, err)
		}
		b, err := e.ReleaseByBareClient(ctx, ro, figures.DefaultManagerSettings().Workers)
		if err != nil {
			return fmt.Errorf("bare client release, repetition %d: %w", i+1, err)
		}
		r.Quotagate.add(q)
		r.Bare.add(b)
		report.Logf("  release %d: quotagate %.0f pods/s, bare client %.0f pods/s", i+1, float64(o.n)/q.Took.Seconds(), float64(o.n)/b.Took.Seconds())
	}
	report.Logf("quotagate and bare client: reaction, %d repetitions", o.reactionReps)
	q, err := e.ReactionByQuotagate(ctx, o.reactionReps)
	if err != nil {
		return fmt.Errorf("quotagate reaction: %w", err)
	}
	b, err := e.ReactionByBareClient(ctx, o.reactionReps)
	if err != nil {
		return fmt.Errorf("bare client reaction: %w", err)
	}
	r.Quotagate.ReactionMillis, r.Bare.ReactionMillis = report.Millis(q), report.Millis(b)
	report.Logf("quotagate and bare client: create→ungate, %d samples", o.createSamples)
	arms, err := e.createToUngateQuotagateAndBare(ctx, o.createSamples)
	if err != nil {
		return fmt.Errorf("quotagate and bare client create→ungate: %w", err)
	}
	q, w, b := arms[0], arms[1], arms[2]
	r.Quotagate.CreateToUngateMilli, r.Bare.CreateToUngateMilli = report.Millis(q), report.Millis(b)
	r.Quotagate.CreateToUngateWebhookMilli = report.Millis(w)
	return nil
}

func measureKueue(ctx context.Context, e *env, o Options, bin, root, dir string, r *PeersReport) (err error) {
	report.Logf("Starting Kueue %s", o.kueueVersion)
	p, err := e.startKueue(ctx, bin, root, dir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, p.Stop()) }()
	e.Meter["Kueue manager"] = p.pid()
	defer delete(e.Meter, "Kueue manager")
	if r.Kueue.Idle, err = figures.ProcessMemory(p.pid()); err != nil {
		return err
	}
	if o.want("figures") {
		if err := measureFiguresKueue(ctx, e, o, p, r); err != nil {
			return err
		}
	}
	if err := measureGrowthKueue(ctx, e, o, r); err != nil {
		return err
	}
	if e.sched != nil {
		report.Logf("Kueue: Kueue's scheduler performance scenario, %d workloads", len(e.sched.Workloads))
		if r.Sched.Kueue, err = e.runSched(ctx, *e.sched, e.kueueSched()); err != nil {
			return fmt.Errorf("kueue, its scheduler performance scenario: %w", err)
		}
	}
	return measureGrowthKueueLast(ctx, e, p, r)
}

func measureFiguresKueue(ctx context.Context, e *env, o Options, p *peerProcess, r *PeersReport) error {
	r.Kueue.ReleaseCPU = map[string]float64{}
	for i := range o.reps {
		rss := func() error { return nil }
		if i == 0 {
			rss = func() (err error) {
				r.Kueue.Gated, err = figures.ProcessMemory(p.pid())
				return err
			}
		}
		k, err := e.releaseByKueue(ctx, figures.ReleaseOpts{N: o.n}, rss)
		if err != nil {
			return fmt.Errorf("kueue release, repetition %d: %w", i+1, err)
		}
		r.Kueue.add(k)
		report.Logf("  release %d: Kueue %.1f pods/s (first after %v)", i+1, float64(o.n)/k.Took.Seconds(), k.First.Round(time.Millisecond))
	}
	report.Logf("Kueue: reaction, %d repetitions", o.reactionReps)
	k, err := e.reactionByKueue(ctx, "reaction-kueue", 0, o.reactionReps)
	if err != nil {
		return fmt.Errorf("kueue reaction: %w", err)
	}
	r.Kueue.ReactionMillis = report.Millis(k)
	report.Logf("Kueue: create→ungate, %d samples", o.createSamples)
	if k, err = e.createToUngateKueue(ctx, o.createSamples); err != nil {
		return fmt.Errorf("kueue create→ungate: %w", err)
	}
	r.Kueue.CreateToUngateMilli = report.Millis(k)
	return nil
}

func (s *system) add(run figures.ReleaseRun) {
	s.ReleaseSeconds = append(s.ReleaseSeconds, run.Took.Seconds())
	s.FirstUngateSeconds = append(s.FirstUngateSeconds, run.First.Seconds())
	for name, v := range run.CPU {
		s.ReleaseCPU[name] += v
	}
}
