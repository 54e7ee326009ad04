package charts_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// manager.priorityCeiling reaches the manager as --priority-ceiling, Kubernetes'
// highest user-definable priority by default, and must be an int32.
func TestPriorityCeiling(t *testing.T) {
	for name, tc := range map[string]struct {
		values map[string]any
		want   string
	}{
		"default": {want: "--priority-ceiling=1000000000"},
		"lower":   {values: map[string]any{"manager": map[string]any{"priorityCeiling": 100}}, want: "--priority-ceiling=100"},
	} {
		t.Run(name, func(t *testing.T) {
			m := mustInstall(t, defaultRelease, defaultNamespace, tc.values)
			if args := podSpecOf(t, m, "Deployment", "quotagate-manager").Containers[0].Args; !slices.Contains(args, tc.want) {
				t.Errorf("the manager's args %v lack %s", args, tc.want)
			}
		})
	}
	schemaError(t, map[string]any{"manager": map[string]any{"priorityCeiling": 3000000000}}, "/manager/priorityCeiling")
}

// manager.estimates reaches the manager as --estimate-interval and --estimate-max-pods,
// their defaults by default; "0s" and 0 (estimates off, no bound) are accepted, a
// duration without a unit or a negative bound is not.
func TestEstimates(t *testing.T) {
	for name, tc := range map[string]struct {
		estimates map[string]any
		want      []string
	}{
		"default": {want: []string{"--estimate-interval=5s", "--estimate-max-pods=20000"}},
		"slower, bounded lower": {
			estimates: map[string]any{"interval": "30s", "maxPods": 5000},
			want:      []string{"--estimate-interval=30s", "--estimate-max-pods=5000"},
		},
		"off, unbounded": {
			estimates: map[string]any{"interval": "0s", "maxPods": 0},
			want:      []string{"--estimate-interval=0s", "--estimate-max-pods=0"},
		},
		"a million, not 1e+06": {
			estimates: map[string]any{"maxPods": 1000000},
			want:      []string{"--estimate-interval=5s", "--estimate-max-pods=1000000"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			var values map[string]any
			if tc.estimates != nil {
				values = map[string]any{"manager": map[string]any{"estimates": tc.estimates}}
			}
			m := mustInstall(t, defaultRelease, defaultNamespace, values)
			args := podSpecOf(t, m, "Deployment", "quotagate-manager").Containers[0].Args
			for _, want := range tc.want {
				if !slices.Contains(args, want) {
					t.Errorf("the manager's args %v lack %s", args, want)
				}
			}
		})
	}
	schemaError(t, map[string]any{"manager": map[string]any{"estimates": map[string]any{"interval": "5"}}}, "/manager/estimates/interval")
	schemaError(t, map[string]any{"manager": map[string]any{"estimates": map[string]any{"maxPods": -1}}}, "/manager/estimates/maxPods")
	schemaError(t, map[string]any{"manager": map[string]any{"estimates": map[string]any{"intervals": "5s"}}}, "/manager/estimates")
}

