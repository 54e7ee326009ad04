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
	return &cobra.Command{
		Use:   verb + " BUDGET",
		Short: short,
		Long: short + `.

BUDGET is NAME or budget/NAME (a Budget in the current namespace, or -n), NAMESPACE/NAME,
or clusterbudget/NAME. This sets spec.state; the manager moves status.state.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
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
			patch, err := json.Marshal(map[string]any{"spec": map[string]any{"state": state}})
			if err != nil {
				return fmt.Errorf("building the patch: %w", err)
			}
			if err := c.Patch(cmd.Context(), obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
				return fmt.Errorf("setting spec.state of %s to %s: %w", key.Describe(), state, err)
			}
			fmt.Fprintf(e.streams.Out, "%s: spec.state set to %s\n", key.Describe(), state)
			return nil
		},
	}
}
