package visibility

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/quota"
)

// podWaits are team-a's gated pods: train-0 waits in its Budget and a ClusterBudget
// (in backoff), lonely is held with no budget.
func podWaits(created time.Time) map[string]quota.PodWait {
	retry := created.Add(time.Minute)
	return map[string]quota.PodWait{
		"team-a/train-0": {
			Pod:      quota.PodRef{UID: "u-train-0", Namespace: "team-a", Name: "train-0"},
			Priority: 5,
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Created:  created,
			RetryAt:  &retry,
			Reason:   quota.Reason{Code: quota.CodeBackoff, Message: "backoff until then"},
			Places: []quota.PodPlace{
				{Budget: quota.BudgetKey{Namespace: "team-a", Name: "gpu"}, Position: 2, Total: 5, Queue: quota.QueueBackoff},
				{Budget: quota.BudgetKey{Name: "org"}, Position: 7, Total: 40, Queue: quota.QueueBackoff},
			},
		},
		"team-a/lonely": {
			Pod:     quota.PodRef{UID: "u-lonely", Namespace: "team-a", Name: "lonely"},
			Created: created,
			Held:    true,
			Reason:  quota.Reason{Code: quota.CodeUncovered, Message: "no Budget or ClusterBudget covers it, and uncovered pods are held"},
		},
	}
}

func TestPodStatus(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	queues := fakeQueues{created: created, waits: podWaits(created), n: map[quota.BudgetKey]int{{Namespace: "team-a", Name: "gpu"}: 5}}
	median := metav1.NewTime(created.Add(10 * time.Minute))
	h := NewHandler(queues, clocktesting.NewFakePassiveClock(created.Add(90*time.Second)), WithEstimates(fakeEstimates{
		"u-train-0": {Known: true, Median: median.Time, Low: median.Time, High: median.Time, Ends: 2},
		"u-lonely":  {Unknown: estimate.UnknownBlocked, Reason: "no Budget or ClusterBudget covers it"},
	}))
	retry := metav1.NewTime(created.Add(time.Minute))
	tests := map[string]struct {
		method, path string
		wantCode     int
		want         *visv1.PendingPodStatus
		wantMessage  string
	}{
		"a pod in a Budget and a ClusterBudget": {
			path: "/namespaces/team-a/pendingpods/train-0", wantCode: 200,
			want: &visv1.PendingPodStatus{
				TypeMeta:   metav1.TypeMeta{APIVersion: "visibility.quotagate.io/v1alpha1", Kind: "PendingPodStatus"},
				ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "train-0", UID: "u-train-0", CreationTimestamp: metav1.NewTime(created)},
				Priority:   5, Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
				WaitingSeconds: 90, RetryAt: &retry, ReasonCode: "Backoff", Reason: "backoff until then",
				EstimatedStart: &visv1.EstimatedStart{Median: &median, Low: &median, High: &median, Ends: 2},
				Budgets: []visv1.BudgetPlace{
					{BudgetKind: "Budget", Namespace: "team-a", Name: "gpu", Position: 2, Total: 5, Queue: "backoff"},
					{BudgetKind: "ClusterBudget", Name: "org", Position: 7, Total: 40, Queue: "backoff"},
				},
			},
		},
		"a held pod no budget covers": {
			path: "/namespaces/team-a/pendingpods/lonely", wantCode: 200,
			want: &visv1.PendingPodStatus{
				TypeMeta:       metav1.TypeMeta{APIVersion: "visibility.quotagate.io/v1alpha1", Kind: "PendingPodStatus"},
				ObjectMeta:     metav1.ObjectMeta{Namespace: "team-a", Name: "lonely", UID: "u-lonely", CreationTimestamp: metav1.NewTime(created)},
				WaitingSeconds: 90, ReasonCode: "Uncovered", Reason: "no Budget or ClusterBudget covers it, and uncovered pods are held",
				Held: true, Budgets: []visv1.BudgetPlace{},
				EstimatedStart: &visv1.EstimatedStart{Unknown: "Blocked", Message: "no Budget or ClusterBudget covers it"},
			},
		},
		"a pod the manager does not hold": {
			path: "/namespaces/team-a/pendingpods/web", wantCode: 404,
			wantMessage: "the manager holds no gated pod team-a/web: it is not gated by quotagate, does not exist, or the manager has not seen it yet",
		},
		"the same name in another namespace": {path: "/namespaces/team-b/pendingpods/train-0", wantCode: 404},
		"a write":                            {method: http.MethodPost, path: "/namespaces/team-a/pendingpods/train-0", wantCode: 405},
		"a list, which is not served":        {path: "/namespaces/team-a/pendingpods", wantCode: 404},
		"budgets' pendingpods still answer":  {path: "/namespaces/team-a/budgets/gpu/pendingpods", wantCode: 200},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(method, GroupVersionPath+tc.path, nil))
			if rec.Code != tc.wantCode {
				t.Fatalf("code %d, want %d: %s", rec.Code, tc.wantCode, rec.Body)
			}
			if tc.wantCode != 200 {
				var st metav1.Status
				if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.Kind != "Status" || st.Code != int32(tc.wantCode) || st.Message == "" {
					t.Fatalf("error body is not a Status with code %d and a message: %s", tc.wantCode, rec.Body)
				}
				if tc.wantCode == 404 && st.Reason != metav1.StatusReasonNotFound {
					t.Errorf("reason %q, want NotFound", st.Reason)
				}
				if tc.wantMessage != "" && st.Message != tc.wantMessage {
					t.Errorf("message %q, want %q", st.Message, tc.wantMessage)
				}
				return
			}
			if tc.want == nil {
				return
			}
			var got visv1.PendingPodStatus
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, &got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// The whole API, pod status included, is the leader's: a standby forwards it.
func TestPodStatusLeaderOnly(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	api := NewHandler(fakeQueues{waits: podWaits(created)}, clocktesting.NewFakePassiveClock(created))
	forwarded := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) })
	for lead, want := range map[bool]int{true: http.StatusOK, false: http.StatusAccepted} {
		rec := httptest.NewRecorder()
		leaderOnly(leading(lead), api, forwarded).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, GroupVersionPath+"/namespaces/team-a/pendingpods/train-0", nil))
		if rec.Code != want || (lead && !strings.Contains(rec.Body.String(), `"kind":"PendingPodStatus"`)) {
			t.Errorf("leading %v: code %d, want %d: %s", lead, rec.Code, want, rec.Body)
		}
	}
}

