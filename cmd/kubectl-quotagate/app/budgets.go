package app

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

func newBudgetsCommand(e *env) *cobra.Command {
	out := newOutputFlags(true, formatWide)
	var all, watch bool
	var selector string
	cmd := &cobra.Command{
		Use:     "budgets [-A | -n NAMESPACE] [-l SELECTOR] [-w]",
		Aliases: []string{"budget", "bdg"},
		Short:   "List budgets with their usage, admitted and gated pods, and the oldest wait",
		Long: `List the Budgets of a namespace (with the ClusterBudgets above them), or with -A every
Budget and ClusterBudget: state, each hard resource as used/hard with a bar, admitted and
gated pods, and how long the oldest gated pod has waited (computed from the gated pods
with the manager's coverage rules, with -n among that namespace's pods; from the
manager's snapshot when a --manager-* flag names the manager). A budget with flavors
(spec.flavors) has a line more for each resource of each flavor's hard, in the order pods
try the flavors: "requests.nvidia.com/gpu on h100".

-o wide adds STRATEGY, PARENT and each resource's PENDING (requests of gated pods);
-o json|yaml print the Budget and ClusterBudget objects as the API has them, in a v1
List (the oldest wait is the table's only); -o name prints budget.quotagate.io/NAME and
clusterbudget.quotagate.io/NAME, as NAMESPACE/budget.quotagate.io/NAME with -A.

-l keeps the Budgets and ClusterBudgets whose labels match. -w prints the list, then
watches the budgets and prints a budget's rows again whenever what they show changes
(its state, hard, usage, admitted or gated pods; not the oldest wait alone), without
headers, as kubectl get -w does; a deleted budget is printed once more with state
Deleted.`,
		Example: `  kubectl quotagate budgets -n team-a
  kubectl quotagate budgets -A -o wide
  kubectl quotagate budgets -n team-a -o yaml
  kubectl quotagate budgets -A -l team=ml -w`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := out.printer()
			if err != nil {
				return err
			}
			q := budgetQuery{}
			if q.selector, err = parseSelector(selector); err != nil {
				return err
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			if !all {
				if q.ns, err = e.namespace(); err != nil {
					return err
				}
			}
			l, err := listBudgets(cmd.Context(), c, q)
			if err != nil {
				return err
			}
			rows, notes, err := l.rows(cmd.Context(), e, c, p == nil)
			if err != nil {
				return err
			}
			if watch {
				return watchBudgets(cmd.Context(), e, c, out, p, l, rows, notes)
			}
			err = printBudgets(e.streams.Out, e.streams.ErrOut, out, p, rows, all)
			writeNotes(e.streams.ErrOut, notes)
			return err
		},
	}
	out.addFlags(cmd, true)
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "List budgets of every namespace and every ClusterBudget.")
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "Selector (label query) to filter Budgets and ClusterBudgets on, as kubectl's (e=v, e!=v, e in (v1,v2)).")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "After listing the budgets, watch them and print a budget's rows again each time they change.")
	return cmd
}

// budgetRow is one budget as the table shows it.
type budgetRow struct {
	Key      quota.BudgetKey
	State    string
	Hard     corev1.ResourceList
	Used     corev1.ResourceList
	Admitted int32
	Gated    int32
	// OldestWait is how long the oldest gated pod has waited, or "-".
	OldestWait string
	// Strategy, Parent and Pending are the wide table's.
	Strategy string
	Parent   string
	Pending  corev1.ResourceList
	// Borrowed is what it uses beyond hard, borrowed under its parent (status.borrowed).
	Borrowed corev1.ResourceList
	// Lent is the part of hard its siblings use by borrowing (status.lent).
	Lent corev1.ResourceList
	// Flavors are its quota per flavor (status.flavors), in the order pods try them.
	Flavors []v1alpha1.FlavorStatus
	// Hours is spec.usageLimits.hours (its names as hard's), and Usage status.usage:
	// what its pods used and reserved of them.
	Hours corev1.ResourceList
	Usage *v1alpha1.UsageStatus
	// Object is the Budget or ClusterBudget, its apiVersion and kind set, for -o
	// json|yaml|name.
	Object client.Object
}

