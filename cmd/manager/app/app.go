// Package app wires the manager's flags, logger and controller-runtime manager.
package app

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/quotagate/quotagate/internal/certrotation"
	"github.com/quotagate/quotagate/internal/version"
	"github.com/quotagate/quotagate/pkg/quota/controller"
)

// Options are the manager's flags.
type Options struct {
	MetricsAddr   string
	MetricsSecure bool
	ProbeAddr     string
	// PprofAddr is where Go's /debug/pprof endpoints are served; "0" disables them.
	PprofAddr               string
	LeaderElect             bool
	LeaderElectionNamespace string
	LeaderElectionID        string
	// LeaseDuration, RenewDeadline and RetryPeriod time the leader election, with
	// kube-controller-manager's flag names and meanings.
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	QPS           float64
	Burst         int
	Controller    controller.Options
	Zap           crzap.Options
	// Certs, when Certs.SecretName is set, has the leader manage the webhook's certificate.
	Certs certrotation.Config
	// Visibility configures the visibility.quotagate.io API server.
	Visibility VisibilityOptions
}

// DefaultOptions are chosen so that the quota layer, not the client, is never what
// limits release speed: the API server's own flow control is the limit.
func DefaultOptions() Options {
	return Options{
		MetricsAddr:             ":8080",
		MetricsSecure:           true,
		ProbeAddr:               ":8081",
		PprofAddr:               "0",
		LeaderElect:             true,
		LeaderElectionNamespace: envOr("POD_NAMESPACE", "quotagate-system"),
		LeaderElectionID:        "quotagate-manager",
		LeaseDuration:           15 * time.Second,
		RenewDeadline:           10 * time.Second,
		RetryPeriod:             2 * time.Second,
		QPS:                     500,
		Burst:                   1000,
		Controller:              controller.DefaultOptions(),
		Zap:                     crzap.Options{Development: false},
		Certs:                   defaultCertConfig(),
		Visibility:              defaultVisibilityOptions(),
	}
}

