//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/test/localinstall"
	"github.com/quotagate/quotagate/test/supervise"
)

// The promise under injected faults (issue 11): used never exceeds hard through an
// admission, whatever the network does to the manager's patches and however often the
// leader dies. The manager runs as a process, under its ServiceAccount and the shipped
// RBAC, and talks to kube-apiserver through test/faultproxy. Job pods carry the gate
// in their template (no webhook needed); the shipped gate guard makes sure only the
// manager can remove it. A testbed.UsageWatcher checks the budget at every revision.
//
// Sizes are small for CI and can be raised for a soak run:
//
//	QUOTAGATE_FAULT_JOBS=80     Jobs per test (1 CPU each, 1-2 s of run time)
//	QUOTAGATE_FAULT_RATE=0.2    share of pod PATCHes faulted (every fault kind)
//	QUOTAGATE_FAULT_SEED=1      the proxies' seed
//	QUOTAGATE_FAULT_DELAY=10s   how long a delayed response is held
//	QUOTAGATE_FAILOVERS=3       leader kills in the failover test

const (
	faultBudgetCPU = "3"
	// Leader election for the failover test: short, so failovers fit in CI, and long
	// enough that a leader on a loaded 2-core machine keeps its lease.
	leaseDuration = 6 * time.Second
	renewDeadline = 4 * time.Second
	retryPeriod   = time.Second
	ungateTimeout = 1500 * time.Millisecond
)

// faultEnv is a local control plane with quotagate's CRDs, the manager's identity and
// the gate guard installed, and the manager binary built.
type faultEnv struct {
	env
	managerSA  *rest.Config
	managerBin string
	jobs       int
	rate       float64
	seed       uint64
	delay      time.Duration
	failovers  int
}

func TestUnderFaults(t *testing.T) {
	e := setUpFaults(t)
	t.Run("faulted patches", func(t *testing.T) { testFaultedPatches(t, e) })
	t.Run("failover under load", func(t *testing.T) { testFailoverUnderLoad(t, e) })
}

// faultNamespace creates an opted-in namespace with a Budget of faultBudgetCPU CPU and
// a watcher on it, and waits for its default ServiceAccount (the Job controller's pods
// are refused without it).
func (e *faultEnv) faultNamespace(t *testing.T, name string) *testbed.UsageWatcher {
	t.Helper()
	ctx := t.Context()
	fatalIf(t, e.c.Create(ctx, enabledNamespace(name)), "creating namespace")
	waitFor(t, "the default ServiceAccount of "+name, time.Minute, func() (bool, string) {
		_, err := e.cs.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	hard := corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse(faultBudgetCPU)}
	w, err := testbed.WatchUsage(ctx, e.cs, name, hard)
	fatalIf(t, err, "watching pods")
	t.Cleanup(w.Stop)
	fatalIf(t, e.c.Create(ctx, budget(name, "budget", v1alpha1.StateOpen, hard)), "creating Budget")
	return w
}

// createJobs creates e.jobs Jobs of one 1-CPU pod, each gated in its template.
func (e *faultEnv) createJobs(t *testing.T, namespace string) {
	t.Helper()
	for n := range e.jobs {
		j := job(namespace, jobSpec{name: fmt.Sprintf("job-%03d", n), cpu: "1", runFor: time.Duration(1+n%2) * time.Second})
		j.Spec.Template.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: v1alpha1.SchedulingGate}}
		fatalIf(t, e.c.Create(t.Context(), j), "creating Job "+j.Name)
	}
}

// checkBudgetHeld fails the test on any revision over the budget and on a pod never
// admitted, and reports the peak.
func (e *faultEnv) checkBudgetHeld(t *testing.T, w *testbed.UsageWatcher) {
	t.Helper()
	r := w.Report()
	for _, v := range r.Violations {
		t.Errorf("Budget of %s CPU exceeded %s", faultBudgetCPU, v)
	}
	if len(r.Admitted) != e.jobs {
		t.Errorf("%d pods seen admitted, want %d", len(r.Admitted), e.jobs)
	}
	peak := r.Peak[corev1.ResourceRequestsCPU]
	t.Logf("Peak admitted CPU %s of %s over %d watch events; %d violations", peak.String(), faultBudgetCPU, r.Events, len(r.Violations))
}

// testFaultedPatches: one manager, a share of its pod PATCHes faulted in every way the
// proxy knows. Lost and late responses must not make it admit twice into the same room.
func testFaultedPatches(t *testing.T, e *faultEnv) {
	ns := "faulted-patches"
	w := e.faultNamespace(t, ns)
	m := e.newManager(t, "manager", e.seed, "--leader-elect=false")
	e.start(t, m)
	began := time.Now()
	e.createJobs(t, ns)
	waitFor(t, "every Job to complete", jobsWait(e.jobs), func() (bool, string) {
		if err := m.proc.Err(); err != nil {
			t.Fatalf("The manager exited: %v", err)
		}
		return jobsComplete(t, e.env, ns, e.jobs)
	})
	stats := m.proxy.Stats()
	t.Logf("%d Jobs done in %v; pod PATCHes through the proxy: %s", e.jobs, time.Since(began).Round(time.Millisecond), stats)
	if e.rate > 0 && stats.Injected() == 0 {
		t.Errorf("no fault was injected: the test proved nothing")
	}
	e.checkBudgetHeld(t, w)
}

