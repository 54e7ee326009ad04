package app

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/quotagate/quotagate/pkg/quota"
)

func newQueueCommand(e *env) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "queue BUDGET",
		Short: "Show a budget's gated pods in admission order, with why each waits",
		Long: `Show a budget's gated pods in the order the manager will admit them: position, pod,
priority, requests, how long it has waited, which queue it is in (active, backoff,
inadmissible, parked) and the reason it waits.

BUDGET is NAME or budget/NAME (a Budget in the current namespace, or -n), NAMESPACE/NAME,
or clusterbudget/NAME. The queue comes from the visibility API
(visibility.quotagate.io, docs/visibility.md) with your own credentials: the view role
in the budget's namespace is enough; with --manager-url, from the manager's /debug/queues.`,
		Example: `  kubectl quotagate queue team-a -n team-a
  kubectl quotagate queue team-a/team-a -o json
  kubectl quotagate queue clusterbudget/ml-department`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := validateOutput(output); err != nil {
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
			bq, err := readQueue(cmd.Context(), e, key)
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(e.streams.Out, bq)
			}
			renderQueue(e.streams.Out, bq, e.now())
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: json, or empty for a table.")
	return cmd
}

// readQueue reads key's queue from the visibility API, or, with --manager-url (and in
// tests that give no visibility reader), from the manager's snapshot.
func readQueue(ctx context.Context, e *env, key quota.BudgetKey) (quota.BudgetQueue, error) {
	if e.queues != nil {
		read, err := e.queues()
		if err != nil {
			return quota.BudgetQueue{}, err
		}
		if read != nil {
			return read(ctx, key)
		}
	}
	src, err := e.snapshots()
	if err != nil {
		return quota.BudgetQueue{}, err
	}
	snap, err := src.Snapshot(ctx)
	if err != nil {
		return quota.BudgetQueue{}, err
	}
	bq, ok := newSnapshotView(snap).byBudget[key]
	if !ok {
		return quota.BudgetQueue{}, fmt.Errorf("the manager has no queue for %s: no such budget, or the manager has not seen it yet", key.Describe())
	}
	return bq, nil
}

// renderQueue writes one budget's queue as a table, headed by the budget's state and
// strategy.
func renderQueue(w io.Writer, bq quota.BudgetQueue, now time.Time) {
	fmt.Fprintf(w, "%s: %s, %s, %d gated\n", bq.Budget.Describe(), bq.State, bq.Strategy, len(bq.Pods))
	if len(bq.Pods) == 0 {
		return
	}
	tw := newTable(w)
	row(tw, "POSITION", "POD", "PRIORITY", "REQUESTS", "WAITING", "QUEUE", "REASON")
	for _, p := range bq.Pods {
		pod := p.Pod.String()
		if p.Group != "" {
			pod += " (group " + p.Group + ")"
		}
		row(tw, strconv.Itoa(p.Position), pod, strconv.Itoa(int(p.Priority)), requestsString(p.Requests),
			age(now, p.Created), string(p.Queue), p.Reason.Message)
	}
	_ = tw.Flush()
}