// NewCommand returns the manager's root command; `release` is its one subcommand.
func NewCommand() *cobra.Command {
	o := DefaultOptions()
	cmd := &cobra.Command{
		Use:           "manager",
		Short:         "quotagate's quota controller: admits gated pods when their budgets have room",
		SilenceUsage:  true,
		SilenceErrors: false,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl.SetLogger(crzap.New(crzap.UseFlagOptions(&o.Zap)))
			return Run(cmd.Context(), o)
		},
	}
	fs := cmd.PersistentFlags()
	fs.Float64Var(&o.QPS, "kube-api-qps", o.QPS, "Queries per second to the API server (client-side limit; the API server's own flow control still applies).")
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "Burst of queries to the API server.")
	fs.StringVar(&o.Controller.Gate, "gate", o.Controller.Gate, "The scheduling gate quotagate owns.")

	f := cmd.Flags()
	f.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, "Address of the metrics and /debug/queues endpoint; 0 disables it.")
	f.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure, "Serve metrics over HTTPS with Kubernetes authentication and authorization.")
	f.StringVar(&o.ProbeAddr, "health-probe-bind-address", o.ProbeAddr, "Address of /healthz and /readyz.")
	f.StringVar(&o.PprofAddr, "pprof-bind-address", o.PprofAddr, "Address of Go's /debug/pprof endpoints (CPU, heap and goroutine profiles), unauthenticated: bind it to localhost; 0 (the default) disables them.")
	f.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect a leader with a Lease, so only one replica admits pods.")
	f.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "Namespace of the leader election Lease.")
	f.StringVar(&o.LeaderElectionID, "leader-election-id", o.LeaderElectionID, "Name of the leader election Lease.")
	f.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "How long a standby waits after the leader's last renewal before it takes the lease.")
	f.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "How long the leader keeps trying to renew before it gives up leading; less than the lease duration.")
	f.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "How often candidates try to acquire or renew the lease.")
	f.IntVar(&o.Controller.Workers, "workers", o.Controller.Workers, "How many ungate patches may be in flight at once.")
	f.Int32Var(&o.Controller.PriorityCeiling, "priority-ceiling", o.Controller.PriorityCeiling, "The highest priority pods are ranked by in admission order and preemption: a pod's priority above it (system-cluster-critical, system-node-critical) counts as it. The default is Kubernetes' highest user-definable priority.")
	f.BoolVar(&o.Controller.HoldUncovered, "hold-uncovered", o.Controller.HoldUncovered, "Keep gated the pods of opted-in namespaces that no budget covers, with a Waiting event saying so, until a budget covers them. --hold-uncovered=false admits them at once, charged to no budget: a tenant who relabels a pod out of every podSelector then runs it without a queue.")
	f.BoolVar(&o.Controller.WatchSecrets, "watch-secrets", o.Controller.WatchSecrets, "Let pods wait for Secrets of their namespace (quotagate.io/wait-for: secret/NAME). The manager then watches every Secret's metadata, which needs list and watch on Secrets cluster-wide (the chart's manager.watchSecrets grants it); without it such a pod waits with DependencyFailed.")
	f.BoolVar(&o.Controller.PodAdmittedEvents, "pod-admitted-events", o.Controller.PodAdmittedEvents, "Emit an Admitted event on every pod admitted, a second API write per admission (default: one event per budget at most every 10s that sums up its admissions).")
	f.IntVar(&o.Controller.WaitingEventsPerBudget, "waiting-events-per-budget", o.Controller.WaitingEventsPerBudget, "Send a Waiting event (why a pod waits, on each change) to the first this many gated pods of each budget's queue; the pods behind get theirs when they reach the head. 0 sends none.")
	f.DurationVar(&o.Controller.FlushInterval, "flush-interval", o.Controller.FlushInterval, "How often pods found not to fit are re-evaluated even without an event.")
	f.DurationVar(&o.Controller.LendHold, "lend-hold", o.Controller.LendHold, "How long the quota a lender's ended pod frees is kept for the lender's next pods before budgets under the same parent may borrow it (0: lent at once).")
	f.DurationVar(&o.Controller.PreemptionCooldown, "preemption-cooldown", o.Controller.PreemptionCooldown, "How long a pod must have waited (since the manager first saw it gated) before pods are evicted to make room for it, by reclaim or withinBudget: LowerPriority. It doubles, up to --preemption-max-backoff, for each preemptor of a namespace that goes without using the room evictions made for it. 0: evict at once, no backoff.")
	f.DurationVar(&o.Controller.UsageWriteInterval, "usage-write-interval", o.Controller.UsageWriteInterval, "How often a budget with usageLimits and running pods has its status.usage written (and a budget under a parent with fairSharing.usageHalfLife its status.fairSharing). What its pods used survives a restart or failover up to the last write; pods still running lose nothing.")
	f.DurationVar(&o.Controller.PreemptionMaxBackoff, "preemption-max-backoff", o.Controller.PreemptionMaxBackoff, "The most a namespace's preemption cooldown grows to as its preemptors vanish; it falls back by one doubling for each such period in which none does. At least --preemption-cooldown.")
	f.DurationVar(&o.Controller.EstimateInterval, "estimate-interval", o.Controller.EstimateInterval, "Least time between two estimates of when each gated pod starts (a simulation of the admission queues, run when something changed; the visibility API and the plugin show them). 0 turns estimates off.")
	f.IntVar(&o.Controller.EstimateMaxPods, "estimate-max-pods", o.Controller.EstimateMaxPods, "The most pods (in the manager's pod cache) the estimator simulates: with more, it skips its passes and gated pods have no estimated start. 0: no bound.")
	f.DurationVar(&o.Controller.UngateTimeout, "ungate-timeout", o.Controller.UngateTimeout, "Timeout of one ungate patch; keep it below the lease duration minus the renew deadline.")

	addCertFlags(f, &o.Certs)
	addVisibilityFlags(f, &o.Visibility)
	addSimulationFlags(f, &o.Visibility.Simulations, &o.Controller)

	gofs := flag.NewFlagSet("", flag.ExitOnError)
	o.Zap.BindFlags(gofs)
	ctrl.RegisterFlags(gofs)
	fs.AddGoFlagSet(gofs)

	cmd.AddCommand(newReleaseCommand(&o), version.NewCommand())
	return cmd
}

