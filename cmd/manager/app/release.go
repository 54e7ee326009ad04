package app

import (
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/quotagate/quotagate/pkg/quota/controller"
)

// newReleaseCommand removes the quotagate gate from gated pods without any quota check.
// The chart's pre-delete hook runs
// `manager release --all --webhook-configuration <release>-webhook`, so uninstalling
// quotagate never strands a pod behind a gate that nobody will remove, and no pod
// create fails on a webhook that Helm is deleting.
func newReleaseCommand(o *Options) *cobra.Command {
	var all bool
	ro := controller.ReleaseOptions{
		PageSize:     controller.DefaultReleasePageSize,
		Workers:      controller.DefaultReleaseWorkers,
		WebhookDrain: controller.DefaultReleaseWebhookDrain,
	}
	cmd := &cobra.Command{
		Use:   "release (--all | --namespace NS) [--webhook-configuration NAME] [--admission-policy-binding NAME]",
		Short: "Remove the quotagate gate from every gated pod, ignoring budgets",
		Long: `Remove the quotagate gate from every gated pod, ignoring budgets.

With --webhook-configuration, the MutatingWebhookConfiguration is deleted first, so
that no new pod is gated, then every gated pod is released (pods are listed
--page-size at a time), and once --webhook-drain has passed since the deletion, a
final pass releases the pods the webhook gated while the API server still called it.
--admission-policy-binding does the same for the gate policy's
MutatingAdmissionPolicyBinding (admission mode policy).
With --all, the manager's finalizer quotagate.io/charged is then removed from every
ResourceClaim: the manager, gone, would never remove it once the claims' pods end.
Running the command again after a partial failure finishes the job.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl.SetLogger(crzap.New(crzap.UseFlagOptions(&o.Zap)))
			if all == (ro.Namespace != "") {
				return errors.New("give exactly one of --all or --namespace")
			}
			if ro.PageSize <= 0 || ro.Workers <= 0 || ro.WebhookDrain < 0 {
				return fmt.Errorf("--page-size (%d) and --workers (%d) must be positive, --webhook-drain (%v) not negative",
					ro.PageSize, ro.Workers, ro.WebhookDrain)
			}
			cfg, err := ctrl.GetConfig()
			if err != nil {
				return fmt.Errorf("loading kubeconfig: %w", err)
			}
			cfg.QPS, cfg.Burst = float32(o.QPS), o.Burst
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return fmt.Errorf("building a client: %w", err)
			}
			ro.Gate = o.Controller.Gate
			ro.UnpinClaims = all
			ctx := logr.NewContext(cmd.Context(), ctrl.Log.WithName("release"))
			n, err := controller.ReleaseAll(ctx, cs, ro)
			fmt.Fprintf(cmd.OutOrStdout(), "released %d pods\n", n)
			return err
		},
	}
	f := cmd.Flags()
	f.BoolVar(&all, "all", false, "Release gated pods in every namespace.")
	f.StringVar(&ro.Namespace, "namespace", "", "Release gated pods in this namespace only.")
	f.StringVar(&ro.WebhookConfiguration, "webhook-configuration", "", "Delete this MutatingWebhookConfiguration (quotagate's) before releasing; a missing one is not an error.")
	f.StringVar(&ro.AdmissionPolicyBinding, "admission-policy-binding", "", "Delete this MutatingAdmissionPolicyBinding (quotagate's gate policy) before releasing; a missing one is not an error.")
	f.Int64Var(&ro.PageSize, "page-size", ro.PageSize, "Pods listed per request: memory holds one page.")
	f.IntVar(&ro.Workers, "workers", ro.Workers, "Pods released concurrently.")
	f.DurationVar(&ro.WebhookDrain, "webhook-drain", ro.WebhookDrain, "How long after deleting the webhook configuration API servers may still call the webhook; the final pass starts no earlier.")
	return cmd
}
