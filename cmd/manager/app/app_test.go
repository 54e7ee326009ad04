package app

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/quotagate/quotagate/pkg/visibility"
)

func TestValidate(t *testing.T) {
	tests := map[string]struct {
		mutate  func(*Options)
		wantErr string
	}{
		"defaults":                         {mutate: func(*Options) {}},
		"defaults without leader election": {mutate: func(o *Options) { o.LeaderElect = false }},
		"renew deadline not below the lease": {
			mutate:  func(o *Options) { o.RenewDeadline = o.LeaseDuration },
			wantErr: "--leader-elect-renew-deadline (15s) must be less than --leader-elect-lease-duration (15s)",
		},
		"an ungate could outlive the lease gap": {
			mutate: func(o *Options) {
				o.LeaderElect = true
				o.Controller.UngateTimeout = 5 * time.Second
			},
			wantErr: "--ungate-timeout (5s) must be less than --leader-elect-lease-duration minus --leader-elect-renew-deadline (5s)",
		},
		"negative Waiting events": {
			mutate:  func(o *Options) { o.Controller.WaitingEventsPerBudget = -1 },
			wantErr: "--waiting-events-per-budget (-1) must be 0 (no Waiting events) or more",
		},
		"a negative estimate interval": {
			mutate:  func(o *Options) { o.Controller.EstimateInterval = -time.Second },
			wantErr: "--estimate-interval (-1s) must be 0 (no estimates) or more",
		},
		"estimates off": {mutate: func(o *Options) { o.Controller.EstimateInterval = 0 }},
		"a negative estimate bound": {
			mutate:  func(o *Options) { o.Controller.EstimateMaxPods = -1 },
			wantErr: "--estimate-max-pods (-1) must be 0 (no bound) or more",
		},
		"no time for a pod simulation": {
			mutate:  func(o *Options) { o.Visibility.Simulations.Timeout = 0 },
			wantErr: "--simulation-timeout (0s) must be more than 0",
		},
		"no pod simulation at once": {
			mutate:  func(o *Options) { o.Visibility.Simulations.Concurrency = 0 },
			wantErr: "--simulation-concurrency (0) must be more than 0",
		},
		"a negative share of a CPU for pod simulations": {
			mutate:  func(o *Options) { o.Controller.SimulationCPU = -0.5 },
			wantErr: "--simulation-cpu (-0.5) must be 0 (no bound) or more",
		},
		"pod simulations with no CPU bound": {mutate: func(o *Options) { o.Controller.SimulationCPU = 0 }},
		"a negative preemption cooldown": {
			mutate:  func(o *Options) { o.Controller.PreemptionCooldown = -time.Second },
			wantErr: "--preemption-cooldown (-1s) must be 0 (evict at once) or more",
		},
		"a preemption backoff below its cooldown": {
			mutate:  func(o *Options) { o.Controller.PreemptionMaxBackoff = 10 * time.Second },
			wantErr: "--preemption-max-backoff (10s) must not be below --preemption-cooldown (30s)",
		},
		"no preemption cooldown, and no backoff": {
			mutate: func(o *Options) { o.Controller.PreemptionCooldown, o.Controller.PreemptionMaxBackoff = 0, 0 },
		},
		"a long ungate timeout is fine without leader election": {
			mutate: func(o *Options) { o.LeaderElect, o.Controller.UngateTimeout = false, time.Minute },
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := DefaultOptions()
			tc.mutate(&o)
			err := o.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Validate() = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// The profiling endpoints are off unless asked for: --pprof-bind-address defaults to 0,
// and the address given reaches controller-runtime's manager.
func TestPprofEndpointsAreOptIn(t *testing.T) {
	f := NewCommand().Flags().Lookup("pprof-bind-address")
	if f == nil {
		t.Fatal("the manager has no --pprof-bind-address flag")
	}
	if f.DefValue != "0" {
		t.Errorf("--pprof-bind-address defaults to %q, want 0 (disabled)", f.DefValue)
	}
	o := DefaultOptions()
	if got := o.managerOptions().PprofBindAddress; got != "0" {
		t.Errorf("by default the manager's pprof address is %q, want 0", got)
	}
	o.PprofAddr = "127.0.0.1:6060"
	if got := o.managerOptions().PprofBindAddress; got != "127.0.0.1:6060" {
		t.Errorf("with --pprof-bind-address=127.0.0.1:6060 the manager's pprof address is %q", got)
	}
}

// The flags that bound pod simulations reach the options the visibility server and the
// controller are built with, their defaults the documented ones.
func TestSimulationFlags(t *testing.T) {
	defaults := map[string]string{
		"simulation-max-body-bytes": "524288",
		"simulation-max-pods":       "1000",
		"simulation-max-containers": "10000",
		"simulation-timeout":        "20s",
		"simulation-concurrency":    "2",
		"simulation-cpu":            "0.5",
	}
	cmd := NewCommand()
	for name, want := range defaults {
		f := cmd.Flags().Lookup(name)
		if f == nil {
			t.Errorf("the manager has no --%s flag", name)
			continue
		}
		if f.DefValue != want {
			t.Errorf("--%s defaults to %s, want %s", name, f.DefValue, want)
		}
	}
	o := DefaultOptions()
	cmd = &cobra.Command{}
	addSimulationFlags(cmd.Flags(), &o.Visibility.Simulations, &o.Controller)
	if err := cmd.Flags().Parse([]string{"--simulation-max-body-bytes=1024", "--simulation-max-pods=5", "--simulation-max-containers=50",
		"--simulation-timeout=3s", "--simulation-concurrency=4", "--simulation-cpu=1.5"}); err != nil {
		t.Fatal(err)
	}
	want := visibility.SimulationLimits{MaxBodyBytes: 1024, MaxPods: 5, MaxContainers: 50, Timeout: 3 * time.Second, Concurrency: 4}
	if diff := cmp.Diff(want, o.Visibility.Simulations); diff != "" {
		t.Errorf("the visibility server's limits (-want +got):\n%s", diff)
	}
	if o.Controller.SimulationCPU != 1.5 {
		t.Errorf("the controller's share of a CPU for simulations is %g, want 1.5", o.Controller.SimulationCPU)
	}
}
