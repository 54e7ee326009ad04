package peers

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/quotagate/quotagate/bench/report"
)

// schedOverheadGoal: quotagate's overhead above the ideal replay (wall time, and each
// class's mean time to admission) at most this fraction of Kueue's.
const schedOverheadGoal = 0.1

// schedReport is Kueue's baseline scheduler performance scenario, run on quotagate and
// on Kueue and replayed by the ideal admitter.
type schedReport struct {
	Config    string      `json:"config"`
	Scale     int         `json:"scale"`
	Workloads int         `json:"workloads"`
	Queues    int         `json:"queues"`
	Cohorts   int         `json:"cohorts"`
	Classes   []string    `json:"classes"`
	Ideal     schedResult `json:"ideal"`
	// Policy is quotagate's own order with no delay: its core replayed on a simulated
	// clock (replayOnCore), with its fair sharing and lend holds, which Ideal has not.
	Policy    schedResult `json:"quotagatePolicy"`
	Quotagate schedResult `json:"quotagate"`
	Kueue     schedResult `json:"kueue"`
}

func newSchedReport(p schedPlan, scale int) *schedReport {
	return &schedReport{Config: schedConfigPath, Scale: scale, Workloads: len(p.Workloads), Queues: len(p.Queues),
		Cohorts: len(p.cohortMilli()), Classes: p.classes(), Ideal: idealResult(p)}
}

// overheadRow is a row of the scenario's table: the ideal's value, each system's, each
// system's overhead above the ideal, and whether quotagate's is within the goal.
func overheadRow(figure string, ideal, qg, ku float64) []string {
	oq, ok := qg-ideal, ku-ideal
	met := "—"
	if ok > 0 {
		met = report.YesNo(oq <= schedOverheadGoal*ok)
	} else if oq > 0 {
		met = report.YesNo(false)
	}
	return []string{figure, fmt.Sprintf("%.2f", ideal), fmt.Sprintf("%.2f", qg), fmt.Sprintf("%.2f", ku),
		fmt.Sprintf("%+.2f", oq), fmt.Sprintf("%+.2f", ok), fmtRatio(report.Ratio(oq, ok)), met}
}

func (s schedReport) rows() [][]string {
	rows := [][]string{overheadRow("Wall time (s)", s.Ideal.WallSeconds, s.Quotagate.WallSeconds, s.Kueue.WallSeconds)}
	for _, c := range s.Classes {
		i, q, k := s.Ideal.Classes[c], s.Quotagate.Classes[c], s.Kueue.Classes[c]
		rows = append(rows, overheadRow(fmt.Sprintf("%s (%d): mean time to admission (s)", c, i.N), i.Mean, q.Mean, k.Mean))
		for _, p := range []struct {
			name    string
			i, q, k float64
		}{{"p50", i.P50, q.P50, k.P50}, {"p90", i.P90, q.P90, k.P90}} {
			row := overheadRow(fmt.Sprintf("%s: %s (s)", c, p.name), p.i, p.q, p.k)
			row[len(row)-1] = "—"
			rows = append(rows, row)
		}
	}
	return rows
}

func (s schedReport) markdown(from string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `
## Kueue's scheduler performance scenario

Kueue's own benchmark (`+"`%[1]s`"+` in its module), read from the file and generated as its generator
does: %[2]d cohorts, %[3]d ClusterQueues, %[4]d workloads (each set's count divided by %[5]d),
each created on its set's interval, priority and cpu request, and finished, as Kueue's runner
finishes it, its runtime after the watch saw it admitted. Each workload here is a plain pod (a
group of pods where the config says so), carrying the hold gate so no pod is scheduled. quotagate
gets a Budget per ClusterQueue (`+"`hard`"+` its nominal quota, its `+"`borrowingLimit`"+`) under
a ClusterBudget per cohort (`+"`hard`"+`: the sum of its members' nominal quotas); Kueue a
ClusterQueue per queue in its cohort and a LocalQueue. The config's preemption policies
(reclaimWithinCohort, withinClusterQueue) are **not** applied, in either system: a preempted
plain pod is deleted, where Kueue's runner puts an evicted Workload back in its queue. The
**ideal** is the same workloads replayed in this process by an admitter with no delay at all
(quotagate's order: priority, then creation; within the nominal quota first, then borrowing,
lent quota first to its lender). Time to admission runs from the watch event of a workload's
creation (as Kueue's recorder takes it) to the one of its last pod's ungate; wall time from the
start of the schedule to the last pod's end, so it also holds how far the bench's creates fell
behind their schedule (below). Goal: each system's overhead above the ideal, quotagate's at most %[6]s of Kueue's.
`, s.Config, s.Cohorts, s.Queues, s.Workloads, s.Scale, fmtRatio(schedOverheadGoal))
	b.WriteString(from)
	b.WriteString(`
| Figure | ideal | quotagate | Kueue | quotagate − ideal | Kueue − ideal | quotagate/Kueue overhead | Met? |
|---|---:|---:|---:|---:|---:|---:|---|
`)
	for _, row := range s.rows() {
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	q, k := s.Quotagate, s.Kueue
	if len(s.Policy.Classes) > 0 {
		b.WriteString(s.policyMarkdown())
	}
	fmt.Fprintf(&b, "\nAPI writes per admitted pod not made by the bench (its pod creates and status patches): quotagate %.1f, Kueue %.1f (%s).\n",
		q.writesPerPod(), k.writesPerPod(), fmtRatio(report.Ratio(k.writesPerPod(), q.writesPerPod()))+" quotagate's")
	fmt.Fprintf(&b, "By resource: quotagate: %s. Kueue: %s.\n", countsOf(q.Writes), countsOf(k.Writes))
	fmt.Fprintf(&b, "\nCPU seconds during the run: quotagate: %s. Kueue: %s.\n", countsOf(q.CPU), countsOf(k.CPU))
	fmt.Fprintf(&b, "\nNo budget exceeded: the watch checked every queue's and cohort's use at every event: quotagate %s, Kueue %s. "+
		"Pods deleted before they ended: quotagate %d, Kueue %d. The bench's latest create started %.0f ms (quotagate) and %.0f ms (Kueue) after its schedule.\n",
		violationText(q), violationText(k), q.Lost, k.Lost, q.CreateLagMillis, k.CreateLagMillis)
	return b.String()
}

