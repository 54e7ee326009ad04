package app

import (
	"fmt"
	"io"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// printBudgets prints the budgets as the table (one line per hard resource, then one
// per resource of each flavor's hard, the budget's own columns on its first line), or with p: the API objects, in a v1 List
// for json and yaml, kind.group/name for name.
func printBudgets(w, errOut io.Writer, out *outputFlags, p printers.ResourcePrinter, rows []budgetRow, all bool) error {
	objs := make([]runtime.Object, len(rows))
	for i, r := range rows {
		objs[i] = r.Object
	}
	switch {
	case p != nil && out.isName():
		if len(rows) == 0 {
			fmt.Fprintln(errOut, "No budgets found.")
		}
		return printNames(w, objs, all)
	case p != nil:
		return printObjects(w, p, objs, true)
	case len(rows) == 0:
		fmt.Fprintln(errOut, "No budgets found.")
		return nil
	}
	return out.printTable(w, budgetColumns, budgetTableRows(rows))
}

// budgetColumns are the budgets table's; -o wide adds STRATEGY, PARENT and PENDING.
var budgetColumns = []metav1.TableColumnDefinition{
	column("Budget", false), column("State", false), column("Strategy", true), column("Parent", true),
	column("Admitted", false), column("Gated", false), column("Oldest Wait", false),
	column("Resource", false), column("Used/Hard", false), column("Pending", true), column("Usage", false),
}

func budgetTableRows(rows []budgetRow) []metav1.TableRow {
	var out []metav1.TableRow
	for _, r := range rows {
		lead := []string{r.Key.Describe(), r.State, orDash(r.Strategy), orDash(r.Parent),
			strconv.Itoa(int(r.Admitted)), strconv.Itoa(int(r.Gated)), r.OldestWait}
		lines := resourceLines("", r.Hard, r.Used, r.Pending, r.Borrowed, r.Lent)
		for _, f := range r.Flavors {
			lines = append(lines, flavorLines(f)...)
		}
		lines = append(lines, hourLines(r.Hours, r.Usage)...)
		if len(lines) == 0 {
			out = append(out, tableRow(append(lead, "-", "-", "-", "-")...))
			continue
		}
		for i, l := range lines {
			cells := slices.Clone(lead)
			if i > 0 {
				cells = make([]string, len(lead))
			}
			out = append(out, tableRow(append(cells, l[:]...)...))
		}
	}
	return out
}

// resourceLine is a line's RESOURCE, USED/HARD, PENDING and USAGE cells.
type resourceLine [4]string

// resourceLines are the lines of each resource of hard, in name order, each named "r"
// or, on a flavor, "r on flavor". A flavor's PENDING is "-": gated pods are on no
// flavor yet (a flavor is chosen as a pod is admitted).
func resourceLines(flavor string, hard, used, pending, borrowed, lent corev1.ResourceList) []resourceLine {
	var out []resourceLine
	for _, n := range sortedNames(hard) {
		h, u := hard[n], used[n]
		usedHard := u.String() + "/" + h.String()
		if b, ok := borrowed[n]; ok && b.Sign() > 0 {
			usedHard += " (" + b.String() + " borrowed)"
		}
		if l, ok := lent[n]; ok && l.Sign() > 0 {
			usedHard += " (" + l.String() + " lent)"
		}
		p := pending[n]
		name, pend := string(n), p.String()
		if flavor != "" {
			name, pend = name+" on "+flavor, "-"
		}
		out = append(out, resourceLine{name, usedHard, pend, usageBar(u, h)})
	}
	return out
}

// flavorLines are a flavor's lines; a flavor whose hard names nothing (limited only by
// the budget's own hard) still has one, so that every flavor of the budget is listed.
func flavorLines(f v1alpha1.FlavorStatus) []resourceLine {
	if len(f.Hard) == 0 {
		return []resourceLine{{"(no hard) on " + f.Name, "-", "-", "-"}}
	}
	return resourceLines(f.Name, f.Hard, f.Used, nil, f.Borrowed, f.Lent)
}

// hourLines are the lines of a budget's usageLimits.hours, one per resource in name
// order: RESOURCE "r hours in <period>", USED/HARD the resource-hours used of the
// limit (and what running pods reserved), USAGE used and reserved together.
func hourLines(limits corev1.ResourceList, u *v1alpha1.UsageStatus) []resourceLine {
	var out []resourceLine
	period := "the period"
	if u != nil {
		period = u.Period
	}
	for _, n := range sortedNames(limits) {
		h := limits[n]
		var used, reserved resource.Quantity
		if u != nil {
			used, reserved = u.Used[n], u.Reserved[n]
		}
		cell := used.String() + "/" + h.String()
		if reserved.Sign() > 0 {
			cell += " (" + reserved.String() + " reserved)"
		}
		taken := used.DeepCopy()
		taken.Add(reserved)
		out = append(out, resourceLine{string(n) + " hours in " + period, cell, "-", usageBar(taken, h)})
	}
	return out
}
