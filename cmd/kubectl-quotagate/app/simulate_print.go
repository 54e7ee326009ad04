package app

import (
	"fmt"
	"io"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
)

// renderSimulation prints a PodSimulation's answer: a line that says what was
// simulated, a table of the pods (the budgets that would cover each, its position in
// each, whether it is admitted at once or why it waits, its estimated start and the
// range), then each waiting pod's reason in a sentence and why a start is unknown.
// Starts are counted from when the server supposed the pods created (the answer's
// creationTimestamp), else from now.
func renderSimulation(w io.Writer, out *outputFlags, wl *workload, sim *visv1.PodSimulation, now time.Time) error {
	if !sim.CreationTimestamp.IsZero() {
		now = sim.CreationTimestamp.Time
	}
	pods := sim.Status.Pods
	noun := "pods"
	if len(pods) == 1 {
		noun = "pod"
	}
	if _, err := fmt.Fprintf(w, "%d %s of %s, if created now (nothing was created):\n", len(pods), noun, wl.describe(sim.Namespace)); err != nil {
		return err
	}
	columns := []metav1.TableColumnDefinition{
		column("Pod", false), column("Budgets", false), column("Position", false), column("Status", false),
		column("ETA", false), column("Range", false), column("Priority", true), column("Requests", true),
	}
	rows := make([]metav1.TableRow, 0, len(pods))
	var notes []string
	for _, p := range pods {
		var budgets, positions []string
		for _, b := range p.Budgets {
			budgets = append(budgets, budgetName(b))
			if !p.Admitted {
				positions = append(positions, fmt.Sprintf("%d/%d", b.Position, b.Total))
			}
		}
		rows = append(rows, tableRow(p.Name, dash(strings.Join(budgets, ", ")), dash(strings.Join(positions, ", ")),
			simulatedStatus(&p), eta(p.EstimatedStart, now), etaRange(p.EstimatedStart, now), fmt.Sprint(p.Priority), dash(requestsString(p.Requests))))
		if !p.Admitted && p.Reason != "" {
			notes = append(notes, fmt.Sprintf("%s waits: %s", p.Name, p.Reason))
		}
		if e := p.EstimatedStart; e != nil && (e.Unknown != "" || e.Median == nil) {
			notes = append(notes, fmt.Sprintf("%s's start is unknown (%s): %s", p.Name, e.Unknown, e.Message))
		}
	}
	if err := out.printTable(w, columns, rows); err != nil {
		return err
	}
	for _, n := range dedupe(notes) {
		if _, err := fmt.Fprintln(w, n); err != nil {
			return err
		}
	}
	return nil
}

// budgetName is a budget as the plugin names it: "Budget team-a/gpu", "ClusterBudget org".
func budgetName(b visv1.BudgetPlace) string {
	if b.Namespace == "" {
		return b.BudgetKind + " " + b.Name
	}
	return b.BudgetKind + " " + b.Namespace + "/" + b.Name
}

// simulatedStatus is the STATUS column: "Admitted" (on a flavor, after preemptions),
// "Held", or the reason code it would wait with.
func simulatedStatus(p *visv1.SimulatedPod) string {
	switch {
	case p.Admitted:
		s := "Admitted"
		if p.Flavor != "" {
			s += " on " + p.Flavor
		}
		if p.Preempts > 0 {
			s += fmt.Sprintf(" (preempts %d)", p.Preempts)
		}
		return s
	case p.Held:
		return "Held (" + p.ReasonCode + ")"
	}
	return p.ReasonCode
}

// etaRange is the RANGE column: "5m-12m" from the earliest to the latest start, "-"
// without one or when they are the same.
func etaRange(e *visv1.EstimatedStart, now time.Time) string {
	if e == nil || e.Unknown != "" || e.Low == nil || e.High == nil || e.Low.Equal(e.High) {
		return "-"
	}
	return until(now, e.Low.Time) + "-" + until(now, e.High.Time)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// dedupe keeps the first of equal lines.
func dedupe(lines []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range lines {
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out
}
