package peers

import (
	_ "embed"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/quotagate/quotagate/bench/report"
)

// Goals of issue 14 against Kueue, as ratios of quotagate to Kueue measured in one run.
const (
	peerThroughputGoal = 15   // quotagate's release throughput ≥ 15× Kueue's
	peerLatencyGoal    = 20   // Kueue's reaction and create→ungate ≥ 20× quotagate's
	peerMemoryGoal     = 0.25 // quotagate's RSS ≤ 1/4 of Kueue's
)

// peersAnalysis is the hand-written reading of the run the report was last written
// for; a rerun regenerates the numbers above it, not this text.
//
//go:embed analysis.md
var peersAnalysis string

// PeerRow is one line of the peers table.
type PeerRow struct {
	Figure, Quotagate, Kueue, Bare, Ratio, Goal, Met string
}

// throughput is pods per second from the median release time.
func throughput(n int, seconds []float64) float64 {
	s := report.Summarize(seconds)
	return report.Ratio(float64(n), s.P50)
}

func fmtRatio(x float64) string {
	if x == 0 {
		return "—"
	}
	if x < 1 {
		return fmt.Sprintf("%.2f×", x)
	}
	return fmt.Sprintf("%.1f×", x)
}

func fmtMS(x float64) string {
	if x < 10 {
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.0f", x)
}

// rows is the table: each figure with quotagate, Kueue, the bare client, the ratio
// the goal is stated in, the goal and whether this run met it.
func (r PeersReport) rows() []PeerRow {
	q, k, b := r.Quotagate, r.Kueue, r.Bare
	var rows []PeerRow
	qt, kt, bt := throughput(r.N, q.ReleaseSeconds), throughput(r.N, k.ReleaseSeconds), throughput(r.N, b.ReleaseSeconds)
	x := report.Ratio(qt, kt)
	rows = append(rows, PeerRow{
		Figure:    fmt.Sprintf("Release throughput, %d pods, median of %d (pods/s)", r.N, len(q.ReleaseSeconds)),
		Quotagate: fmt.Sprintf("%.0f", qt), Kueue: fmt.Sprintf("%.1f", kt), Bare: fmt.Sprintf("%.0f", bt),
		Ratio: fmtRatio(x), Goal: fmt.Sprintf("≥ %d×", peerThroughputGoal), Met: report.YesNo(x >= peerThroughputGoal),
	})
	qf, kf, bf := report.Summarize(q.FirstUngateSeconds), report.Summarize(k.FirstUngateSeconds), report.Summarize(b.FirstUngateSeconds)
	rows = append(rows, PeerRow{
		Figure:    "Quota raised → first ungate, median (ms)",
		Quotagate: fmtMS(qf.P50 * 1000), Kueue: fmtMS(kf.P50 * 1000), Bare: fmtMS(bf.P50 * 1000),
		Ratio: fmtRatio(report.Ratio(kf.P50, qf.P50)) + " faster", Goal: "—", Met: "—",
	})
	latency := func(name string, qs, ks, bs []float64, judged bool) {
		qs1, ks1, bs1 := report.Summarize(qs), report.Summarize(ks), report.Summarize(bs)
		if qs1.N == 0 {
			return
		}
		for _, p := range []struct {
			label      string
			qv, kv, bv float64
		}{{"p50", qs1.P50, ks1.P50, bs1.P50}, {"p99", qs1.P99, ks1.P99, bs1.P99}} {
			x := report.Ratio(p.kv, p.qv)
			row := PeerRow{
				Figure:    fmt.Sprintf("%s %s, %d samples (ms)", name, p.label, qs1.N),
				Quotagate: fmtMS(p.qv), Kueue: fmtMS(p.kv), Bare: fmtMS(p.bv),
				Ratio: fmtRatio(x) + " faster", Goal: "—", Met: "—",
			}
			if judged {
				row.Goal, row.Met = fmt.Sprintf("≥ %d× faster", peerLatencyGoal), report.YesNo(x >= peerLatencyGoal)
			}
			rows = append(rows, row)
		}
	}
	latency("Reaction: a pod finishes → next ungate,", q.ReactionMillis, k.ReactionMillis, b.ReactionMillis, true)
	latency("Create → ungate with room, gate policy,", q.CreateToUngateMilli, k.CreateToUngateMilli, b.CreateToUngateMilli, true)
	latency("Create → ungate with room, webhook,", q.CreateToUngateWebhookMilli, k.CreateToUngateMilli, b.CreateToUngateMilli, false)
	// The bare column of the memory rows is the bare manager's (bench/baremanager).
	bareMiB := func(v uint64) string {
		if v == 0 {
			return "—"
		}
		return fmt.Sprintf("%.0f", report.MiB(v))
	}
	x = report.Ratio(float64(q.Gated.RSS), float64(k.Gated.RSS))
	rows = append(rows, PeerRow{
		Figure:    fmt.Sprintf("Manager RSS with %d gated pods (MiB)", r.N),
		Quotagate: fmt.Sprintf("%.0f", report.MiB(q.Gated.RSS)), Kueue: fmt.Sprintf("%.0f", report.MiB(k.Gated.RSS)), Bare: bareMiB(b.Gated.RSS),
		Ratio: fmtRatio(x), Goal: "≤ 0.25×", Met: report.YesNo(x > 0 && x <= peerMemoryGoal),
	})
	rows = append(rows, PeerRow{
		Figure:    fmt.Sprintf("of which private (RssAnon: heap, stacks), %d gated pods (MiB)", r.N),
		Quotagate: fmt.Sprintf("%.0f", report.MiB(q.Gated.Anon)), Kueue: fmt.Sprintf("%.0f", report.MiB(k.Gated.Anon)), Bare: bareMiB(b.Gated.Anon),
		Ratio: fmtRatio(report.Ratio(float64(q.Gated.Anon), float64(k.Gated.Anon))), Goal: "—", Met: "—",
	})
	rows = append(rows, PeerRow{
		Figure:    fmt.Sprintf("of which mapped files (RssFile: the binary's pages), %d gated pods (MiB)", r.N),
		Quotagate: fmt.Sprintf("%.0f", report.MiB(q.Gated.File)), Kueue: fmt.Sprintf("%.0f", report.MiB(k.Gated.File)), Bare: bareMiB(b.Gated.File),
		Ratio: fmtRatio(report.Ratio(float64(q.Gated.File), float64(k.Gated.File))), Goal: "—", Met: "—",
	})
	qp, kp := perGatedPod(q, r.N), perGatedPod(k, r.N)
	x = report.Ratio(qp, kp)
	rows = append(rows, PeerRow{
		Figure:    fmt.Sprintf("Manager RSS per gated pod, idle to %d gated (KiB)", r.N),
		Quotagate: fmt.Sprintf("%.1f", qp/1024), Kueue: fmt.Sprintf("%.1f", kp/1024), Bare: "—",
		Ratio: fmtRatio(x), Goal: "≤ 0.25×", Met: report.YesNo(x > 0 && x <= peerMemoryGoal),
	})
	rows = append(rows, PeerRow{
		Figure:    "Manager RSS idle, after start (MiB)",
		Quotagate: fmt.Sprintf("%.0f", report.MiB(q.Idle.RSS)), Kueue: fmt.Sprintf("%.0f", report.MiB(k.Idle.RSS)), Bare: bareMiB(b.Idle.RSS),
		Ratio: fmtRatio(report.Ratio(float64(q.Idle.RSS), float64(k.Idle.RSS))), Goal: "—", Met: "—",
	})
	return rows
}

// perGatedPod is the RSS a manager added per gated pod, from idle to n gated pods
// (bytes; 0 when it did not grow).
func perGatedPod(s system, n int) float64 {
	if s.Gated.RSS <= s.Idle.RSS || n == 0 {
		return 0
	}
	return float64(s.Gated.RSS-s.Idle.RSS) / float64(n)
}

// bareBound says how far the bare client, with no quota logic, is ahead of Kueue: no
// quota manager on this control plane can beat those ratios.
func (r PeersReport) bareBound() string {
	q, k, b := r.Quotagate, r.Kueue, r.Bare
	qt, kt, bt := throughput(r.N, q.ReleaseSeconds), throughput(r.N, k.ReleaseSeconds), throughput(r.N, b.ReleaseSeconds)
	kc, bc, qc := report.Summarize(k.CreateToUngateMilli), report.Summarize(b.CreateToUngateMilli), report.Summarize(q.CreateToUngateMilli)
	out := fmt.Sprintf("The bare client, with no quota logic at all, released %s Kueue's throughput and was %s faster from create to ungate (p50) in this run: "+
		"no quota manager on this control plane can exceed those ratios. quotagate reached %s of the bare client's throughput and %s of its create → ungate speed.\n",
		fmtRatio(report.Ratio(bt, kt)), fmtRatio(report.Ratio(kc.P50, bc.P50)), fmtRatio(report.Ratio(qt, bt)), fmtRatio(report.Ratio(bc.P50, qc.P50)))
	if b.Gated.RSS > 0 {
		out += fmt.Sprintf("\nThe bare manager, a controller-runtime manager that watches every pod and does nothing else, held %.0f MiB with the same pods, "+
			"%s Kueue's RSS (%.0f MiB of it mapped binary pages): no manager built on controller-runtime and client-go can hold less. quotagate held %s the bare manager's RSS.\n",
			report.MiB(b.Gated.RSS), fmtRatio(report.Ratio(float64(b.Gated.RSS), float64(k.Gated.RSS))), report.MiB(b.Gated.File), fmtRatio(report.Ratio(float64(q.Gated.RSS), float64(b.Gated.RSS))))
	}
	return out
}

func peerTable(rows []PeerRow) string {
	var b strings.Builder
	b.WriteString("| Figure | quotagate | Kueue | bare client | quotagate/Kueue | Goal | Met? |\n|---|---:|---:|---:|---:|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", r.Figure, r.Quotagate, r.Kueue, r.Bare, r.Ratio, r.Goal, r.Met)
	}
	return b.String()
}

