package app

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/quotagate/quotagate/pkg/quota"
)

// sortByName is --sort-by's value for sorting usage by pod.
const sortByName = "name"

func newUsageCommand(e *env) *cobra.Command {
	out := newOutputFlags(true)
	var sortBy string
	cmd := &cobra.Command{
		Use:   "usage BUDGET [--sort-by name|RESOURCE]",
		Short: "List the pods charged to a budget and what each uses",
		Long: `List the pods charged to a budget, what each is charged of every resource the budget's
hard limits, and the total, which is what the budget's status.used says (a note on
stderr says when they differ).

A pod is charged, as the manager charges it, when it is not gated and not terminal, to
every budget that covers it (its namespace's Budgets whose podSelector matches, the
ClusterBudgets whose namespaceSelector matches, and their ancestors) and to those its
quotagate.io/admitted-by annotation names. A ClusterBudget's usage reads every
namespace, Budget and pod.

BUDGET is NAME or budget/NAME (a Budget in the current namespace, or -n), NAMESPACE/NAME,
or clusterbudget/NAME. --sort-by a resource (cpu or requests.cpu, memory, pods, ...)
lists the largest first; --sort-by name (the default) by namespace and name.

-o json|yaml print a BudgetUsage (cli.quotagate.io/v1alpha1, a client-side kind);
-o name prints the pods as pod/NAME (NAMESPACE/pod/NAME for a ClusterBudget).`,
		Example: `  kubectl quotagate usage team-a -n team-a
  kubectl quotagate usage clusterbudget/ml-department --sort-by cpu
  kubectl quotagate usage team-a/team-a -o yaml`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: e.completeBudgets,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := out.printer()
			if err != nil {
				return err
			}
			ns, err := e.namespace()
			if err != nil {
				return err
			}
			key, err := parseBudgetRef(args[0], ns)
			if err != nil {
				return err
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			u, err := loadUsage(cmd.Context(), c, key, e.now())
			if err != nil {
				return err
			}
			if err := sortUsage(u, sortBy); err != nil {
				return err
			}
			err = printUsage(e.streams.Out, out, p, u)
			if p == nil || out.isName() {
				writeNotes(e.streams.ErrOut, u.Notes)
			}
			return err
		},
	}
	out.addFlags(cmd, true)
	cmd.Flags().StringVar(&sortBy, "sort-by", sortByName, "Sort by name (namespace, then name), or by a resource the budget limits (cpu, requests.cpu, memory, pods, ...), largest first.")
	_ = cmd.RegisterFlagCompletionFunc("sort-by", completeFixed(sortByName, "requests.cpu", "requests.memory", "limits.cpu", "limits.memory", "pods"))
	return cmd
}

// sortUsage sorts the pods by name, or by a resource of hard (largest first, then by
// name). A bare name means what it means in hard (cpu is requests.cpu).
func sortUsage(u *budgetUsage, by string) error {
	byName := func(a, b podUsage) int { return a.Pod.Compare(b.Pod) }
	if by == sortByName || by == "" {
		slices.SortFunc(u.Pods, byName)
		return nil
	}
	name := corev1.ResourceName(by)
	if _, ok := u.Hard[name]; !ok {
		if normalized, err := quota.NormalizeHard(corev1.ResourceList{name: {}}); err == nil && len(normalized) == 1 {
			for n := range normalized {
				name = n
			}
		}
	}
	if _, ok := u.Hard[name]; !ok {
		allowed := []string{sortByName}
		for _, n := range sortedNames(u.Hard) {
			allowed = append(allowed, string(n))
		}
		return fmt.Errorf("--sort-by %q: %s does not limit it; sort by one of: %s", by, u.Budget.Describe(), strings.Join(allowed, ", "))
	}
	slices.SortFunc(u.Pods, func(a, b podUsage) int {
		qa, qb := a.Usage[name], b.Usage[name]
		return cmp.Or(qb.Cmp(qa), byName(a, b))
	})
	return nil
}

// printUsage prints the usage: a heading, the table of pods and a TOTAL row (none of
// them but the pods' rows with --no-headers), or with p a BudgetUsage (-o json|yaml)
// or the pods' names.
func printUsage(w io.Writer, out *outputFlags, p printers.ResourcePrinter, u *budgetUsage) error {
	cluster := u.Budget.IsCluster()
	switch {
	case p != nil && out.isName():
		objs := make([]runtime.Object, len(u.Pods))
		for i, pu := range u.Pods {
			objs[i] = &metav1.PartialObjectMetadata{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
				ObjectMeta: metav1.ObjectMeta{Namespace: pu.Pod.Namespace, Name: pu.Pod.Name},
			}
		}
		return printNames(w, objs, cluster)
	case p != nil:
		return p.PrintObj(newBudgetUsageObject(u), w)
	}
	names := sortedNames(u.Hard)
	var cols []metav1.TableColumnDefinition
	if cluster {
		cols = append(cols, column("Namespace", false))
	}
	cols = append(cols, column("Pod", false))
	for _, n := range names {
		cols = append(cols, column(string(n), false))
	}
	cells := func(ns, name string, l corev1.ResourceList) metav1.TableRow {
		var c []string
		if cluster {
			c = append(c, ns)
		}
		c = append(c, name)
		for _, n := range names {
			q := l[n]
			c = append(c, q.String())
		}
		return tableRow(c...)
	}
	rows := make([]metav1.TableRow, 0, len(u.Pods)+1)
	for _, pu := range u.Pods {
		rows = append(rows, cells(pu.Pod.Namespace, pu.Pod.Name, pu.Usage))
	}
	if !out.noHeaders {
		fmt.Fprintf(w, "%s: %d pods charged; hard %s\n", u.Budget.Describe(), len(u.Pods), listString(u.Hard))
		rows = append(rows, cells("", "TOTAL", u.Total))
	}
	return out.printTable(w, cols, rows)
}
