package controller_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/pkg/quota/controller"
)

// shiftedClock is the real clock moved by: the manager lives at another time of day,
// its timers real.
type shiftedClock struct {
	clock.RealClock
	by time.Duration
}

func (c shiftedClock) Now() time.Time                  { return time.Now().Add(c.by) }
func (c shiftedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// TestHourBudgetRunsOutAndResets: a Budget of three CPU-minutes a day, pods of one CPU
// for at most a minute. Three are admitted; the fourth is held with its reason in
// hours; when the day ends (the manager's clock runs 75 s before a UTC midnight) it is
// admitted, and the status counts the new day.
func TestHourBudgetRunsOutAndResets(t *testing.T) {
	ns := newNamespace(t, true)
	now := time.Now()
	midnight := now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	b := budget(ns, "b", cpu("10"), "")
	b.Spec.UsageLimits = &v1alpha1.UsageLimits{Hours: cpu("50m"), Period: v1alpha1.PeriodDay,
		DefaultMaxRuntime: &metav1.Duration{Duration: time.Minute}}
	mustCreate(t, b)
	startManager(t, func(o *controller.Options) { o.Clock = shiftedClock{by: midnight.Add(-75 * time.Second).Sub(now)} }, false)
	for i := range 3 {
		mustCreate(t, gatedPod(ns, fmt.Sprintf("p%d", i), "1"))
	}
	testbed.Poll(t, time.Minute, "three pods admitted", func(context.Context) (bool, error) {
		return !isGated(t, ns, "p0") && !isGated(t, ns, "p1") && !isGated(t, ns, "p2"), nil
	})
	mustCreate(t, gatedPod(ns, "late", "1"))
	ev := waitForWaitingEvent(t, ns, "late", "UsageExhausted")
	yesterday := midnight.Add(-time.Hour).Format(time.DateOnly)
	if want := "requests.cpu: 0.05 of 0.05 resource-hours used or reserved in " + yesterday; !strings.Contains(ev.Message, want) {
		t.Errorf("late waits with %q, want it to say %q", ev.Message, want)
	}
	st := getStatus(t, ns, "b")
	if u := st.Usage; u == nil || u.Period != yesterday || u.ResetAt == nil || !u.ResetAt.Time.Equal(midnight) {
		t.Fatalf("status.usage %+v, want the period %s, reset at %v", u, yesterday, midnight)
	}
	testbed.Poll(t, 3*time.Minute, "late admitted on the new day", func(context.Context) (bool, error) {
		u := getStatus(t, ns, "b").Usage
		return !isGated(t, ns, "late") && u != nil && u.Period == midnight.Format(time.DateOnly), nil
	})
}

// TestHourUsageSurvivesRestart: the manager writes status.usage every second; stopped
// and started again after a pause, the new one counts from what was written: the pods
// that ran on meanwhile are counted from the write, so used afterwards is what was
// written plus what they used since, neither less (nothing lost) nor more (nothing
// counted twice).
func TestHourUsageSurvivesRestart(t *testing.T) {
	ns := newNamespace(t, true)
	b := budget(ns, "b", cpu("200"), "")
	b.Spec.UsageLimits = &v1alpha1.UsageLimits{Hours: cpu("1000"), Period: v1alpha1.PeriodMonth,
		DefaultMaxRuntime: &metav1.Duration{Duration: time.Hour}}
	mustCreate(t, b)
	fast := func(o *controller.Options) { o.UsageWriteInterval = time.Second }
	first := startManager(t, fast, false)
	for i := range 2 {
		mustCreate(t, gatedPod(ns, fmt.Sprintf("p%d", i), "60"))
	}
	testbed.Poll(t, time.Minute, "both admitted and counted", func(context.Context) (bool, error) {
		u := getStatus(t, ns, "b").Usage
		return !isGated(t, ns, "p0") && !isGated(t, ns, "p1") && u != nil && reqCPU(u.Used) > 0.05, nil
	})
	first.stop(t)
	written := getStatus(t, ns, "b").Usage
	time.Sleep(5 * time.Second) // the pods run on while no manager counts
	startManager(t, fast, false)
	var after *v1alpha1.UsageStatus
	testbed.Poll(t, time.Minute, "a write by the new manager", func(context.Context) (bool, error) {
		after = getStatus(t, ns, "b").Usage
		return after != nil && after.AsOf.Sub(written.AsOf.Time) > 5*time.Second, nil
	})
	// 120 CPUs from the last write to the new one's asOf.
	want := reqCPU(written.Used) + 120*after.AsOf.Sub(written.AsOf.Time).Hours()
	got := reqCPU(after.Used)
	if got < want-0.002 || got > want+0.002 {
		t.Fatalf("used after the restart %.4f CPU-hours, want %.4f (written %v at %v, asOf now %v)", got, want, written.Used, written.AsOf, after.AsOf)
	}
	if r := reqCPU(after.Reserved); r <= 0 || r > 120 {
		t.Errorf("reserved after the restart %.4f CPU-hours, want what is left of two hours of 60 CPUs", r)
	}
}

// reqCPU is l's requests.cpu as a number (resource-hours in status.usage).
func reqCPU(l corev1.ResourceList) float64 {
	q := l[corev1.ResourceRequestsCPU]
	return q.AsApproximateFloat64()
}

// TestFairSharingMemorySurvivesRestart: a Budget under a parent with
// fairSharing.usageHalfLife shows what its pods used, decayed, in status.fairSharing,
// with the share that adds; a manager that starts takes it up, and counts the pod
// still running from the last write, so the memory after the restart is the written
// one decayed plus what the pod used since (docs/budgets.md, "Fair sharing with
// memory").
func TestFairSharingMemorySurvivesRestart(t *testing.T) {
	parent := fmt.Sprintf("org-%d", nsCounter.Add(1))
	org := clusterBudget(parent, "", cpu("100"))
	org.Spec.FairSharing = &v1alpha1.FairSharing{UsageHalfLife: &metav1.Duration{Duration: time.Hour}}
	createClusterBudgets(t, org)
	ns := newNamespace(t, true)
	a := budget(ns, "a", cpu("100"), "")
	a.Spec.Parent = parent
	mustCreate(t, a)
	fast := func(o *controller.Options) { o.UsageWriteInterval = time.Second }
	first := startManager(t, fast, false)
	mustCreate(t, gatedPod(ns, "p0", "60"))
	testbed.Poll(t, time.Minute, "the pod admitted and its use written", func(context.Context) (bool, error) {
		f := getStatus(t, ns, "a").FairSharing
		return !isGated(t, ns, "p0") && f != nil && reqCPU(f.Used) > 0.02 && f.UsageShare > 0, nil
	})
	first.stop(t)
	written := getStatus(t, ns, "a").FairSharing
	time.Sleep(3 * time.Second) // the pod runs on while no manager counts
	startManager(t, fast, false)
	var after *v1alpha1.FairSharingStatus
	testbed.Poll(t, time.Minute, "a write by the new manager", func(context.Context) (bool, error) {
		after = getStatus(t, ns, "a").FairSharing
		return after != nil && after.AsOf.Sub(written.AsOf.Time) > 3*time.Second, nil
	})
	// Decayed with a half-life of an hour: what was written, decayed over the gap, plus
	// 60 CPUs over it, decayed (∫ 60·2^(-s/h) ds over the gap).
	gap := after.AsOf.Sub(written.AsOf.Time).Hours()
	want := reqCPU(written.Used)*math.Exp2(-gap) + 60/math.Ln2*(1-math.Exp2(-gap))
	if got := reqCPU(after.Used); got < want-0.002 || got > want+0.002 {
		t.Fatalf("decayed use after the restart %.4f CPU-hours, want %.4f (written %v at %v, asOf now %v)", got, want, written.Used, written.AsOf, after.AsOf)
	}
	// The share: used over the family's 100 CPUs × 1h/ln 2, in thousandths.
	if share, want := after.UsageShare, int64(math.Round(reqCPU(after.Used)/(100/math.Ln2)*1000)); share < want-1 || share > want+1 {
		t.Errorf("usageShare %d, want %d thousandths", share, want)
	}
}
