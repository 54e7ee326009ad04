package app

import (
	"fmt"
	"io"
	"slices"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
)

// printBudgets prints the budgets as the table (one line per hard resource, the
// budget's own columns on its first line), or with p: the API objects, in a v1 List
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
		names := sortedNames(r.Hard)
		if len(names) == 0 {
			out = append(out, tableRow(append(lead, "-", "-", "-", "-")...))
			continue
		}
		for i, n := range names {
			cells := slices.Clone(lead)
			if i > 0 {
				cells = make([]string, len(lead))
			}
			hard, used, pending := r.Hard[n], r.Used[n], r.Pending[n]
			usedHard := used.String() + "/" + hard.String()
			if b, ok := r.Borrowed[n]; ok && b.Sign() > 0 {
				usedHard += " (" + b.String() + " borrowed)"
			}
			if l, ok := r.Lent[n]; ok && l.Sign() > 0 {
				usedHard += " (" + l.String() + " lent)"
			}
			out = append(out, tableRow(append(cells, string(n), usedHard, pending.String(), usageBar(used, hard))...))
		}
	}
	return out
}