// budgetQuery is which budgets a command shows: those of namespace ns ("" for every
// namespace) whose labels selector matches.
type budgetQuery struct {
	ns       string
	selector labels.Selector
}

// budgetListing is what listBudgets read: the Budgets, the ClusterBudgets that concern
// the query (every one for all namespaces; above the namespace otherwise), and the
// resourceVersions to watch from.
type budgetListing struct {
	query          budgetQuery
	budgets        []v1alpha1.Budget
	clusterBudgets []v1alpha1.ClusterBudget
	// allClusterBudgets are every ClusterBudget the selector matches, for a watch to
	// tell which concern the namespace as budgets change.
	allClusterBudgets []v1alpha1.ClusterBudget
	nsLabels          labels.Set
	// clusterListed is false when the user may not list ClusterBudgets.
	clusterListed        bool
	budgetsRV, clusterRV string
	notes                []string
}

// listBudgets reads the budgets of the query.
func listBudgets(ctx context.Context, c client.Client, q budgetQuery) (*budgetListing, error) {
	l := &budgetListing{query: q, clusterListed: true}
	var budgets v1alpha1.BudgetList
	if err := c.List(ctx, &budgets, client.InNamespace(q.ns), client.MatchingLabelsSelector{Selector: q.selector}); err != nil {
		return nil, fmt.Errorf("listing budgets: %w", err)
	}
	l.budgets, l.budgetsRV = budgets.Items, budgets.ResourceVersion
	var clusterBudgets v1alpha1.ClusterBudgetList
	if err := c.List(ctx, &clusterBudgets, client.MatchingLabelsSelector{Selector: q.selector}); err != nil {
		if !apierrors.IsForbidden(err) {
			return nil, fmt.Errorf("listing clusterbudgets: %w", err)
		}
		l.clusterListed = false
		// A tenant may not list ClusterBudgets by default: say so only when one of
		// theirs is known to be limited by a parent they cannot see.
		if parents := parentsNamed(l.budgets); len(parents) > 0 {
			l.notes = append(l.notes, fmt.Sprintf("ClusterBudget %s, the parent of %s, is not shown: you may not list ClusterBudgets",
				strings.Join(parents, ", "), budgetsNaming(l.budgets, parents)))
		}
	}
	l.allClusterBudgets, l.clusterRV = clusterBudgets.Items, clusterBudgets.ResourceVersion
	l.clusterBudgets = l.allClusterBudgets
	if q.ns != "" {
		var n corev1.Namespace
		if err := c.Get(ctx, client.ObjectKey{Name: q.ns}, &n); err == nil {
			l.nsLabels = n.Labels
		}
		l.clusterBudgets = clusterBudgetsAbove(q.ns, l.nsLabels, l.budgets, l.allClusterBudgets)
	}
	return l, nil
}

// parentsNamed are the parents the budgets name, sorted, once each.
func parentsNamed(budgets []v1alpha1.Budget) []string {
	var out []string
	for _, b := range budgets {
		if b.Spec.Parent != "" && !slices.Contains(out, b.Spec.Parent) {
			out = append(out, b.Spec.Parent)
		}
	}
	slices.Sort(out)
	return out
}

// budgetsNaming lists the budgets whose parent is one of parents: "Budget team-a/x".
func budgetsNaming(budgets []v1alpha1.Budget, parents []string) string {
	var out []string
	for _, b := range budgets {
		if slices.Contains(parents, b.Spec.Parent) {
			out = append(out, quota.BudgetKey{Namespace: b.Namespace, Name: b.Name}.Describe())
		}
	}
	return strings.Join(out, ", ")
}

// rows are the listing's budgets as the table shows them, with, when oldestWaits, the
// oldest wait of each from the snapshot, or, when the manager cannot be reached, from
// the gated pods it covers.
func (l *budgetListing) rows(ctx context.Context, e *env, c client.Client, oldestWaits bool) ([]budgetRow, []string, error) {
	notes := slices.Clone(l.notes)
	var oldest map[quota.BudgetKey]time.Time
	if oldestWaits {
		var more []string
		var err error
		if oldest, more, err = loadOldestWaits(ctx, e, c, l.query.ns, l.budgets, l.clusterBudgets); err != nil {
			return nil, nil, err
		}
		notes = append(notes, more...)
	}
	now := e.now()
	var rows []budgetRow
	for i := range l.budgets {
		rows = append(rows, budgetRowOf(&l.budgets[i], oldest, now))
	}
	for i := range l.clusterBudgets {
		rows = append(rows, clusterBudgetRowOf(&l.clusterBudgets[i], oldest, now))
	}
	slices.SortFunc(rows, func(a, b budgetRow) int { return a.Key.Compare(b.Key) })
	return rows, notes, nil
}

