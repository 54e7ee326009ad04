package app

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// visibilityPageSize is the test server's page size, smaller than the plugin asks
// for, so that every queue of more than two pods takes several pages to read.
const visibilityPageSize = 2

// queuesEnv is the world's env with queues read through the plugin's real
// visibility client from a test server that answers the visibility API's paths from
// the world's core: pages of visibilityPageSize, 403 for the budgets in forbidden (as
// the API server answers a user without get on their pendingpods), 404 for a budget
// the core does not hold. c, when set, replaces the world's API client.
func (w *world) queuesEnv(t *testing.T, c client.WithWatch, forbidden ...quota.BudgetKey) *env {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		key, ok := budgetOfPath(r.URL.Path)
		queues := map[quota.BudgetKey]quota.BudgetQueue{}
		for _, b := range w.core.Reader().Snapshot().Budgets {
			queues[b.Budget] = b
		}
		bq, held := queues[key]
		switch {
		case !ok:
			writeAPIStatus(rw, apierrors.NewNotFound(schema.GroupResource{Group: visv1.GroupName}, r.URL.Path))
			return
		case slices.Contains(forbidden, key):
			resource := "budgets"
			if key.IsCluster() {
				resource = "clusterbudgets"
			}
			writeAPIStatus(rw, apierrors.NewForbidden(schema.GroupResource{Group: visv1.GroupName, Resource: resource}, key.Name,
				fmt.Errorf("User \"tenant\" cannot get resource \"%s/pendingpods\" in API group \"%s\"", resource, visv1.GroupName)))
			return
		case !held:
			writeAPIStatus(rw, apierrors.NewNotFound(schema.GroupResource{Group: "quotagate.io", Resource: "budgets"}, key.Name))
			return
		}
		offset, _ := strconv.Atoi(r.URL.Query().Get("offset"))
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		list := pendingPodList(bq, now)
		end := min(offset+min(limit, visibilityPageSize), len(list.Items))
		offset = min(offset, end)
		list.Items, list.Offset = list.Items[offset:end], int64(offset)
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(list)
	}))
	t.Cleanup(srv.Close)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	e := w.env(failingSource{})
	e.queues = func() (queueSource, error) { return visibilityQueues(cs.CoreV1().RESTClient()), nil }
	if c != nil {
		e.client = func() (client.WithWatch, error) { return c, nil }
	}
	return e
}

// budgetOfPath reads the budget of a pendingpods path.
func budgetOfPath(path string) (quota.BudgetKey, bool) {
	parts := strings.Split(strings.TrimPrefix(path, "/apis/"+visv1.GroupName+"/v1alpha1/"), "/")
	switch {
	case len(parts) == 5 && parts[0] == "namespaces" && parts[2] == "budgets" && parts[4] == "pendingpods":
		return quota.BudgetKey{Namespace: parts[1], Name: parts[3]}, true
	case len(parts) == 3 && parts[0] == "clusterbudgets" && parts[2] == "pendingpods":
		return quota.BudgetKey{Name: parts[1]}, true
	}
	return quota.BudgetKey{}, false
}

func writeAPIStatus(rw http.ResponseWriter, err *apierrors.StatusError) {
	st := err.ErrStatus
	st.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(int(st.Code))
	_ = json.NewEncoder(rw).Encode(&st)
}
