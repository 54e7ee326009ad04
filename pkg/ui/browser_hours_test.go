package ui_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
)

// TestUITenantSeesHours: an admin gives Budget team-a/gpus an hour budget of 10
// CPU-hours a month, with 3.5 of them used this month in its status.usage; a tenant
// who may view team-a sees on the budget's card and on its page what was used of them
// and when the month resets. When the admin lowers the hours below what was used, the
// open page says they are exhausted until the reset.
//
// The manager runs, and writes status.usage itself from what it counts; what the admin
// writes there is what a manager that starts takes up (docs/budgets.md, "Status, and
// what survives a restart"): the status is written first, and the usageLimits are set
// on the object that holds it, so that the manager counts from 3.5 used.
func TestUITenantSeesHours(t *testing.T) {
	w := setUp(t)
	key := client.ObjectKey{Namespace: "team-a", Name: "gpus"}
	monthStart := func(at time.Time) time.Time { return time.Date(at.Year(), at.Month(), 1, 0, 0, 0, 0, time.UTC) }
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var b v1alpha1.Budget
		if err := w.admin.Get(t.Context(), key, &b); err != nil {
			return err
		}
		now := time.Now().UTC()
		b.Status.Usage = &v1alpha1.UsageStatus{Period: now.Format("2006-01"),
			PeriodStart: &metav1.Time{Time: monthStart(now)}, ResetAt: &metav1.Time{Time: monthStart(now).AddDate(0, 1, 0)},
			AsOf: metav1.NewMicroTime(now), Used: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("3.5")}}
		if err := w.admin.Status().Update(t.Context(), &b); err != nil {
			return err
		}
		// A conflict here means the manager wrote the status in between: start again.
		b.Spec.UsageLimits = &v1alpha1.UsageLimits{Period: v1alpha1.PeriodMonth,
			Hours: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("10")}}
		return w.admin.Update(t.Context(), &b)
	})
	if err != nil {
		t.Fatalf("giving Budget team-a/gpus an hour budget: %v", err)
	}
	t.Cleanup(func() { setHours(t, w, key, nil) })

	// What the manager counts from now on: the page shows its status.
	var usage *v1alpha1.UsageStatus
	testbed.Poll(t, 2*time.Minute, "the manager to write team-a/gpus's status.usage with 3.5 CPU-hours used", func(ctx context.Context) (bool, error) {
		var b v1alpha1.Budget
		if err := w.admin.Get(ctx, key, &b); err != nil {
			return false, err
		}
		usage = b.Status.Usage
		if usage == nil || usage.ResetAt == nil {
			return false, nil
		}
		used := usage.Used[corev1.ResourceRequestsCPU]
		return used.Cmp(resource.MustParse("3.5")) == 0, nil
	})
	reset := usage.ResetAt.Local().Format("2006-01-02 15:04:05")

	url := serveUI(t, w, "--as", "tenant-a", "-n", "team-a")
	ctx := tab(t, w)
	base := strings.SplitN(url, "/?", 2)[0]
	navigate(t, ctx, url)
	want := "requests.cpu: 3.5 of 10 resource-hours used in " + usage.Period + "; resets " + reset
	waitPage(t, ctx, "the hours on team-a/gpus's card", textHas("#b-team-a-gpus ul.hours", want))
	navigate(t, ctx, base+"/budgets/team-a/gpus")
	waitPage(t, ctx, "the hours on team-a/gpus's page", textHas("main", "Budget team-a/gpus", want))

	setHours(t, w, key, corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("3")})
	exhausted := "requests.cpu: 3.5 of 3 resource-hours used in " + usage.Period + "; exhausted until " + reset
	waitPage(t, ctx, "the exhausted hours on team-a/gpus's open page", textHas("main ul.hours li.exhausted", exhausted))
	navigate(t, ctx, url)
	waitPage(t, ctx, "the exhausted hours on team-a/gpus's card", textHas("#b-team-a-gpus ul.hours li.exhausted", exhausted))
}

// setHours sets the hours of the budget's usageLimits, a calendar month; nil removes
// its usageLimits.
func setHours(t *testing.T, w *world, key client.ObjectKey, hours corev1.ResourceList) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var b v1alpha1.Budget
		if err := w.admin.Get(context.Background(), key, &b); err != nil {
			return err
		}
		b.Spec.UsageLimits = nil
		if hours != nil {
			b.Spec.UsageLimits = &v1alpha1.UsageLimits{Period: v1alpha1.PeriodMonth, Hours: hours}
		}
		return w.admin.Update(context.Background(), &b)
	})
	if err != nil {
		t.Fatalf("setting the hours of %s to %v: %v", key, hours, err)
	}
}
