package visibility

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
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

// TestClientRetriesABusySimulation: a what-if answered 429 (its namespace's last one
// still runs) is sent again after its Retry-After by the client itself, as client-go
// does for kube-apiserver's own 429s, and is answered once the slot is free: the plugin
// waits a moment instead of failing.
func TestClientRetriesABusySimulation(t *testing.T) {
	held := &heldOnce{namespace: "team-a", next: stubSimulator{}, started: make(chan struct{}), ended: make(chan error, 1)}
	h := NewHandler(fakeQueues{}, clocktesting.NewFakePassiveClock(time.Now()), WithSimulator(held))
	var mu sync.Mutex
	var codes []int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		mu.Lock()
		codes = append(codes, rec.Code)
		mu.Unlock()
		maps.Copy(w.Header(), rec.Header())
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(srv.Close)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(cs.CoreV1().RESTClient())

	first, leave := context.WithCancel(t.Context())
	running := post(first, h, "team-a")
	<-held.started
	answered := make(chan error, 1)
	go func() {
		sim := &visv1.PodSimulation{Spec: visv1.PodSimulationSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}}}
		_, err := c.Simulate(t.Context(), "team-a", sim)
		answered <- err
	}()
	err = wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(codes, http.StatusTooManyRequests), nil
	})
	if err != nil {
		t.Fatalf("the second what-if was never answered 429 while the first ran: %v", err)
	}
	leave()
	<-running
	if err := <-answered; err != nil {
		t.Errorf("the client's what-if, once the slot was free: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []int{http.StatusTooManyRequests, http.StatusCreated}; !slices.Equal(codes[len(codes)-2:], want) {
		t.Errorf("the server answered %v, want the client's what-if answered %v", codes, want)
	}
}
