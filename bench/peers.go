package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// peerOptions are the flags of `go run ./bench -peers` (make bench-peers).
type peerOptions struct {
	enabled               bool
	kueue, kueueVersion   string
	markdown, json        string
	n, reps, reactionReps int
	createSamples         int
}

func defaultPeerOptions() peerOptions {
	return peerOptions{
		kueueVersion: "v0.17.0",
		markdown:     "docs/benchmarks-peers.md",
		json:         "docs/benchmarks-peers.json",
		n:            1000, reps: 2, reactionReps: 100, createSamples: 200,
	}
}

func (o *peerOptions) addFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.enabled, "peers", o.enabled, "Measure quotagate beside Kueue and the bare client instead (make bench-peers).")
	fs.StringVar(&o.kueue, "kueue", o.kueue, "Kueue's manager binary (-peers; make bench-peers builds it from hack/tools/kueue).")
	fs.StringVar(&o.kueueVersion, "kueue-version", o.kueueVersion, "The version of that binary, for the report (-peers).")
	fs.StringVar(&o.markdown, "peers-out", o.markdown, "Markdown report of -peers (relative to the repository root).")
	fs.StringVar(&o.json, "peers-json", o.json, "JSON report of -peers (relative to the repository root).")
	fs.IntVar(&o.n, "peers-n", o.n, "Pods per release batch, and gated pods for the memory figure (-peers).")
	fs.IntVar(&o.reps, "peers-reps", o.reps, "Release repetitions per system (-peers).")
	fs.IntVar(&o.reactionReps, "peers-reaction-reps", o.reactionReps, "Reaction repetitions per system (-peers).")
	fs.IntVar(&o.createSamples, "peers-create-samples", o.createSamples, "Create→ungate samples per system (-peers).")
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
	Idle  memory `json:"idleMemory"`
	Gated memory `json:"gatedMemory"`
	// ReleaseCPU is the CPU seconds each process used during the releases, summed.
	ReleaseCPU map[string]float64 `json:"releaseCPUSeconds,omitempty"`
}

// PeersReport is docs/benchmarks-peers.json.
type PeersReport struct {
	Date         string  `json:"date"`
	Command      string  `json:"command"`
	Took         string  `json:"took"`
	Machine      Machine `json:"machine"`
	KueueVersion string  `json:"kueueVersion"`
	N            int     `json:"n"`
	Quotagate    system  `json:"quotagate"`
	Kueue        system  `json:"kueue"`
	Bare         system  `json:"bareClient"`
}

// runPeers starts a local control plane and measures quotagate's manager, Kueue's
// manager (each a process of its own, at its defaults) and the bare client with the
// same pods, then writes the report.
func runPeers(ctx context.Context, o peerOptions, renderOnly bool) (err error) {
	if renderOnly {
		_, abs, err := repoPaths()
		if err != nil {
			return err
		}
		return renderAgain(&PeersReport{}, abs(o.json), abs(o.markdown))
	}
	if o.kueue == "" {
		return errors.New("-kueue: the path of Kueue's manager binary is needed (make bench-peers builds it)")
	}
	root, abs, err := repoPaths()
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
		Machine: machine(), KueueVersion: o.kueueVersion, N: o.n,
	}
	dir, err := os.MkdirTemp("", "quotagate-bench-peers-")
	if err != nil {
		return err
	}
	logf("Building cmd/manager; logs and configuration in %s", dir)
	qgBin, err := buildQuotagateManager(ctx, root, dir)
	if err != nil {
		return err
	}
	bareBin, err := buildStatic(ctx, root, "./bench/baremanager", filepath.Join(dir, "baremanager"))
	if err != nil {
		return err
	}
	logf("Starting the local control plane")
	e, err := startEnv(ctx, root, filepath.Join(dir, "cluster"))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, e.cluster.Stop()) }()

	if err := measureQuotagateAndBare(ctx, e, o, qgBin, bareBin, dir, &r); err != nil {
		return err
	}
	if err := measureKueue(ctx, e, o, kueueBin, root, dir, &r); err != nil {
		return err
	}
	r.Machine.LoadAfter = loadAverage()
	r.Took = time.Since(began).Round(time.Second).String()
	logf("Done in %s", r.Took)
	return write(r, abs(o.json), abs(o.markdown))
}

