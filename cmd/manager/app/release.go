package app

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/quotagate/quotagate/pkg/quota/controller"
)

// newReleaseCommand removes the quotagate gate from gated pods without any quota check.
// The chart's pre-delete hook runs `manager release --all`, so uninstalling quotagate
// never strands a pod behind a gate that nobody will remove.
func newReleaseCommand(o *Options) *cobra.Command {
	var all bool
	var namespace string
	cmd := &cobra.Command{
		Use:   "release (--all | --namespace NS)",
		Short: "Remove the quotagate gate from every gated pod, ignoring budgets",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl.SetLogger(crzap.New(crzap.UseFlagOptions(&o.Zap)))
			if all == (namespace != "") {
				return errors.New("give exactly one of --all or --namespace")
			}
			cfg, err := ctrl.GetConfig()
			if err != nil {
				return fmt.Errorf("loading kubeconfig: %w", err)
			}
			cfg.QPS, cfg.Burst = float32(o.QPS), o.Burst
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			n, err := controller.ReleaseAll(cmd.Context(), cs, namespace, o.Controller.Gate)
			fmt.Fprintf(cmd.OutOrStdout(), "released %d pods\n", n)
			return err
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "Release gated pods in every namespace.")
	cmd.Flags().StringVar(&namespace, "namespace", "", "Release gated pods in this namespace only.")
	return cmd
}
