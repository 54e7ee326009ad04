package figures

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/quotagate/quotagate/bench/report"
)

// Run measures the figures asked for and writes the reports.
func Run(ctx context.Context, o Options) error {
	root, abs, err := report.RepoPaths()
	if err != nil {
		return err
	}
	if o.RenderOnly {
		return report.RenderAgain(&Report{JSON: report.Link(o.markdown, o.json)}, abs(o.json), abs(o.markdown))
	}
	// Keep the manager's and the webhook's logs to errors: a log line per pod would be
	// part of what is measured.
	ctrl.SetLogger(zap.New(zap.Level(zapcore.ErrorLevel), zap.WriteTo(os.Stderr)))

	began := time.Now()
	r := Report{
		Date:    began.UTC().Format("2006-01-02 15:04 MST"),
		Command: "go run ./bench " + strings.Join(os.Args[1:], " "),
		JSON:    report.Link(o.markdown, o.json),
		Manager: DefaultManagerSettings(),
		Machine: report.NewMachine(),
	}
	if err := os.MkdirAll(abs(o.profiles), 0o755); err != nil {
		return err
	}
	profiles := map[string]profile{}

	if o.want(5) {
		report.Logf("Figure 5: the admission core's benchmarks")
		c, err := runCoreBenchmarks(ctx, root, o.coreCount)
		if err != nil {
			return err
		}
		r.Core = &c
	}
	if o.want(1) || o.want(2) || o.want(3) || o.want(4) || o.want(6) || o.want(7) || o.want(9) {
		if err := measureCluster(ctx, o, root, abs(o.profiles), &r, profiles); err != nil {
			return err
		}
	}
	if o.want(8) {
		x, err := measureEstimatesOnOff(ctx, root, r.Manager, o.onOffN, o.onOffDepth, o.onOffReactions, o.onOffCreates, o.onOffReps, o.onOffPace)
		if err != nil {
			return fmt.Errorf("figure 8: %w", err)
		}
		r.Estimates = &x
	}
	for name, prof := range profiles {
		top, err := pprofTop(ctx, root, prof)
		if err != nil {
			return err
		}
		if r.Profiles == nil {
			r.Profiles = map[string]string{}
		}
		r.Profiles[name] = top
	}
	r.Machine.LoadAfter = report.LoadAverage()
	r.Took = time.Since(began).Round(time.Second).String()
	return report.Write(r, abs(o.json), abs(o.markdown))
}

func measureCluster(ctx context.Context, o Options, root, profileDir string, r *Report, profiles map[string]profile) (err error) {
	report.Logf("Starting the local control plane")
	dir, err := os.MkdirTemp("", "quotagate-bench-")
	if err != nil {
		return err
	}
	e, err := StartEnv(ctx, root, dir)
	if err != nil {
		return err
	}
	defer func() {
		err = errors.Join(err, e.Cluster.Stop(), os.RemoveAll(dir))
	}()
	if o.want(3) {
		// Before any manager runs: a manager would admit the webhook's pods, which no
		// budget covers, and add its writes to what is measured.
		report.Logf("Figure 3: pod create latency with the webhook, a bare webhook, the gate policy, its mutation alone, and none")
		cpu := filepath.Join(profileDir, "apiserver-create-cpu.pprof")
		w, err := e.measureWebhook(ctx, o.concurrencies, o.createSamples, cpu)
		if err != nil {
			return fmt.Errorf("figure 3: %w", err)
		}
		r.Webhook = &w
		profiles[fmt.Sprintf("kube-apiserver CPU in admission, %d s of figure 3's paired creates at concurrency %d (all three arms; cumulative, admission plugins only)", apiserverProfileSeconds, o.concurrencies[0])] =
			profile{file: cpu, args: []string{"-cum", "-focus=admission/plugin", "-show=admission|cel-go|json-patch|encoding/json|sigs.k8s.io/json|webhook|policy"}}
	}
	defer func() { err = errors.Join(err, e.StopManager()) }()
	if o.want(1) || o.want(2) || o.want(6) || o.want(7) || o.want(9) {
		if err := e.UseManager(ctx, r.Manager, false); err != nil {
			return err
		}
		if err := measureWithManager(ctx, e, o, profileDir, r, profiles); err != nil {
			return err
		}
	}
	if o.want(4) {
		report.Logf("Figure 4: manager heap with %v gated pods", o.memoryLevels)
		heap := filepath.Join(profileDir, "manager-heap.pprof")
		mem, err := e.measureMemory(ctx, o.memoryLevels, heap, report.Logf)
		if err != nil {
			return fmt.Errorf("figure 4: %w", err)
		}
		r.Memory = &mem
		profiles["Manager heap (in use) with "+strconv.Itoa(o.memoryLevels[len(o.memoryLevels)-1])+" gated pods"] = profile{file: heap}
	}
	return nil
}

