package peers

import (
	"context"
	"fmt"
	"strings"

	"github.com/quotagate/quotagate/bench/report"
)

// Goals of issue 35 for the deep queue, memory growth and the family release.
const (
	deepQueueGoal     = 2    // quotagate's head-of-queue p50 within 2× the bare client's
	growthMemoryGoal  = 0.25 // quotagate's RSS at the last level at most 1/4 of Kueue's
	familyReleaseGoal = 0.9  // the family's release throughput at least 0.9 of the plain budget's
)

// measureGrowthQuotagateAndBare runs, with quotagate's manager (process p), the deep
// queue (quotagate and the bare client), the memory growth and the family release, as
// o's parts name them.
func measureGrowthQuotagateAndBare(ctx context.Context, e *env, o Options, p *peerProcess, r *PeersReport) error {
	if o.want("deep-queue") {
		report.Logf("quotagate and bare client: deep queue, %d pods behind the head, %d rounds", o.deepDepth, o.deepReps)
		r.DeepQueue = &deepQueue{Depth: o.deepDepth}
		ns, err := e.NewNamespace(ctx, "deep-qg", true)
		if err != nil {
			return err
		}
		q, err := e.ReactionBehind(ctx, ns, o.deepDepth, o.deepReps)
		if err != nil {
			return fmt.Errorf("quotagate deep queue: %w", err)
		}
		b, err := e.BareReactionBehind(ctx, "deep-bare", o.deepDepth, o.deepReps)
		if err != nil {
			return fmt.Errorf("bare client deep queue: %w", err)
		}
		r.DeepQueue.Quotagate, r.DeepQueue.Bare = report.Millis(q), report.Millis(b)
	}
	if o.want("memory-growth") {
		levels := scaledLevels(o.memoryLevels, o.schedScale)
		report.Logf("quotagate: memory growth at %v pending pods", levels)
		r.MemoryGrowth = make([]memoryLevel, len(levels))
		for i, l := range levels {
			r.MemoryGrowth[i].Pending = l
		}
		if err := e.memoryGrowthQuotagate(ctx, levels, p.pid(), r.MemoryGrowth); err != nil {
			return fmt.Errorf("quotagate memory growth: %w", err)
		}
	}
	if o.want("family-release") {
		report.Logf("quotagate: release in a borrowing family with fair sharing beside the plain budget, %d pods, %d repetitions", o.n, o.reps)
		if e.pprof != "" {
			stop := profileCPU(ctx, e.pprof, e.dir, "quotagate-family-cpu")
			defer stop()
		}
		var err error
		if r.FamilyRelease, err = measureFamilyRelease(ctx, e, o.n, o.reps); err != nil {
			return err
		}
	}
	return nil
}

// measureGrowthKueue is the deep queue on Kueue's side.
func measureGrowthKueue(ctx context.Context, e *env, o Options, r *PeersReport) error {
	if r.DeepQueue != nil {
		report.Logf("Kueue: deep queue, %d pods behind the head, %d rounds", o.deepDepth, o.deepReps)
		k, err := e.reactionByKueue(ctx, "deep-kueue", o.deepDepth, o.deepReps)
		if err != nil {
			return fmt.Errorf("kueue deep queue: %w", err)
		}
		r.DeepQueue.Kueue = report.Millis(k)
	}
	return nil
}

// measureGrowthKueueLast is the memory growth on Kueue's side. It leaves its pods in
// place (Kueue releases each one's finalizer, some ten a second), so it is the last
// thing measured on the control plane, which stops after it.
func measureGrowthKueueLast(ctx context.Context, e *env, p *peerProcess, r *PeersReport) error {
	if len(r.MemoryGrowth) > 0 {
		levels := make([]int, len(r.MemoryGrowth))
		for i, m := range r.MemoryGrowth {
			levels[i] = m.Pending
		}
		report.Logf("Kueue: memory growth at %v pending Workloads", levels)
		if err := e.memoryGrowthKueue(ctx, levels, p.pid(), r.MemoryGrowth); err != nil {
			return fmt.Errorf("kueue memory growth: %w", err)
		}
	}
	return nil
}

