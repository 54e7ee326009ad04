package app

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// Values of --dry-run, as kubectl takes them.
const (
	dryRunNone   = "none"
	dryRunClient = "client"
	dryRunServer = "server"
)

// newStateCommand returns "open" or "close": a merge patch of spec.state.
func newStateCommand(e *env, state v1alpha1.BudgetState) *cobra.Command {
	verb := strings.ToLower(string(state))
	if state == v1alpha1.StateClosed {
		verb = "close"
	}
	short := "Open a budget: admit pods that fit again"
	if state == v1alpha1.StateClosed {
		short = "Close a budget: stop new admissions (running pods keep running)"
	}
	dryRun := dryRunNone
	cmd := &cobra.Command{
		Use:   verb + " BUDGET",
		Short: short,
		Long: short + `.

BUDGET is NAME or budget/NAME (a Budget in the current namespace, or -n), NAMESPACE/NAME,
or clusterbudget/NAME. This sets spec.state; the manager moves status.state.

--dry-run=client reads the budget and changes nothing; --dry-run=server sends the
patch with the API server's dryRun, so admission and validation run and nothing is
stored. Either way the output ends in "(dry run)" or "(server dry run)", as kubectl's.`,
		Example:           fmt.Sprintf("  kubectl quotagate %s team-a -n team-a\n  kubectl quotagate %s clusterbudget/ml-department --dry-run=server", verb, verb),
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: e.completeBudgets,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dryRun != dryRunNone && dryRun != dryRunClient && dryRun != dryRunServer {
				return fmt.Errorf(`invalid dry-run value (%s). Must be "none", "server", or "client"`, dryRun)
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
			var obj client.Object = &v1alpha1.Budget{}
			if key.IsCluster() {
				obj = &v1alpha1.ClusterBudget{}
			}
			obj.SetNamespace(key.Namespace)
			obj.SetName(key.Name)
			suffix := ""
			switch dryRun {
			case dryRunClient:
				// As kubectl patch --dry-run=client: the object must exist; nothing is sent.
				if err := c.Get(cmd.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
					return fmt.Errorf("reading %s: %w", key.Describe(), err)
				}
				suffix = " (dry run)"
			default:
				patch, err := json.Marshal(map[string]any{"spec": map[string]any{"state": state}})
				if err != nil {
					return fmt.Errorf("building the patch: %w", err)
				}
				var opts []client.PatchOption
				if dryRun == dryRunServer {
					opts, suffix = append(opts, client.DryRunAll), " (server dry run)"
				}
				if err := c.Patch(cmd.Context(), obj, client.RawPatch(types.MergePatchType, patch), opts...); err != nil {
					return fmt.Errorf("setting spec.state of %s to %s: %w", key.Describe(), state, err)
				}
			}
			fmt.Fprintf(e.streams.Out, "%s: spec.state set to %s%s\n", key.Describe(), state, suffix)
			return nil
		},
	}
	cmd.Flags().StringVar(&dryRun, "dry-run", dryRunNone, `Must be "none", "server", or "client". If client strategy, only print what would change, without sending it. If server strategy, submit the patch without persisting it.`)
	_ = cmd.RegisterFlagCompletionFunc("dry-run", completeFixed(dryRunNone, dryRunServer, dryRunClient))
	return cmd
}
