package app

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
)

func newQueueCommand(e *env) *cobra.Command {
	out := newOutputFlags(true, formatWide)
	var all, watch bool
	var selector string
	cmd := &cobra.Command{
		Use:   "queue [BUDGET | -A] [-l SELECTOR] [-w]",
		Short: "Show a budget's gated pods in admission order, with why each waits",
		Long: `Show a budget's gated pods in the order the manager will admit them: position, pod,
priority, requests, how long it has waited, which queue it is in (active, backoff,
inadmissible, parked), when the manager estimates it starts (ETA: the median of its
estimate, "unknown" when it cannot be estimated, "-" when there is no estimate; why
POD gives its range and basis) and the reason it waits.

BUDGET is NAME or budget/NAME (a Budget in the current namespace, or -n), NAMESPACE/NAME,
or clusterbudget/NAME. Without BUDGET, the queues of every Budget of the namespace; with
-A, of every Budget you may list in every namespace and of every ClusterBudget (queues
you may not read are skipped with a note on stderr).

The queue comes from the visibility API (visibility.quotagate.io, docs/visibility.md)
with your own credentials: the view role in the budget's namespace is enough; with
--manager-url, from the manager's /debug/queues.

-o json|yaml print the visibility API's PendingPodList (a v1 List of them without
BUDGET); -o name prints pod/NAME, as NAMESPACE/pod/NAME where the output spans
namespaces (a ClusterBudget's queue, -A); -o wide adds RETRY IN, GROUP, UID and
REASON CODE.

-l shows only the pods whose labels match (read with your credentials: pods of a
namespace you may not list are left out, with a note). -w prints the queue, then
watches the budget (its status changes whenever a pod joins, leaves or is admitted, or
usage changes) and prints, without headers, the pods whose position, queue or reason
changed, and a row for each pod that left the queue: admitted, deleted, or no longer
in this queue.`,
		Example: `  kubectl quotagate queue team-a -n team-a
  kubectl quotagate queue team-a/team-a -o yaml
  kubectl quotagate queue clusterbudget/ml-department -o wide
  kubectl quotagate queue -A --no-headers
  kubectl quotagate queue team-a -n team-a -o name
  kubectl quotagate queue team-a -n team-a -l app=trainer -w`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: e.completeBudgets,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := out.printer()
			if err != nil {
				return err
			}
			if all && len(args) > 0 {
				return fmt.Errorf("a budget cannot be named with --all-namespaces: give BUDGET or -A, not both")
			}
			q := queueQuery{}
			if q.selector, err = parseSelector(selector); err != nil {
				return err
			}
			if !all {
				if q.ns, err = e.namespace(); err != nil {
					return err
				}
			}
			if len(args) == 1 {
				key, err := parseBudgetRef(args[0], q.ns)
				if err != nil {
					return err
				}
				q.budget = &key
			}
			ctx := cmd.Context()
			c, err := e.client()
			if err != nil {
				return err
			}
			var trigger *budgetTrigger
			if watch {
				// Before the first read, so that no change after it is missed.
				if trigger, err = watchQueueBudgets(ctx, c, q); err != nil {
					return err
				}
				defer trigger.stop()
			}
			read, err := e.queueReader(ctx)
			if err != nil {
				return err
			}
			lists, notes, err := q.read(ctx, e, c, read)
			if err != nil {
				return err
			}
			if q.budget != nil {
				err = printQueue(e.streams.Out, out, p, lists[0], e.now())
			} else {
				err = printQueues(e.streams.Out, e.streams.ErrOut, out, p, lists, all, e.now())
			}
			writeNotes(e.streams.ErrOut, notes)
			if err != nil || !watch {
				return err
			}
			return watchQueues(ctx, e, c, out, p, q, lists, trigger)
		},
	}
	out.addFlags(cmd, true)
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "Show the queues of every Budget in every namespace and of every ClusterBudget.")
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "Selector (label query) on the pods: show only the gated pods whose labels match (positions stay those in the whole queue).")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "After printing the queue, watch the budget and print the pods whose place or reason changes, and those that leave the queue.")
	return cmd
}

