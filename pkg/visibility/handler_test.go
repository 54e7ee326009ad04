package visibility

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/quotagate/quotagate/api/v1alpha1"
	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/quota"
)

// fakeQueues holds n pods per budget, position k named pod-k, and pages them as the
// core; waits are the gated pods PodWaitByName finds, by namespace/name. The visibility
// API reads only those two of the read side: the embedded nil Reader panics if it
// asks anything else.
type fakeQueues struct {
	quota.Reader
	n       map[quota.BudgetKey]int
	created time.Time
	waits   map[string]quota.PodWait
}

func (f fakeQueues) PodWaitByName(namespace, name string) (quota.PodWait, bool) {
	w, ok := f.waits[namespace+"/"+name]
	return w, ok
}

func (f fakeQueues) Page(key quota.BudgetKey, offset, limit int) (quota.BudgetPage, bool) {
	n, ok := f.n[key]
	if !ok {
		return quota.BudgetPage{}, false
	}
	page := quota.BudgetPage{Budget: key, State: v1alpha1.StateOpen, Strategy: "BestEffortFIFO", Total: n}
	for k := offset + 1; k <= min(n, offset+limit); k++ {
		page.Pods = append(page.Pods, quota.QueuedPod{
			Position: k,
			Pod:      quota.PodRef{UID: types.UID(fmt.Sprintf("uid-%d", k)), Namespace: "team-a", Name: fmt.Sprintf("pod-%d", k)},
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
			Created:  f.created,
			Queue:    quota.QueueInadmissible,
			Reason:   quota.Reason{Code: "QuotaExceeded", Message: "waits for cpu"},
		})
	}
	return page, true
}

type leading bool

func (l leading) Leading() bool { return bool(l) }

func TestPendingPods(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	queues := fakeQueues{created: created, n: map[quota.BudgetKey]int{
		{Namespace: "team-a", Name: "gpu"}: 5,
		{Name: "org"}:                      3,
	}}
	h := pendingPods{queues: queues, clock: clocktesting.NewFakePassiveClock(created.Add(90 * time.Second))}
	tests := map[string]struct {
		path          string
		wantCode      int
		wantTotal     int64
		wantPositions []int64
	}{
		"a namespace's budget, default page": {
			path: "/namespaces/team-a/budgets/gpu/pendingpods", wantCode: 200, wantTotal: 5, wantPositions: []int64{1, 2, 3, 4, 5},
		},
		"a page from the middle": {
			path: "/namespaces/team-a/budgets/gpu/pendingpods?limit=2&offset=2", wantCode: 200, wantTotal: 5, wantPositions: []int64{3, 4},
		},
		"an offset past the end": {
			path: "/namespaces/team-a/budgets/gpu/pendingpods?offset=9", wantCode: 200, wantTotal: 5, wantPositions: []int64{},
		},
		"a ClusterBudget": {
			path: "/clusterbudgets/org/pendingpods?limit=1", wantCode: 200, wantTotal: 3, wantPositions: []int64{1},
		},
		"a budget the core does not hold": {path: "/namespaces/team-b/budgets/gpu/pendingpods", wantCode: 404},
		"a negative limit":                {path: "/namespaces/team-a/budgets/gpu/pendingpods?limit=-1", wantCode: 400},
		"an unknown path":                 {path: "/namespaces/team-a/budgets/gpu", wantCode: 404},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, GroupVersionPath+tc.path, nil))
			if rec.Code != tc.wantCode {
				t.Fatalf("code %d, want %d: %s", rec.Code, tc.wantCode, rec.Body)
			}
			if tc.wantCode != 200 {
				var st metav1.Status
				if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.Kind != "Status" || st.Message == "" {
					t.Fatalf("error body is not a Status with a message: %s", rec.Body)
				}
				return
			}
			var list visv1.PendingPodList
			if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
				t.Fatal(err)
			}
			got := []int64{}
			for _, p := range list.Items {
				got = append(got, p.Position)
				if p.WaitingSeconds != 90 || p.Reason == "" || p.Queue != "inadmissible" {
					t.Errorf("pod %s: waiting %ds, reason %q, queue %q", p.Name, p.WaitingSeconds, p.Reason, p.Queue)
				}
			}
			if list.Total != tc.wantTotal || list.Kind != visv1.KindPendingPodList {
				t.Errorf("total %d kind %q, want %d %q", list.Total, list.Kind, tc.wantTotal, visv1.KindPendingPodList)
			}
			if diff := cmp.Diff(tc.wantPositions, got); diff != "" {
				t.Errorf("positions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLeaderOnly(t *testing.T) {
	answered := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	forwarded := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) })
	tests := map[string]struct {
		leading   bool
		standby   http.Handler
		forwarded bool
		want      int
	}{
		"the leader answers":                         {leading: true, standby: forwarded, want: http.StatusTeapot},
		"a standby forwards":                         {standby: forwarded, want: http.StatusAccepted},
		"a standby does not forward a forwarded one": {standby: forwarded, forwarded: true, want: http.StatusServiceUnavailable},
		"a standby with nowhere to forward":          {want: http.StatusServiceUnavailable},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, GroupVersionPath+"/clusterbudgets/org/pendingpods", nil)
			if tc.forwarded {
				r.Header.Set(forwardedHeader, "1")
			}
			rec := httptest.NewRecorder()
			leaderOnly(leading(tc.leading), answered, tc.standby).ServeHTTP(rec, r)
			if rec.Code != tc.want {
				t.Errorf("code %d, want %d", rec.Code, tc.want)
			}
		})
	}
}