// cpuPerPod is the CPU milliseconds per released pod of each process, over a system's
// releases.
func cpuPerPod(s system, n int) string {
	pods := float64(n * len(s.ReleaseSeconds))
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(s.ReleaseCPU)) {
		parts = append(parts, fmt.Sprintf("%s %.2f", name, report.Ratio(s.ReleaseCPU[name]*1000, pods)))
	}
	return strings.Join(parts, ", ")
}

func (r PeersReport) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, `# quotagate beside Kueue %[1]s

Generated by `+"`make bench-peers`"+` (`+"`%[2]s`"+`) on %[3]s, in %[4]s. Do not edit by hand: run it
again; the raw numbers are in [benchmarks-peers.json](../bench/peers/benchmarks-peers.json). The same pods, the same local control plane (kube-apiserver %[5]s, etcd, kube-scheduler,
kube-controller-manager, kwok nodes; test/localcluster) and the same watch measure all three,
in one run:

- **quotagate**: cmd/manager built as `+"`make build`"+` does, run as a process of its own as the
  quotagate-manager ServiceAccount with its default flags (one replica: no leader election).
  Pods carry quotagate's gate (the release and reaction figures) or get it from the shipped
  webhook (create → ungate).
- **Kueue %[1]s**: its manager built from its Go module (hack/tools/kueue), run as a process with
  the configuration it ships (config/components/manager) changed only where a local process needs
  it: addresses, no leader election, a certificate given to it (internal cert management off), the
  `+"`pod`"+` integration alone, the bench's namespaces as its managed ones, its on-demand
  visibility server off (VisibilityOnDemand=false: it is not part of admission). Its CRDs and webhooks come
  from the same module; each figure has its own ClusterQueue (one flavor, cpu and memory) and
  LocalQueue, and plain pods labelled `+"`kueue.x-k8s.io/queue-name`"+`, gated by Kueue's webhook.
- **bare client**: no quota logic: a client that removes a gate with the same patch (the release
  figure: as fast as the manager's worker count allows; reaction and create → ungate: a watch
  that ungates on sight). In the memory rows, the bare column is the **bare manager**
  (bench/baremanager, built as quotagate's): a controller-runtime manager that watches every
  pod through a controller that does nothing, as the quotagate-manager ServiceAccount, run
  beside quotagate's manager for the memory figure only.

Figures: **release throughput**: %[6]d pods gated behind a quota of 0 cpu, the quota raised to
fit them all, time from that write to the last pod's ungate event. **Reaction**: a quota of one
pod, the admitted pod marked Succeeded, time to the next pod's ungate event. **Create → ungate**:
a pod created (one at a time) where the quota has room, time from the create call to its ungate
event. quotagate's gate is added by its gate policy (CEL in the API server, what `+"`admission.mode: auto`"+`
picks where the API server serves MutatingAdmissionPolicy, as this one does) or by its webhook:
those two arms and the bare client's take turns, create by create, which goes first rotating, so
they meet the same moments of the machine; Kueue's series runs later, beside its manager. **Memory**: resident set size (VmRSS) of each manager process with %[6]d gated pods
(quotagate: its own batch behind an empty Budget; Kueue: the first release batch, pending, before
the raise; the bare manager: quotagate's batch, once its cache holds every pod), and its two parts from the same /proc/<pid>/status: private memory (RssAnon: heap,
stacks) and mapped files (RssFile: pages of the process's own binary, page cache the kernel can
drop and read again). Pods also carry a hold gate, so none is scheduled. quotagate and the bare client are
measured first (with quotagate's manager running), then Kueue (quotagate's manager stopped): each
manager caches every pod, so neither holds the other's pods.

Machine: %[7]d CPUs, %.1[8]f GiB, shared with other work; load average (1, 5, 15 min) %[9]s before,
%[10]s after. Absolute times depend on that load; the ratios were measured side by side.

`, r.KueueVersion, r.Command, r.Date, r.Took, r.Machine.KubeVersion, r.N, r.Machine.NProc, r.Machine.MemoryGiB, r.Machine.LoadBefore, r.Machine.LoadAfter)
	b.WriteString(peerTable(r.rows()))
	b.WriteString("\n" + r.bareBound())
	fmt.Fprintf(&b, "\nCPU milliseconds per released pod, by process, over the releases: quotagate: %s. Kueue: %s. Bare client: %s.\n",
		cpuPerPod(r.Quotagate, r.N), cpuPerPod(r.Kueue, r.N), cpuPerPod(r.Bare, r.N))
	b.WriteString(r.growthMarkdown())
	if r.Sched != nil {
		b.WriteString(r.Sched.markdown(r.fromLine(partSched)))
	}
	b.WriteString("\n" + peersAnalysis)
	return b.String()
}
