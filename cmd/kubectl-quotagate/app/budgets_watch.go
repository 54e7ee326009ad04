package app

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// stateDeleted is the state budgets -w prints for a budget that was deleted.
const stateDeleted = "Deleted"

// watchBudgets prints the listing's rows, then watches its Budgets (and ClusterBudgets,
// when the user may list them) from the listing's resourceVersions and prints a
// budget's rows, without headers, each time what they show changes; with -o, every
// new version of the object, as kubectl get -w -o does. Notes go to stderr once,
// after the first list.
func watchBudgets(ctx context.Context, e *env, c client.WithWatch, out *outputFlags, p printers.ResourcePrinter, l *budgetListing, rows []budgetRow, notes []string) error {
	sel := client.MatchingLabelsSelector{Selector: l.query.selector}
	bw, err := watchFrom(ctx, c, &v1alpha1.BudgetList{}, l.budgetsRV, client.InNamespace(l.query.ns), sel)
	if err != nil {
		return err
	}
	defer bw.Stop()
	var cw watch.Interface
	if l.clusterListed {
		if cw, err = watchFrom(ctx, c, &v1alpha1.ClusterBudgetList{}, l.clusterRV, sel); err != nil {
			return err
		}
		defer cw.Stop()
	}

	all := l.query.ns == ""
	w := e.streams.Out
	printed := map[quota.BudgetKey]string{}
	if p == nil {
		if err := printBudgets(w, e.streams.ErrOut, out, nil, rows, all); err != nil {
			return err
		}
		for _, r := range rows {
			printed[r.Key] = shownChange(r)
		}
	} else {
		for _, r := range rows {
			printed[r.Key] = ""
			if err := printBudgetObject(w, out, p, r.Object, all); err != nil {
				return err
			}
		}
	}
	writeNotes(e.streams.ErrOut, notes)

	rowsOnly := *out
	rowsOnly.noHeaders = true
	for {
		ev, ok, err := nextEvent(ctx, bw, cw)
		if !ok || err != nil {
			return err
		}
		obj, ok := ev.Object.(client.Object)
		if !ok {
			continue
		}
		l.apply(obj, ev.Type == watch.Deleted)
		key := quota.BudgetKey{Namespace: obj.GetNamespace(), Name: obj.GetName()}
		_, wasShown := printed[key]
		if !l.shows(key) && (!wasShown || ev.Type != watch.Deleted) {
			delete(printed, key) // a ClusterBudget that no longer concerns the namespace
			continue
		}
		if p != nil {
			printed[key] = ""
			if err := printBudgetObject(w, out, p, obj, all); err != nil {
				return err
			}
			continue
		}
		var oldest map[quota.BudgetKey]time.Time
		if ev.Type != watch.Deleted {
			oldest, _, _ = loadOldestWaits(ctx, e, c, l.query.ns, l.budgets, l.clusterBudgets)
		}
		r := rowOf(obj, oldest, e)
		if ev.Type == watch.Deleted {
			r.State = stateDeleted
		}
		text := shownChange(r)
		if printed[key] == text {
			continue // a change that the table does not show (conditions, generation)
		}
		printed[key] = text
		if err := rowsOnly.printTable(w, budgetColumns, budgetTableRows([]budgetRow{r})); err != nil {
			return err
		}
	}
}

// shownChange is what of a row counts as a change to print again: every cell but the
// oldest wait, which grows with time alone (and is read from a snapshot that may be
// newer than the event).
func shownChange(r budgetRow) string {
	r.OldestWait = ""
	return fmt.Sprint(budgetTableRows([]budgetRow{r}))
}

// rowOf is the row of a Budget or ClusterBudget.
func rowOf(obj client.Object, oldest map[quota.BudgetKey]time.Time, e *env) budgetRow {
	if cb, ok := obj.(*v1alpha1.ClusterBudget); ok {
		return clusterBudgetRowOf(cb, oldest, e.now())
	}
	return budgetRowOf(obj.(*v1alpha1.Budget), oldest, e.now())
}

// printBudgetObject prints one budget with a printer of cli-runtime.
func printBudgetObject(w io.Writer, out *outputFlags, p printers.ResourcePrinter, obj runtime.Object, all bool) error {
	if out.isName() {
		return printNames(w, []runtime.Object{obj}, all)
	}
	return p.PrintObj(obj, w)
}

// apply updates the listing with a watched Budget or ClusterBudget.
func (l *budgetListing) apply(obj client.Object, deleted bool) {
	switch o := obj.(type) {
	case *v1alpha1.Budget:
		o.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Budget"))
		l.budgets = slices.DeleteFunc(l.budgets, func(b v1alpha1.Budget) bool { return b.Namespace == o.Namespace && b.Name == o.Name })
		if !deleted {
			l.budgets = append(l.budgets, *o)
		}
	case *v1alpha1.ClusterBudget:
		o.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("ClusterBudget"))
		l.allClusterBudgets = slices.DeleteFunc(l.allClusterBudgets, func(b v1alpha1.ClusterBudget) bool { return b.Name == o.Name })
		if !deleted {
			l.allClusterBudgets = append(l.allClusterBudgets, *o)
		}
	}
	l.clusterBudgets = l.allClusterBudgets
	if l.query.ns != "" {
		l.clusterBudgets = clusterBudgetsAbove(l.query.ns, l.nsLabels, l.budgets, l.allClusterBudgets)
	}
}

// shows reports whether the listing shows the budget key now.
func (l *budgetListing) shows(key quota.BudgetKey) bool {
	if key.IsCluster() {
		return slices.ContainsFunc(l.clusterBudgets, func(b v1alpha1.ClusterBudget) bool { return b.Name == key.Name })
	}
	return slices.ContainsFunc(l.budgets, func(b v1alpha1.Budget) bool { return b.Namespace == key.Namespace && b.Name == key.Name })
}