func budgetRowOf(b *v1alpha1.Budget, oldest map[quota.BudgetKey]time.Time, now time.Time) budgetRow {
	b.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Budget"))
	return newBudgetRow(quota.BudgetKey{Namespace: b.Namespace, Name: b.Name}, b, &b.Spec, &b.Status, oldest, now)
}

func clusterBudgetRowOf(b *v1alpha1.ClusterBudget, oldest map[quota.BudgetKey]time.Time, now time.Time) budgetRow {
	b.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("ClusterBudget"))
	return newBudgetRow(quota.BudgetKey{Name: b.Name}, b, &b.Spec.BudgetSpec, &b.Status, oldest, now)
}

func newBudgetRow(key quota.BudgetKey, obj client.Object, spec *v1alpha1.BudgetSpec, st *v1alpha1.BudgetStatus, oldest map[quota.BudgetKey]time.Time, now time.Time) budgetRow {
	r := budgetRow{
		Key: key, State: string(st.State), Hard: st.Hard, Used: st.Used, Admitted: st.AdmittedPods, Gated: st.GatedPods, OldestWait: "-",
		Strategy: string(spec.QueueingStrategy), Parent: spec.Parent, Pending: st.Pending, Borrowed: st.Borrowed, Lent: st.Lent, Flavors: st.Flavors, Object: obj,
	}
	if r.State == "" {
		r.State = "Unknown"
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); c != nil && c.Status == metav1.ConditionFalse && c.Reason != v1alpha1.ReasonClosed {
		r.State += " (" + c.Reason + ")"
	}
	if r.Hard == nil {
		// The manager has not written status yet: show the spec's limits.
		r.Hard, _ = quota.NormalizeHard(spec.Hard)
	}
	if t, ok := oldest[key]; ok {
		r.OldestWait = age(now, t)
	}
	if spec.UsageLimits != nil {
		r.Hours, _ = quota.NormalizeHard(spec.UsageLimits.Hours)
		r.Usage = st.Usage
	}
	return r
}

// clusterBudgetsAbove keeps the ClusterBudgets that concern namespace ns: those its
// labels select, and the ancestors of its Budgets and of those.
func clusterBudgetsAbove(ns string, nsLabels labels.Set, budgets []v1alpha1.Budget, all []v1alpha1.ClusterBudget) []v1alpha1.ClusterBudget {
	byName := map[string]*v1alpha1.ClusterBudget{}
	for i := range all {
		byName[all[i].Name] = &all[i]
	}
	keep := map[string]bool{}
	var climb func(name string)
	climb = func(name string) {
		cb := byName[name]
		if cb == nil || keep[name] {
			return
		}
		keep[name] = true
		climb(cb.Spec.Parent)
	}
	for _, b := range budgets {
		if b.Namespace == ns {
			climb(b.Spec.Parent)
		}
	}
	if nsLabels != nil {
		for _, cb := range all {
			if cb.Spec.NamespaceSelector == nil {
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(cb.Spec.NamespaceSelector)
			if err == nil && sel.Matches(nsLabels) {
				climb(cb.Name)
			}
		}
	}
	var out []v1alpha1.ClusterBudget
	for _, cb := range all {
		if keep[cb.Name] {
			out = append(out, cb)
		}
	}
	return out
}

func writeNotes(w io.Writer, notes []string) {
	for _, n := range notes {
		fmt.Fprintf(w, "Note: %s\n", n)
	}
}

// parseSelector reads a -l label selector as kubectl does; "" selects everything.
func parseSelector(s string) (labels.Selector, error) {
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("invalid selector %q: %w", s, err)
	}
	return sel, nil
}