// fakeEstimates are the estimator's latest starts, by pod UID.
type fakeEstimates map[types.UID]estimate.Start

func (f fakeEstimates) EstimatedStart(uid types.UID) (estimate.Start, bool) {
	s, ok := f[uid]
	return s, ok
}

// Each pod of a page carries its own estimate: a range and its basis, or why it is
// unknown; a pod the estimator has not estimated, or a handler without estimates, has
// none.
func TestPendingPodsEstimates(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(min int) *metav1.Time {
		t := metav1.NewTime(created.Add(time.Duration(min) * time.Minute))
		return &t
	}
	estimates := fakeEstimates{
		"uid-1": {Known: true, Median: created.Add(4 * time.Minute), Low: created.Add(2 * time.Minute), High: created.Add(9 * time.Minute), Ends: 12, Samples: 5},
		"uid-2": {Unknown: estimate.UnknownNoHistory, Reason: "it waits for quota held by pods with no expected end", Ends: 3},
	}
	queues := fakeQueues{created: created, n: map[quota.BudgetKey]int{{Namespace: "team-a", Name: "gpu"}: 3}}
	clk := clocktesting.NewFakePassiveClock(created)
	for name, tc := range map[string]struct {
		handler http.Handler
		want    []*visv1.EstimatedStart
	}{
		"with the estimator's starts": {
			handler: NewHandler(queues, clk, WithEstimates(estimates)),
			want: []*visv1.EstimatedStart{
				{Median: at(4), Low: at(2), High: at(9), Ends: 12, Samples: 5},
				{Unknown: "NoHistory", Message: "it waits for quota held by pods with no expected end", Ends: 3},
				nil,
			},
		},
		"without an estimator": {handler: NewHandler(queues, clk), want: []*visv1.EstimatedStart{nil, nil, nil}},
	} {
		t.Run(name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			tc.handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, GroupVersionPath+"/namespaces/team-a/budgets/gpu/pendingpods", nil))
			if rec.Code != http.StatusOK {
				t.Fatalf("code %d: %s", rec.Code, rec.Body)
			}
			var list visv1.PendingPodList
			if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
				t.Fatal(err)
			}
			var got []*visv1.EstimatedStart
			for _, p := range list.Items {
				got = append(got, p.EstimatedStart)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("estimated starts (-want +got):\n%s", diff)
			}
		})
	}
}