func violationText(r schedResult) string {
	if r.Violations == 0 {
		return "none exceeded"
	}
	return fmt.Sprintf("**%d events over quota, by up to %d millicores**", r.Violations, r.OverMilli)
}

// countsOf is a map of counts, by name, sorted by name.
func countsOf(m map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] != 0 {
			parts = append(parts, fmt.Sprintf("%s %.1f", k, m[k]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// policyMarkdown splits quotagate's distance from the ideal into what its policy decides
// (its core with no delay, against the ideal) and what its delay adds (the run, against
// its core with no delay).
func (s schedReport) policyMarkdown() string {
	var b strings.Builder
	b.WriteString(`
The ideal orders a cohort as Kueue does without fair sharing. quotagate's own order differs in
two ways its users choose: the members of a family share what is lent by fair sharing (a
borrower with the larger share yields to a sibling's pod), and a lender's freed quota is held
for its own next pods for 5 s before siblings may borrow it (lend holds, ` + "`--lend-hold`" + `).
Replaying the scenario through quotagate's admission core on a simulated clock, with no delay at
all, separates what its policy decides from what its admission adds:

| Figure | ideal | quotagate's policy, no delay | quotagate | policy − ideal | quotagate − policy |
|---|---:|---:|---:|---:|---:|
`)
	row := func(figure string, i, pol, q float64) {
		fmt.Fprintf(&b, "| %s | %.2f | %.2f | %.2f | %+.2f | %+.2f |\n", figure, i, pol, q, pol-i, q-pol)
	}
	row("Wall time (s)", s.Ideal.WallSeconds, s.Policy.WallSeconds, s.Quotagate.WallSeconds)
	for _, c := range s.Classes {
		row(fmt.Sprintf("%s: mean time to admission (s)", c), s.Ideal.Classes[c].Mean, s.Policy.Classes[c].Mean, s.Quotagate.Classes[c].Mean)
	}
	if q, k := s.Quotagate.AsArrived, s.Kueue.AsArrived; q != nil && k != nil {
		b.WriteString(s.arrivedMarkdown(q, k))
	}
	return b.String()
}

// arrivedMarkdown compares each system with the replays of the arrivals its own run saw.
func (s schedReport) arrivedMarkdown(q, k *arrivedReplays) string {
	var b strings.Builder
	fmt.Fprintf(&b, `
The replays above create each workload when the plan says. The runs' creators fell behind
(quotagate's by %.1f s at the latest, Kueue's by %.1f s), so their pods arrived later and in
bursts. Replayed at the arrivals each run's watch saw, the same admitters leave to each system
only what its own admission added:

| Figure | ideal, quotagate's arrivals | quotagate's policy, its arrivals | quotagate | quotagate − policy | ideal, Kueue's arrivals | Kueue | Kueue − ideal |
|---|---:|---:|---:|---:|---:|---:|---:|
`, s.Quotagate.CreateLagMillis/1000, s.Kueue.CreateLagMillis/1000)
	row := func(figure string, qi, qp, qg, ki, ku float64) {
		fmt.Fprintf(&b, "| %s | %.2f | %.2f | %.2f | %+.2f | %.2f | %.2f | %+.2f |\n", figure, qi, qp, qg, qg-qp, ki, ku, ku-ki)
	}
	row("Wall time (s)", q.Ideal.WallSeconds, q.Policy.WallSeconds, s.Quotagate.WallSeconds, k.Ideal.WallSeconds, s.Kueue.WallSeconds)
	for _, c := range s.Classes {
		row(fmt.Sprintf("%s: mean time to admission (s)", c), q.Ideal.Classes[c].Mean, q.Policy.Classes[c].Mean, s.Quotagate.Classes[c].Mean,
			k.Ideal.Classes[c].Mean, s.Kueue.Classes[c].Mean)
	}
	return b.String()
}
