package ui_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// TestUITenantSeesWindows: a window an admin schedules on Budget team-a/gpus shows on
// the budget's card for a tenant who may view team-a, with when it opens, as the
// manager writes it into the budget's status; deleted, it goes from the page.
func TestUITenantSeesWindows(t *testing.T) {
	w := setUp(t)
	opens := time.Now().Add(365 * 24 * time.Hour).Truncate(time.Second)
	win := &v1alpha1.BudgetWindow{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "next-year"},
		Spec: v1alpha1.BudgetWindowSpec{BudgetName: "gpus", Start: &metav1.Time{Time: opens}, End: &metav1.Time{Time: opens.Add(24 * time.Hour)},
			Add: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("8")}}}
	if err := w.admin.Create(t.Context(), win); err != nil {
		t.Fatalf("creating BudgetWindow team-a/next-year: %v", err)
	}
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			_ = w.admin.Delete(context.Background(), win)
		}
	})
	url := serveUI(t, w, "--as", "tenant-a", "-n", "team-a")
	ctx := tab(t, w)
	base := strings.SplitN(url, "/?", 2)[0]
	navigate(t, ctx, url)
	want := "A window opens " + opens.Local().Format("2006-01-02 15:04:05") + " and changes what the budget may hold"
	waitPage(t, ctx, "the window on team-a/gpus's card", textHas("#b-team-a-gpus p.windows", want))
	navigate(t, ctx, base+"/budgets/team-a/gpus")
	waitPage(t, ctx, "the window on team-a/gpus's page", textHas("main", "Budget team-a/gpus", want))
	if err := w.admin.Delete(t.Context(), win); err != nil {
		t.Fatalf("deleting the window: %v", err)
	}
	deleted = true
	waitPage(t, ctx, "the window gone from team-a/gpus's page", `!document.querySelector("main p.windows") && document.querySelector("main").innerText.indexOf("Budget team-a/gpus") >= 0`)
}
