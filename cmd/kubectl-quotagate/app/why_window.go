package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// windowNotes say, for each budget that holds a waiting pod, what its windows
// (BudgetWindows and ClusterBudgetWindows, docs/budgets.md "Windows") do next, read
// from the budget's status: the windows open now and when that changes, or when one
// opens. A budget the user may not read, or one with no window, says nothing: the
// explanation goes on without it.
func windowNotes(ctx context.Context, c client.Client, places []podPlace, now time.Time) []string {
	var out []string
	for _, p := range places {
		var st *v1alpha1.BudgetStatus
		if p.Budget.IsCluster() {
			cb := &v1alpha1.ClusterBudget{}
			if c.Get(ctx, client.ObjectKey{Name: p.Budget.Name}, cb) != nil {
				continue
			}
			st = &cb.Status
		} else {
			b := &v1alpha1.Budget{}
			if c.Get(ctx, client.ObjectKey{Namespace: p.Budget.Namespace, Name: p.Budget.Name}, b) != nil {
				continue
			}
			st = &b.Status
		}
		if line := windowLine(st, now); line != "" {
			out = append(out, p.Budget.Describe()+": "+line)
		}
	}
	return out
}

// windowLine is what a budget's status says of its windows: "window night is open;
// the next change is at ... (in 120m)", or "a window opens at ..."; "" for none.
func windowLine(st *v1alpha1.BudgetStatus, now time.Time) string {
	next := st.NextWindowChange
	switch {
	case len(st.ActiveWindows) == 0 && next == nil:
		return ""
	case len(st.ActiveWindows) == 0:
		return fmt.Sprintf("a window opens at %s (in %s) and changes what it may hold", next.UTC().Format(time.RFC3339), until(now, next.Time))
	}
	open := "window " + st.ActiveWindows[0] + " is open"
	if len(st.ActiveWindows) > 1 {
		open = "windows " + strings.Join(st.ActiveWindows, ", ") + " are open"
	}
	if next == nil {
		return open + ", for good"
	}
	return fmt.Sprintf("%s; the next change is at %s (in %s)", open, next.UTC().Format(time.RFC3339), until(now, next.Time))
}
