package app

import (
	"context"
	"fmt"
	"io"
	"slices"
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
	var all bool
	cmd := &cobra.Command{
		Use:     "budgets [-A | -n NAMESPACE]",
		Aliases: []string{"budget", "bdg"},
		Short:   "List budgets with their usage, admitted and gated pods, and the oldest wait",
		Long: `List the Budgets of a namespace (with the ClusterBudgets above them), or with -A every
Budget and ClusterBudget: state, each hard resource as used/hard with a bar, admitted and
gated pods, and how long the oldest gated pod has waited.

-o wide adds STRATEGY, PARENT and each resource's PENDING (requests of gated pods);
-o json|yaml print the Budget and ClusterBudget objects as the API has them, in a v1
List (the oldest wait is the table's only); -o name prints budget.quotagate.io/NAME and
clusterbudget.quotagate.io/NAME, as NAMESPACE/budget.quotagate.io/NAME with -A.`,
		Example: `  kubectl quotagate budgets -n team-a
  kubectl quotagate budgets -A -o wide
  kubectl quotagate budgets -n team-a -o yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := out.printer()
			if err != nil {
				return err
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			ns := ""
			if !all {
				if ns, err = e.namespace(); err != nil {
					return err
				}
			}
			rows, notes, err := loadBudgetRows(cmd.Context(), e, c, ns, p == nil)
			if err != nil {
				return err
			}
			err = printBudgets(e.streams.Out, e.streams.ErrOut, out, p, rows, all)
			writeNotes(e.streams.ErrOut, notes)
			return err
		},
	}
	out.addFlags(cmd, true)
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "List budgets of every namespace and every ClusterBudget.")
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
	// Object is the Budget or ClusterBudget, its apiVersion and kind set, for -o
	// json|yaml|name.
	Object client.Object
}

// loadBudgetRows reads the budgets of namespace ns ("" for all, with every
// ClusterBudget), and, with oldestWaits, the oldest wait of each from the snapshot, or,
// when the manager cannot be reached, from the gated pods it covers.
func loadBudgetRows(ctx context.Context, e *env, c client.Client, ns string, oldestWaits bool) ([]budgetRow, []string, error) {
	var notes []string
	var budgets v1alpha1.BudgetList
	if err := c.List(ctx, &budgets, client.InNamespace(ns)); err != nil {
		return nil, nil, fmt.Errorf("listing budgets: %w", err)
	}
	var clusterBudgets v1alpha1.ClusterBudgetList
	if err := c.List(ctx, &clusterBudgets); err != nil {
		if !apierrors.IsForbidden(err) {
			return nil, nil, fmt.Errorf("listing clusterbudgets: %w", err)
		}
		notes = append(notes, "ClusterBudgets are not shown: you may not list them")
	}
	var nsLabels labels.Set
	if ns != "" {
		var n corev1.Namespace
		if err := c.Get(ctx, client.ObjectKey{Name: ns}, &n); err == nil {
			nsLabels = n.Labels
		}
		clusterBudgets.Items = clusterBudgetsAbove(ns, nsLabels, budgets.Items, clusterBudgets.Items)
	}

	var oldest map[quota.BudgetKey]time.Time
	if oldestWaits {
		var more []string
		var err error
		if oldest, more, err = loadOldestWaits(ctx, e, c, ns, budgets.Items, clusterBudgets.Items); err != nil {
			return nil, nil, err
		}
		notes = append(notes, more...)
	}

	now := e.now()
	var rows []budgetRow
	for i := range budgets.Items {
		b := &budgets.Items[i]
		key := quota.BudgetKey{Namespace: b.Namespace, Name: b.Name}
		b.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Budget"))
		rows = append(rows, newBudgetRow(key, b, &b.Spec, &b.Status, oldest, now))
	}
	for i := range clusterBudgets.Items {
		b := &clusterBudgets.Items[i]
		b.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("ClusterBudget"))
		rows = append(rows, newBudgetRow(quota.BudgetKey{Name: b.Name}, b, &b.Spec.BudgetSpec, &b.Status, oldest, now))
	}
	slices.SortFunc(rows, func(a, b budgetRow) int { return a.Key.Compare(b.Key) })
	return rows, notes, nil
}

// loadOldestWaits finds the oldest wait of each budget from the snapshot, or, when the
// manager cannot be reached, from the gated pods it covers; the notes say which.
func loadOldestWaits(ctx context.Context, e *env, c client.Client, ns string, budgets []v1alpha1.Budget, clusterBudgets []v1alpha1.ClusterBudget) (map[quota.BudgetKey]time.Time, []string, error) {
	snap, note, err := e.snapshot(ctx)
	if err != nil {
		return nil, nil, err
	}
	if snap != nil {
		return oldestFromSnapshot(snap.raw), nil, nil
	}
	notes := []string{note}
	oldest, err := oldestFromPods(ctx, c, ns, budgets, clusterBudgets)
	if err != nil {
		return nil, append(notes, fmt.Sprintf("oldest waits are not shown: %v", err)), nil
	}
	msg := "oldest waits are computed from the gated pods' creation times"
	if ns != "" && len(clusterBudgets) > 0 {
		msg += " (for ClusterBudgets, among the pods of namespace " + ns + " only)"
	}
	return oldest, append(notes, msg), nil
}

func newBudgetRow(key quota.BudgetKey, obj client.Object, spec *v1alpha1.BudgetSpec, st *v1alpha1.BudgetStatus, oldest map[quota.BudgetKey]time.Time, now time.Time) budgetRow {
	r := budgetRow{
		Key: key, State: string(st.State), Hard: st.Hard, Used: st.Used, Admitted: st.AdmittedPods, Gated: st.GatedPods, OldestWait: "-",
		Strategy: string(spec.QueueingStrategy), Parent: spec.Parent, Pending: st.Pending, Borrowed: st.Borrowed, Lent: st.Lent, Object: obj,
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

func oldestFromSnapshot(s quota.Snapshot) map[quota.BudgetKey]time.Time {
	out := map[quota.BudgetKey]time.Time{}
	for _, b := range s.Budgets {
		for _, p := range b.Pods {
			if t, ok := out[b.Budget]; !ok || p.Created.Before(t) {
				out[b.Budget] = p.Created
			}
		}
	}
	return out
}

// oldestFromPods finds each budget's oldest gated pod without the manager: it feeds the
// budgets, namespaces and gated pods it can read to a local admission core, which
// decides coverage by the manager's own rules. With ns set it sees only that
// namespace's pods, so a ClusterBudget's figure covers that namespace only.
func oldestFromPods(ctx context.Context, c client.Client, ns string, budgets []v1alpha1.Budget, clusterBudgets []v1alpha1.ClusterBudget) (map[quota.BudgetKey]time.Time, error) {
	core := quota.NewAdmissionQueue()
	var namespaces []corev1.Namespace
	if ns != "" {
		var n corev1.Namespace
		if err := c.Get(ctx, client.ObjectKey{Name: ns}, &n); err != nil {
			return nil, fmt.Errorf("reading namespace %s: %w", ns, err)
		}
		namespaces = []corev1.Namespace{n}
	} else {
		var list corev1.NamespaceList
		if err := c.List(ctx, &list); err != nil {
			return nil, fmt.Errorf("listing namespaces: %w", err)
		}
		namespaces = list.Items
	}
	for _, n := range namespaces {
		core.SetNamespace(n.Name, n.Labels)
	}
	for i := range budgets {
		core.UpsertBudget(quota.BudgetFromAPI(&budgets[i]))
	}
	for i := range clusterBudgets {
		core.UpsertBudget(quota.ClusterBudgetFromAPI(&clusterBudgets[i]))
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	for i := range pods.Items {
		p := quota.NewPod(&pods.Items[i], v1alpha1.SchedulingGate, time.Time{})
		if p.Gated && !p.Terminal {
			core.UpsertPod(p)
		}
	}
	return oldestFromSnapshot(core.Snapshot()), nil
}

func writeNotes(w io.Writer, notes []string) {
	for _, n := range notes {
		fmt.Fprintf(w, "Note: %s\n", n)
	}
}
