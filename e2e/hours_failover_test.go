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

// hourPods are the failover test's running pods: kept runs on through the failover,
// ended is deleted while no manager leads.
type hourPods struct {
	kept, ended       int // CPUs
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
	h := &hourPods{kept: 40, ended: 20}
	for name, cpu := range map[string]int{"kept": h.kept, "ended": h.ended} {
		pod := podtest.New(name).NS(hoursNS).Req(fmt.Sprintf("cpu=%d", cpu)).Obj()
		fatalIf(t, e.c.Create(ctx, pod), "creating pod "+name)
	}
	waitFor(t, "both pods admitted and their use written", time.Minute, func() (bool, string) {
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
// write a restart can read. The pod named ended is then deleted, so no manager sees it
// run after that write.
func (h *hourPods) killed(t *testing.T, e env) {
	t.Helper()
	h.killedAt = time.Now()
	h.written = *hourUsage(t, e)
	fatalIf(t, e.c.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: hoursNS, Name: "ended"}},
		&client.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}), "deleting pod ended")
	h.endedAt = time.Now()
}

// checkAfterFailover waits for the new leader's first write and checks docs/budgets.md's
// bound: pod kept, which ran all along, is counted from the last write to the new
// one's asOf (nothing lost, nothing twice); of pod ended, only what it used after
// the last write may be lost, at most (usageWriteInterval + the time no manager led) ×
// its charge.
func (h *hourPods) checkAfterFailover(t *testing.T, e env) {
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
	least := cpuHours(h.written.Used) + float64(h.kept)*since
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
	t.Logf("After SIGKILL of the leader: used %.4f CPU-hours, of which %.4f for pod kept across the %v between the two writes; pod ended lost %.4f (at most %.4f)",
		got, float64(h.kept)*since, time.Duration(since*float64(time.Hour)).Round(time.Millisecond), least+lost-got, lost)
	if r := cpuHours(after.Reserved); r <= 0 || r > float64(h.kept) {
		t.Errorf("reserved after the failover %.4f CPU-hours, want what is left of pod kept's hour of %d CPUs", r, h.kept)
	}
}