// visibility.simulations reaches the manager as the --simulation-* flags that bound each
// what-if, their defaults by default, and not at all without the visibility API; the
// schema refuses a bound of 0, a duration without a unit, a negative share of a CPU and
// a key it does not know.
func TestSimulationLimits(t *testing.T) {
	defaults := []string{"--simulation-max-body-bytes=524288", "--simulation-max-pods=1000", "--simulation-max-containers=10000",
		"--simulation-timeout=20s", "--simulation-concurrency=2", "--simulation-cpu=0.5"}
	for name, tc := range map[string]struct {
		values map[string]any
		want   []string
	}{
		"default": {want: defaults},
		"tighter": {
			values: map[string]any{"visibility": map[string]any{"simulations": map[string]any{
				"maxBodyBytes": 65536, "maxPods": 100, "maxContainers": 400, "timeout": "5s", "concurrency": 1, "cpu": 0.25,
			}}},
			want: []string{"--simulation-max-body-bytes=65536", "--simulation-max-pods=100", "--simulation-max-containers=400",
				"--simulation-timeout=5s", "--simulation-concurrency=1", "--simulation-cpu=0.25"},
		},
		"larger, not in e+ notation": {
			values: map[string]any{"visibility": map[string]any{"simulations": map[string]any{"maxBodyBytes": 2097152, "maxContainers": 1000000, "cpu": 2}}},
			want: []string{"--simulation-max-body-bytes=2097152", "--simulation-max-pods=1000", "--simulation-max-containers=1000000",
				"--simulation-timeout=20s", "--simulation-concurrency=2", "--simulation-cpu=2"},
		},
		"no CPU bound": {
			values: map[string]any{"visibility": map[string]any{"simulations": map[string]any{"cpu": 0}}},
			want:   append(slices.Clone(defaults[:5]), "--simulation-cpu=0"),
		},
	} {
		t.Run(name, func(t *testing.T) {
			m := mustInstall(t, defaultRelease, defaultNamespace, tc.values)
			args := podSpecOf(t, m, "Deployment", "quotagate-manager").Containers[0].Args
			var got []string
			for _, a := range args {
				if strings.HasPrefix(a, "--simulation-") {
					got = append(got, a)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("the manager's --simulation-* args (-want +got):\n%s", diff)
			}
		})
	}
	m := mustInstall(t, defaultRelease, defaultNamespace, map[string]any{"visibility": map[string]any{"enabled": false}})
	for _, a := range podSpecOf(t, m, "Deployment", "quotagate-manager").Containers[0].Args {
		if strings.HasPrefix(a, "--simulation-") {
			t.Errorf("without the visibility API the manager gets %s", a)
		}
	}
	simulations := func(v map[string]any) map[string]any {
		return map[string]any{"visibility": map[string]any{"simulations": v}}
	}
	schemaError(t, simulations(map[string]any{"maxPods": 0}), "/visibility/simulations/maxPods")
	schemaError(t, simulations(map[string]any{"maxBodyBytes": -1}), "/visibility/simulations/maxBodyBytes")
	schemaError(t, simulations(map[string]any{"timeout": "20"}), "/visibility/simulations/timeout")
	schemaError(t, simulations(map[string]any{"cpu": -0.5}), "/visibility/simulations/cpu")
	schemaError(t, simulations(map[string]any{"concurrency": 0}), "/visibility/simulations/concurrency")
	schemaError(t, simulations(map[string]any{"maxPod": 10}), "/visibility/simulations")
}

// manager.preemption reaches the manager as --preemption-cooldown and
// --preemption-max-backoff, 30s and 10m by default; "0s" (evict at once) is accepted, a
// duration without a unit or an unknown key is not.
func TestPreemptionCooldown(t *testing.T) {
	for name, tc := range map[string]struct {
		preemption map[string]any
		want       []string
	}{
		"default": {want: []string{"--preemption-cooldown=30s", "--preemption-max-backoff=10m"}},
		"longer, backing off further": {
			preemption: map[string]any{"cooldown": "2m", "maxBackoff": "1h"},
			want:       []string{"--preemption-cooldown=2m", "--preemption-max-backoff=1h"},
		},
		"off": {
			preemption: map[string]any{"cooldown": "0s"},
			want:       []string{"--preemption-cooldown=0s", "--preemption-max-backoff=10m"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			var values map[string]any
			if tc.preemption != nil {
				values = map[string]any{"manager": map[string]any{"preemption": tc.preemption}}
			}
			m := mustInstall(t, defaultRelease, defaultNamespace, values)
			args := podSpecOf(t, m, "Deployment", "quotagate-manager").Containers[0].Args
			for _, want := range tc.want {
				if !slices.Contains(args, want) {
					t.Errorf("the manager's args %v lack %s", args, want)
				}
			}
		})
	}
	schemaError(t, map[string]any{"manager": map[string]any{"preemption": map[string]any{"cooldown": "30"}}}, "/manager/preemption/cooldown")
	schemaError(t, map[string]any{"manager": map[string]any{"preemption": map[string]any{"maxBackoff": "-1m"}}}, "/manager/preemption/maxBackoff")
	schemaError(t, map[string]any{"manager": map[string]any{"preemption": map[string]any{"cooldowns": "30s"}}}, "/manager/preemption")
}