// growthMarkdown renders the parts of issue 35 other than Kueue's scenario that r holds.
func (r PeersReport) growthMarkdown() string {
	var b strings.Builder
	if d := r.DeepQueue; d != nil {
		q, bare, k := report.Summarize(d.Quotagate), report.Summarize(d.Bare), report.Summarize(d.Kueue)
		x := report.Ratio(q.P50, bare.P50)
		fmt.Fprintf(&b, `
## The deep queue

A quota of one pod of one cpu, %[1]d pods queued behind the head (Kueue's users' kueue#14477:
hundreds of workloads waiting while quota frees a little at a time); each round the admitted pod
is marked Succeeded and the time runs to the next pod's ungate event, %[2]d rounds per system.
Goal: quotagate's p50 within %[3]d× the bare client's.
%[13]s
| Room → head ungated (ms) | quotagate | bare client | Kueue | quotagate/bare | Goal | Met? |
|---|---:|---:|---:|---:|---|---|
| p50 | %[4]s | %[5]s | %[6]s | %[7]s | ≤ %[3]d× | %[8]s |
| p99 | %[9]s | %[10]s | %[11]s | %[12]s | — | — |
`, d.Depth, q.N, deepQueueGoal, fmtMS(q.P50), fmtMS(bare.P50), fmtMS(k.P50), fmtRatio(x), report.YesNo(x > 0 && x <= deepQueueGoal),
			fmtMS(q.P99), fmtMS(bare.P99), fmtMS(k.P99), fmtRatio(report.Ratio(q.P99, bare.P99)), r.fromLine(partDeepQueue))
	}
	if len(r.MemoryGrowth) > 0 {
		b.WriteString(`
## Memory as the queue grows

Each manager's memory with that many pods pending behind a quota of zero (quotagate: gated pods
its Budget's status counts; Kueue: pending Workloads its ClusterQueue's status counts), read
from /proc/<pid>/status: RSS, and of it the private part (RssAnon: the Go heap and stacks).
Goal: quotagate's RSS at the last level at most 1/4 of Kueue's.
` + r.fromLine(partMemoryGrowth) + `
| Pending pods | quotagate RSS (MiB) | of which private | Kueue RSS (MiB) | of which private | quotagate/Kueue RSS | Goal | Met? |
|---:|---:|---:|---:|---:|---:|---|---|
`)
		for i, m := range r.MemoryGrowth {
			x := report.Ratio(float64(m.Quotagate.RSS), float64(m.Kueue.RSS))
			goal, met := "—", "—"
			if i == len(r.MemoryGrowth)-1 {
				goal, met = fmt.Sprintf("≤ %s", fmtRatio(growthMemoryGoal)), report.YesNo(x > 0 && x <= growthMemoryGoal)
			}
			fmt.Fprintf(&b, "| %d | %.0f | %.0f | %.0f | %.0f | %s | %s | %s |\n", m.Pending,
				report.MiB(m.Quotagate.RSS), report.MiB(m.Quotagate.Anon), report.MiB(m.Kueue.RSS), report.MiB(m.Kueue.Anon), fmtRatio(x), goal, met)
		}
	}
	if f := r.FamilyRelease; f != nil {
		plain, fam := throughput(f.N, f.Plain), throughput(f.N, f.Family)
		x := report.Ratio(fam, plain)
		fmt.Fprintf(&b, `
## Release in a borrowing family with fair sharing

quotagate's release figure (%[1]d pods, the quota raised to fit them all) in a plain Budget, and in
a Budget of zero under a ClusterBudget that borrows all it releases from a sibling whose hard is
raised (every pod admitted by borrowing), beside a second borrower of twice its fair-sharing
weight; the two take turns, %[2]d times each. Goal: the family's throughput at least %.1[3]f of the
plain budget's.
%[8]s
| Release throughput, median (pods/s) | plain budget | borrowing family, fair sharing | family/plain | Goal | Met? |
|---|---:|---:|---:|---|---|
| %[1]d pods | %.0[4]f | %.0[5]f | %[6]s | ≥ %.1[3]f× | %[7]s |
`, f.N, len(f.Plain), familyReleaseGoal, plain, fam, fmtRatio(x), report.YesNo(x >= familyReleaseGoal), r.fromLine(partFamilyRelease))
	}
	return b.String()
}
