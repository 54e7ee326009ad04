//go:build e2e

package e2e

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
)

// hoursNS is the namespace of the hour budget the failover test counts in.
const hoursNS = "hours"

// hourUsageWrite is the release's manager.usageWriteInterval in the failover test.
const hourUsageWrite = 2 * time.Second

// hourPods are the failover test's running pods: pod kept runs on through both
// failovers; pods first and second each end (are deleted) while no manager leads.
type hourPods struct {
	kept              int            // CPUs of pod kept
	ends              map[string]int // CPUs of the pods that end
	running           int            // CPUs running now
	ended             int            // CPUs of the pod that ended last
	written           v1alpha1.UsageStatus
	endedAt, killedAt time.Time
}

// startHourBudget creates Budget hours/cpu-hours (a Month of 1000 CPU-hours, an hour
// of maximum runtime by default) and two pods in it, and waits until the leading
// manager has written what they used into status.usage.
func startHourBudget(t *testing.T, e env) *hourPods {
	t.Helper()
	ctx := t.Context()
	fatalIf(t, e.c.Create(ctx, enabledNamespace(hoursNS)), "creating namespace "+hoursNS)
	b := budget(hoursNS, "cpu-hours", v1alpha1.StateOpen, corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("100")})
	b.Spec.UsageLimits = &v1alpha1.UsageLimits{
		Hours:             corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("1000")},
		Period:            v1alpha1.PeriodMonth,
		DefaultMaxRuntime: &metav1.Duration{Duration: time.Hour},
	}
	fatalIf(t, e.c.Create(ctx, b), "creating Budget hours/cpu-hours")
	h := &hourPods{kept: 40, ends: map[string]int{"first": 20, "second": 10}, running: 70}
	for name, cpu := range map[string]int{"kept": h.kept, "first": h.ends["first"], "second": h.ends["second"]} {
		pod := podtest.New(name).NS(hoursNS).Req(fmt.Sprintf("cpu=%d", cpu)).Obj()
		fatalIf(t, e.c.Create(ctx, pod), "creating pod "+name)
	}
	waitFor(t, "the pods admitted and their use written", time.Minute, func() (bool, string) {
		u := hourUsage(t, e)
		if u == nil {
			return false, "no status.usage yet"
		}
		used := u.Used[corev1.ResourceRequestsCPU]
		return used.AsApproximateFloat64() > 0.01, fmt.Sprintf("used %s", used.String())
	})
	return h
}

func hourUsage(t *testing.T, e env) *v1alpha1.UsageStatus {
	t.Helper()
	var b v1alpha1.Budget
	fatalIf(t, e.c.Get(t.Context(), client.ObjectKey{Namespace: hoursNS, Name: "cpu-hours"}, &b), "reading Budget hours/cpu-hours")
	return b.Status.Usage
}

// killed notes the SIGKILL of the leader: what the status held then is the last
// write a restart can read. Pod name runs on for 5 s, and is deleted before another
// manager leads: what it used after that write is what the bound allows to be lost.
func (h *hourPods) killed(t *testing.T, e env, name string) {
	t.Helper()
	h.killedAt = time.Now()
	h.written = *hourUsage(t, e)
	time.Sleep(5 * time.Second)
	fatalIf(t, e.c.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: hoursNS, Name: name}},
		&client.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}), "deleting pod "+name)
	h.endedAt = time.Now()
	h.ended = h.ends[name]
	h.running -= h.ended
}

// checkAfterFailover waits for the new leader's first write and checks docs/budgets.md's
// bound: the pods still running, which ran all along, are counted from the last write
// to the new one's asOf (nothing lost, nothing twice); of the pod that ended, only
// what it used after the last write may be lost, at most (usageWriteInterval + the
// time no manager led) × its charge.
func (h *hourPods) checkAfterFailover(t *testing.T, e env, how string) {
	t.Helper()
	var after *v1alpha1.UsageStatus
	waitFor(t, "the new leader to write the hour budget's status", time.Minute, func() (bool, string) {
		after = hourUsage(t, e)
		return after != nil && after.AsOf.After(h.endedAt), fmt.Sprintf("asOf %v", after.AsOf)
	})
	cpuHours := func(l corev1.ResourceList) float64 {
		q := l[corev1.ResourceRequestsCPU]
		return q.AsApproximateFloat64()
	}
	since := after.AsOf.Sub(h.written.AsOf.Time).Hours()
	least := cpuHours(h.written.Used) + float64(h.running)*since
	lost := float64(h.ended) * h.endedAt.Sub(h.written.AsOf.Time).Hours()
	got := cpuHours(after.Used)
	const rounding = 0.002 // each write rounds up to the milli-hour
	if got < least-rounding || got > least+lost+rounding {
		t.Errorf("used after the failover %.4f CPU-hours, want %.4f to %.4f: written %v at %v, the new leader's asOf %v",
			got, least, least+lost, h.written.Used, h.written.AsOf, after.AsOf)
	}
	// The bound holds because writes keep to the interval: the last one before the
	// kill is at most usageWriteInterval old (and a second for the patch to land).
	if age := h.killedAt.Sub(h.written.AsOf.Time); age > hourUsageWrite+time.Second {
		t.Errorf("the last write before the kill was %v old, more than the usageWriteInterval %v", age, hourUsageWrite)
	}
	t.Logf("%s: used %.4f CPU-hours, of which %.4f for the %d CPUs still running across the %v between the two writes; the pod that ended lost %.4f of the %.4f it used after the last write",
		how, got, float64(h.running)*since, h.running, time.Duration(since*float64(time.Hour)).Round(time.Millisecond), max(least+lost-got, 0), lost)
	if r := cpuHours(after.Reserved); r <= 0 || r > float64(h.running) {
		t.Errorf("reserved after the failover %.4f CPU-hours, want what is left of the running pods' hour of %d CPUs", r, h.running)
	}
}