// printQueue prints one budget's queue: as a table headed by the budget's state and
// strategy, or with p.
func printQueue(w io.Writer, out *outputFlags, p printers.ResourcePrinter, l *visv1.PendingPodList, now time.Time) error {
	switch {
	case p != nil && out.isName():
		return printNames(w, podObjects(l), l.BudgetKind == "ClusterBudget")
	case p != nil:
		return p.PrintObj(l, w)
	}
	if !out.noHeaders {
		fmt.Fprintf(w, "%s: %s, %s, %d gated\n", budgetKeyOf(l).Describe(), l.State, l.Strategy, l.Total)
	}
	return out.printTable(w, queueColumns(false), queueRows(l, out.wide(), false, now))
}

// printQueues prints several budgets' queues: as one table with a BUDGET column, or
// with p (a v1 List of PendingPodLists; names once each).
func printQueues(w, errOut io.Writer, out *outputFlags, p printers.ResourcePrinter, lists []*visv1.PendingPodList, all bool, now time.Time) error {
	if len(lists) == 0 {
		fmt.Fprintln(errOut, "No budgets found.")
	}
	if p != nil && out.isName() {
		var pods []runtime.Object
		qualify := all
		for _, l := range lists {
			pods = append(pods, podObjects(l)...)
			qualify = qualify || l.BudgetKind == "ClusterBudget"
		}
		return printNames(w, pods, qualify)
	}
	if p != nil {
		objs := make([]runtime.Object, len(lists))
		for i, l := range lists {
			objs[i] = l
		}
		return printObjects(w, p, objs, true)
	}
	var rows []metav1.TableRow
	for _, l := range lists {
		rows = append(rows, queueRows(l, out.wide(), true, now)...)
	}
	if len(rows) == 0 {
		if len(lists) > 0 {
			fmt.Fprintf(errOut, "No gated pods found in the queues of %d budgets.\n", len(lists))
		}
		return nil
	}
	return out.printTable(w, queueColumns(true), rows)
}

// podObjects are the queue's pods as objects for -o name.
func podObjects(l *visv1.PendingPodList) []runtime.Object {
	objs := make([]runtime.Object, len(l.Items))
	for i, p := range l.Items {
		objs[i] = &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name},
		}
	}
	return objs
}

// queueColumns are the queue table's columns, the budget's first when the table holds
// several queues; the wide-only ones come before ETA and REASON, the longest last.
func queueColumns(withBudget bool) []metav1.TableColumnDefinition {
	var cols []metav1.TableColumnDefinition
	if withBudget {
		cols = append(cols, column("Budget", false))
	}
	return append(cols,
		column("Position", false), column("Pod", false), column("Priority", false), column("Requests", false),
		column("Waiting", false), column("Queue", false),
		column("Retry In", true), column("Group", true), column("UID", true), column("Reason Code", true),
		column("ETA", false), column("Reason", false))
}

// queueRows are one queue's rows. Without wide, a pod's group follows its name.
func queueRows(l *visv1.PendingPodList, wide, withBudget bool, now time.Time) []metav1.TableRow {
	rows := make([]metav1.TableRow, 0, len(l.Items))
	for _, p := range l.Items {
		pod := p.Namespace + "/" + p.Name
		if p.Group != "" && !wide {
			pod += " (group " + p.Group + ")"
		}
		var cells []string
		if withBudget {
			cells = append(cells, budgetKeyOf(l).Describe())
		}
		position := "-" // a pod that left the queue (-w)
		if p.Position > 0 {
			position = strconv.FormatInt(p.Position, 10)
		}
		cells = append(cells, position, pod, strconv.Itoa(int(p.Priority)), requestsString(p.Requests),
			waiting(p), p.Queue, retryIn(p.RetryAt, now), orDash(p.Group), orDash(p.UID), orDash(p.ReasonCode),
			eta(p.EstimatedStart, now), p.Reason)
		rows = append(rows, tableRow(cells...))
	}
	return rows
}

// waiting is how long the pod had waited when the page was made, as kubectl's AGE.
func waiting(p visv1.PendingPod) string {
	if p.CreationTimestamp.IsZero() {
		return "-"
	}
	return duration.HumanDuration(time.Duration(p.WaitingSeconds) * time.Second)
}

// retryIn is how long until a pod in backoff is tried again.
func retryIn(at *metav1.Time, now time.Time) string {
	if at == nil {
		return "-"
	}
	return duration.HumanDuration(max(0, at.Sub(now)))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