// recordedEstimates are fakeEstimates with a track record for Budget team-a/gpu.
type recordedEstimates struct{ fakeEstimates }

func (recordedEstimates) EstimateRecord(b quota.BudgetKey) (estimate.Record, bool) {
	if b != (quota.BudgetKey{Namespace: "team-a", Name: "gpu"}) {
		return estimate.Record{}, false
	}
	return estimate.Record{Budget: b, Pods: 30, MedianError: 40 * time.Second, Within: 25, Since: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, true
}

// A pod's status carries the track record of its first budget, when the manager keeps
// one there.
func TestPodStatusCarriesTheTrackRecord(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	queues := fakeQueues{created: created, waits: podWaits(created)}
	h := NewHandler(queues, clocktesting.NewFakePassiveClock(created.Add(90*time.Second)), WithEstimates(recordedEstimates{fakeEstimates{}}))
	for name, want := range map[string]*visv1.EstimateRecord{
		"train-0": {BudgetKind: "Budget", Namespace: "team-a", Name: "gpu", Pods: 30, MedianErrorSeconds: 40, WithinRange: 25, Since: metav1.NewTime(created)},
		"lonely":  nil, // no budget
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, GroupVersionPath+"/namespaces/team-a/pendingpods/"+name, nil))
		var got visv1.PendingPodStatus
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != 200 {
			t.Fatalf("%s: %d %v", name, rec.Code, err)
		}
		if diff := cmp.Diff(want, got.EstimateRecord); diff != "" {
			t.Errorf("%s's estimateRecord (-want +got):\n%s", name, diff)
		}
	}
}