func measureQuotagateAndBare(ctx context.Context, e *env, o peerOptions, bin, bareBin, dir string, r *PeersReport) (err error) {
	p, err := e.startQuotagateProcess(ctx, bin, dir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, p.stop()) }()
	e.meter["quotagate manager"] = p.pid()
	defer delete(e.meter, "quotagate manager")
	if r.Quotagate.Idle, err = processMemory(p.pid()); err != nil {
		return err
	}
	if err := measureBareManager(ctx, e, o.n, bareBin, dir, r, func(also func(context.Context) error) error {
		logf("quotagate and the bare manager: memory with %d gated pods", o.n)
		gated, err := e.parkedMemory(ctx, o.n, p.pid(), also)
		r.Quotagate.Gated = gated
		return err
	}); err != nil {
		return fmt.Errorf("quotagate memory: %w", err)
	}
	r.Quotagate.ReleaseCPU, r.Bare.ReleaseCPU = map[string]float64{}, map[string]float64{}
	ro := releaseOpts{n: o.n}
	for i := range o.reps {
		q, err := e.releaseByQuotagate(ctx, ro)
		if err != nil {
			return fmt.Errorf("quotagate release, repetition %d: %w", i+1, err)
		}
		b, err := e.releaseByBareClient(ctx, ro, defaultManagerSettings().Workers)
		if err != nil {
			return fmt.Errorf("bare client release, repetition %d: %w", i+1, err)
		}
		r.Quotagate.add(q)
		r.Bare.add(b)
		logf("  release %d: quotagate %.0f pods/s, bare client %.0f pods/s", i+1, float64(o.n)/q.took.Seconds(), float64(o.n)/b.took.Seconds())
	}
	logf("quotagate and bare client: reaction, %d repetitions", o.reactionReps)
	q, err := e.reactionByQuotagate(ctx, o.reactionReps)
	if err != nil {
		return fmt.Errorf("quotagate reaction: %w", err)
	}
	b, err := e.reactionByBareClient(ctx, o.reactionReps)
	if err != nil {
		return fmt.Errorf("bare client reaction: %w", err)
	}
	r.Quotagate.ReactionMillis, r.Bare.ReactionMillis = millis(q), millis(b)
	logf("quotagate and bare client: create→ungate, %d samples", o.createSamples)
	arms, err := e.createToUngateQuotagateAndBare(ctx, o.createSamples)
	if err != nil {
		return fmt.Errorf("quotagate and bare client create→ungate: %w", err)
	}
	q, w, b := arms[0], arms[1], arms[2]
	r.Quotagate.CreateToUngateMilli, r.Bare.CreateToUngateMilli = millis(q), millis(b)
	r.Quotagate.CreateToUngateWebhookMilli = millis(w)
	return nil
}

func measureKueue(ctx context.Context, e *env, o peerOptions, bin, root, dir string, r *PeersReport) (err error) {
	logf("Starting Kueue %s", o.kueueVersion)
	p, err := e.startKueue(ctx, bin, root, dir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, p.stop()) }()
	e.meter["Kueue manager"] = p.pid()
	defer delete(e.meter, "Kueue manager")
	if r.Kueue.Idle, err = processMemory(p.pid()); err != nil {
		return err
	}
	r.Kueue.ReleaseCPU = map[string]float64{}
	for i := range o.reps {
		rss := func() error { return nil }
		if i == 0 {
			rss = func() (err error) {
				r.Kueue.Gated, err = processMemory(p.pid())
				return err
			}
		}
		k, err := e.releaseByKueue(ctx, releaseOpts{n: o.n}, rss)
		if err != nil {
			return fmt.Errorf("kueue release, repetition %d: %w", i+1, err)
		}
		r.Kueue.add(k)
		logf("  release %d: Kueue %.1f pods/s (first after %v)", i+1, float64(o.n)/k.took.Seconds(), k.first.Round(time.Millisecond))
	}
	logf("Kueue: reaction, %d repetitions", o.reactionReps)
	k, err := e.reactionByKueue(ctx, o.reactionReps)
	if err != nil {
		return fmt.Errorf("kueue reaction: %w", err)
	}
	r.Kueue.ReactionMillis = millis(k)
	logf("Kueue: create→ungate, %d samples", o.createSamples)
	if k, err = e.createToUngateKueue(ctx, o.createSamples); err != nil {
		return fmt.Errorf("kueue create→ungate: %w", err)
	}
	r.Kueue.CreateToUngateMilli = millis(k)
	return nil
}

func (s *system) add(run releaseRun) {
	s.ReleaseSeconds = append(s.ReleaseSeconds, run.took.Seconds())
	s.FirstUngateSeconds = append(s.FirstUngateSeconds, run.first.Seconds())
	for name, v := range run.cpu {
		s.ReleaseCPU[name] += v
	}
}