// Validate checks the flags that only make sense together.
func (o Options) Validate() error {
	if o.Controller.WaitingEventsPerBudget < 0 {
		return fmt.Errorf("--waiting-events-per-budget (%d) must be 0 (no Waiting events) or more", o.Controller.WaitingEventsPerBudget)
	}
	if o.Controller.EstimateInterval < 0 {
		return fmt.Errorf("--estimate-interval (%s) must be 0 (no estimates) or more", o.Controller.EstimateInterval)
	}
	if o.Controller.EstimateMaxPods < 0 {
		return fmt.Errorf("--estimate-max-pods (%d) must be 0 (no bound) or more", o.Controller.EstimateMaxPods)
	}
	if err := o.Visibility.Simulations.Validate(); err != nil {
		return err
	}
	if o.Controller.SimulationCPU < 0 {
		return fmt.Errorf("--simulation-cpu (%g) must be 0 (no bound) or more", o.Controller.SimulationCPU)
	}
	if o.Controller.PreemptionCooldown < 0 {
		return fmt.Errorf("--preemption-cooldown (%s) must be 0 (evict at once) or more", o.Controller.PreemptionCooldown)
	}
	if o.Controller.PreemptionCooldown > 0 && o.Controller.PreemptionMaxBackoff < o.Controller.PreemptionCooldown {
		return fmt.Errorf("--preemption-max-backoff (%s) must not be below --preemption-cooldown (%s)", o.Controller.PreemptionMaxBackoff, o.Controller.PreemptionCooldown)
	}
	if o.RenewDeadline >= o.LeaseDuration {
		return fmt.Errorf("--leader-elect-renew-deadline (%s) must be less than --leader-elect-lease-duration (%s)", o.RenewDeadline, o.LeaseDuration)
	}
	// A leader that cannot renew stops admitting within the renew deadline; another
	// takes over after the lease duration. An ungate it sent must have timed out by
	// then, or it could land after the new leader's catch-up read.
	if o.LeaderElect && o.Controller.UngateTimeout >= o.LeaseDuration-o.RenewDeadline {
		return fmt.Errorf("--ungate-timeout (%s) must be less than --leader-elect-lease-duration minus --leader-elect-renew-deadline (%s), so that no ungate of a leader that lost its lease is still in flight when the next one starts",
			o.Controller.UngateTimeout, o.LeaseDuration-o.RenewDeadline)
	}
	return nil
}

// managerOptions are controller-runtime's options for the manager o describes.
func (o *Options) managerOptions() ctrl.Options {
	metrics := metricsserver.Options{
		BindAddress:   o.MetricsAddr,
		SecureServing: o.MetricsSecure,
	}
	if o.MetricsSecure {
		metrics.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return ctrl.Options{
		Metrics:                       metrics,
		HealthProbeBindAddress:        o.ProbeAddr,
		PprofBindAddress:              o.PprofAddr,
		LeaderElection:                o.LeaderElect,
		LeaderElectionNamespace:       o.LeaderElectionNamespace,
		LeaderElectionID:              o.LeaderElectionID,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &o.LeaseDuration,
		RenewDeadline:                 &o.RenewDeadline,
		RetryPeriod:                   &o.RetryPeriod,
	}
}

// Run starts the manager and blocks until ctx is done.
func Run(ctx context.Context, o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	log := ctrl.Log.WithName("setup")
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = float32(o.QPS), o.Burst

	if err := version.Register(crmetrics.Registry); err != nil {
		return err
	}
	o.Controller.Registerer = crmetrics.Registry
	q, mgr, err := controller.NewManager(cfg, o.Controller, o.managerOptions())
	if err != nil {
		return err
	}
	if err := addVisibility(mgr, cfg, q, o); err != nil {
		return fmt.Errorf("setting up the visibility API: %w", err)
	}
	if o.Visibility.APIService != "" {
		o.Certs.APIServices = append(o.Certs.APIServices, o.Visibility.APIService)
	}
	if err := addCertRotation(mgr, o.Certs); err != nil {
		return err
	}
	log.Info("Starting manager", "leaderElect", o.LeaderElect, "workers", o.Controller.Workers, "qps", o.QPS, "burst", o.Burst)
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "Manager stopped")
		return err
	}
	return nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
