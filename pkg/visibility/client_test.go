package visibility

import (
	"net/http/httptest"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/quotagate/quotagate/pkg/quota"
)

// TestClientReadsWhatTheHandlerServes reads through Client what NewHandler serves: a
// page of a Budget's and of a ClusterBudget's queue, a pod's places, and the API's own
// NotFound for a budget the core does not hold, so a caller can tell it from a refusal.
func TestClientReadsWhatTheHandlerServes(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	gpu, org := quota.BudgetKey{Namespace: "team-a", Name: "gpu"}, quota.BudgetKey{Name: "org"}
	queues := fakeQueues{created: created, waits: podWaits(created), n: map[quota.BudgetKey]int{gpu: 5, org: 3}}
	srv := httptest.NewServer(NewHandler(queues, clocktesting.NewFakePassiveClock(created.Add(time.Minute))))
	t.Cleanup(srv.Close)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(cs.CoreV1().RESTClient())

	page, err := c.PendingPods(t.Context(), gpu, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if page.BudgetKind != "Budget" || page.Namespace != "team-a" || page.Name != "gpu" || page.Total != 5 || page.Offset != 1 || len(page.Items) != 2 {
		t.Errorf("page of team-a/gpu from offset 1, limit 2: got kind %s %s/%s total %d offset %d and %d items",
			page.BudgetKind, page.Namespace, page.Name, page.Total, page.Offset, len(page.Items))
	}
	whole, err := c.PendingPods(t.Context(), org, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if whole.BudgetKind != "ClusterBudget" || whole.Name != "org" || len(whole.Items) != 3 {
		t.Errorf("ClusterBudget org's queue: got kind %s name %s with %d items, want ClusterBudget org with 3", whole.BudgetKind, whole.Name, len(whole.Items))
	}

	st, err := c.PodStatus(t.Context(), "team-a", "train-0")
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "train-0" || len(st.Budgets) != 2 {
		t.Errorf("team-a/train-0: got %s in %d budgets, want train-0 in 2", st.Name, len(st.Budgets))
	}

	_, err = c.PendingPods(t.Context(), quota.BudgetKey{Namespace: "team-a", Name: "missing"}, 0, 0)
	if !apierrors.IsNotFound(err) {
		t.Errorf("a budget the core does not hold: got %v, want the API's NotFound", err)
	}
	if _, err := c.PodStatus(t.Context(), "team-a", "nobody"); !apierrors.IsNotFound(err) {
		t.Errorf("a pod the core does not hold: got %v, want the API's NotFound", err)
	}
}