// testFailoverUnderLoad: a leader and a warm standby, each through its own proxy; the
// leader is SIGKILLed while one of its patches is in flight, several times, and
// restarted as the new standby. The new leader must count the old one's last patches.
func testFailoverUnderLoad(t *testing.T, e *faultEnv) {
	ns := "failover"
	w := e.faultNamespace(t, ns)
	args := []string{
		"--leader-elect=true", "--leader-election-namespace=" + localinstall.DefaultNamespace, "--leader-election-id=quotagate-failover",
		"--leader-elect-lease-duration=" + leaseDuration.String(), "--leader-elect-renew-deadline=" + renewDeadline.String(),
		"--leader-elect-retry-period=" + retryPeriod.String(),
		// Below the lease duration minus the renew deadline (the manager refuses more).
		"--ungate-timeout=" + ungateTimeout.String(),
	}
	managers := []*faultedManager{
		e.newManager(t, "manager-a", e.seed, args...),
		e.newManager(t, "manager-b", e.seed+1, args...),
	}
	for _, m := range managers {
		e.start(t, m)
	}
	began := time.Now()
	e.createJobs(t, ns)

	var gaps []time.Duration
	for k := range e.failovers {
		admittedBefore := len(w.Report().Admitted)
		var leader *faultedManager
		// Kill when the current leader has had time to admit, pods still wait, and a
		// patch of the leader's is in flight (only the leader patches pods).
		waitForEvery(t, fmt.Sprintf("failover %d: admissions under the current leader and a patch in flight", k+1), 3*time.Minute, time.Millisecond, func() (bool, string) {
			restartUnplanned(t, e, managers)
			r := w.Report()
			if len(r.Admitted) < admittedBefore+2 || r.Gated == 0 {
				return false, fmt.Sprintf("%d admitted (%d before), %d gated", len(r.Admitted), admittedBefore, r.Gated)
			}
			for _, m := range managers {
				if m.proxy.InFlight() > 0 {
					leader = m
					return true, ""
				}
			}
			return false, "no patch in flight"
		})
		survivor := managers[0]
		if survivor == leader {
			survivor = managers[1]
		}
		survivorPatches := survivor.proxy.Stats().Matched
		inFlight := leader.proxy.InFlight()
		killedAt := time.Now()
		leader.kill(t)

		// The gap: from the kill to the first pod the watcher sees ungated after the
		// survivor, now leading, sent its first patch (a straggler of the dead leader's
		// may be seen earlier; it does not count as a release by the new leader).
		var tookOver time.Time
		var gap time.Duration
		waitForEvery(t, fmt.Sprintf("failover %d: the survivor to lead and release a pod", k+1), 2*time.Minute, time.Millisecond, func() (bool, string) {
			if tookOver.IsZero() && survivor.proxy.Stats().Matched > survivorPatches {
				tookOver = time.Now()
			}
			if tookOver.IsZero() {
				return false, survivor.name + " has not patched a pod yet"
			}
			r := w.Report()
			for _, a := range r.Admitted {
				if a.At.After(tookOver) {
					gap = a.At.Sub(killedAt)
					return true, ""
				}
			}
			return r.Gated == 0, fmt.Sprintf("%s patches but no pod seen ungated since; %d gated", survivor.name, r.Gated)
		})
		if gap == 0 {
			t.Fatalf("Failover %d: no pod left to release; raise QUOTAGATE_FAULT_JOBS", k+1)
		}
		gaps = append(gaps, gap)
		// Only now: a manager restarted at once may win the lease itself.
		e.start(t, leader) // the new standby
		t.Logf("Failover %d: killed %s with %d patches in flight; %s patched %v after the kill; next pod released %v after the kill",
			k+1, leader.name, inFlight, survivor.name, tookOver.Sub(killedAt).Round(time.Millisecond), gap.Round(time.Millisecond))
	}

	waitFor(t, "every Job to complete", jobsWait(e.jobs)+time.Duration(e.failovers)*leaseDuration, func() (bool, string) {
		restartUnplanned(t, e, managers)
		return jobsComplete(t, e.env, ns, e.jobs)
	})
	t.Logf("%d Jobs done in %v across %d failovers; release gaps %v (lease %v, renew %v, retry %v)",
		e.jobs, time.Since(began).Round(time.Millisecond), len(gaps), gaps, leaseDuration, renewDeadline, retryPeriod)
	for _, m := range managers {
		t.Logf("%s's pod PATCHes: %s", m.name, m.proxy.Stats())
	}
	e.checkBudgetHeld(t, w)
}

// restartUnplanned restarts a manager that exited although nobody killed it. A leader
// that cannot renew its lease in time exits by design (another replica takes over), and
// on a loaded machine that can happen; any other exit fails the test.
func restartUnplanned(t *testing.T, e *faultEnv, managers []*faultedManager) {
	t.Helper()
	for _, m := range managers {
		err := m.proc.Err()
		if err == nil {
			continue
		}
		logTail := supervise.TailFile(m.logPath, 20)
		if !strings.Contains(logTail, "leader election lost") {
			t.Fatalf("%s exited: %v", m.name, err)
		}
		t.Logf("%s lost its lease and exited; restarting it", m.name)
		_ = m.proc.Stop(0)
		e.start(t, m)
	}
}

// jobsWait bounds how long n Jobs of 1-2 s may take through a 3-CPU budget, faults
// included, on a loaded machine.
func jobsWait(n int) time.Duration { return 2*time.Minute + time.Duration(n)*3*time.Second }

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q is not a non-negative integer", name, v)
	}
	return n
}

func envFloat(t *testing.T, name string, def float64) float64 {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f > 1 {
		t.Fatalf("%s=%q is not a share between 0 and 1", name, v)
	}
	return f
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q is not a positive duration", name, v)
	}
	return d
}