func measureWithManager(ctx context.Context, e *Env, o Options, profileDir string, r *Report, profiles map[string]profile) error {
	workers := r.Manager.Workers
	if o.want(1) {
		report.Logf("Figure 1: release throughput, %d pods, %d repetitions", o.n, o.reps)
		cpu := filepath.Join(profileDir, "manager-release-cpu.pprof")
		rel, err := e.measureRelease(ctx, ReleaseOpts{N: o.n, CPUProfile: cpu}, o.reps, workers, o.flavors, o.eventlessReps, report.Logf)
		if err != nil {
			return fmt.Errorf("figure 1: %w", err)
		}
		r.Release = &rel
		profiles["Manager CPU while releasing "+strconv.Itoa(o.n)+" pods (figure 1, first repetition)"] = profile{file: cpu}
		if o.flavors > 0 {
			profiles["Manager CPU while releasing "+strconv.Itoa(o.n)+" pods over "+strconv.Itoa(o.flavors)+" flavors (figure 1, first repetition)"] = profile{file: FlavoredProfile(cpu)}
		}
	}
	if o.want(2) {
		report.Logf("Figure 2: reaction latency, %d repetitions", o.reactionReps)
		re, err := e.measureReaction(ctx, o.reactionReps, o.flavors)
		if err != nil {
			return fmt.Errorf("figure 2: %w", err)
		}
		r.Reaction = &re
	}
	if o.want(6) {
		report.Logf("Figure 6: freed capacity to Running, %d pods, %d repetitions", o.endToEndN, o.endToEndReps)
		rel, err := e.measureRelease(ctx, ReleaseOpts{N: o.endToEndN, ToRunning: true}, o.endToEndReps, workers, 0, 0, report.Logf)
		if err != nil {
			return fmt.Errorf("figure 6: %w", err)
		}
		r.EndToEnd = &rel
	}
	if o.want(7) {
		u, err := e.measureCreateToUngate(ctx, o.ungateN, o.ungateBacklog, o.ungateReps, report.Logf)
		if err != nil {
			return fmt.Errorf("figure 7: %w", err)
		}
		r.CreateToUngate = &u
	}
	if o.want(9) {
		report.Logf("Figure 9: window edge to first ungate, %d rounds", o.windowRounds)
		x, err := e.measureWindowEdge(ctx, o.windowRounds)
		if err != nil {
			return fmt.Errorf("figure 9: %w", err)
		}
		r.WindowEdge = &x
	}
	return nil
}

// profile is a pprof file and the options its top is shown with.
type profile struct {
	file string
	args []string
}

// pprofTop is `go tool pprof -top` of a profile, trimmed to its first lines.
func pprofTop(ctx context.Context, root string, p profile) (string, error) {
	args := append([]string{"tool", "pprof", "-top", "-nodecount=20"}, p.args...)
	cmd := exec.CommandContext(ctx, "go", append(args, p.file)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go tool pprof %s: %w\n%s", p.file, err, out)
	}
	// Drop the header lines that name the local file and build.
	var keep []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "File:") || strings.HasPrefix(l, "Build ID:") || strings.HasPrefix(l, "Time:") {
			continue
		}
		keep = append(keep, shortenShapes(l))
	}
	return strings.Join(keep, "\n"), nil
}

// shortenShapes replaces the type arguments of generic functions in a pprof line
// ("Plugin[go.shape.struct { Policy *...; Bindings []*... }]") with "[…]": they run to
// hundreds of characters and say nothing the function's name does not.
func shortenShapes(line string) string {
	var b strings.Builder
	for {
		i := strings.Index(line, "[go.shape.")
		if i < 0 {
			b.WriteString(line)
			return b.String()
		}
		b.WriteString(line[:i])
		depth, end := 0, len(line)
		for j := i; j < len(line); j++ {
			switch line[j] {
			case '[':
				depth++
			case ']':
				depth--
			}
			if depth == 0 {
				end = j + 1
				break
			}
		}
		b.WriteString("[…]")
		line = line[end:]
	}
}
