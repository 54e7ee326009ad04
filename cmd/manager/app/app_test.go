package app

import (
	"strings"
	"testing"
	"time"
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
