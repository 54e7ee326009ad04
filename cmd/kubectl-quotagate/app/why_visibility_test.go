package app

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/pkg/visibility"
)

// restClientFor returns a REST client for an API server at url, as kubectl's.
func restClientFor(t *testing.T, url string) rest.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: url})
	if err != nil {
		t.Fatal(err)
	}
	return cs.CoreV1().RESTClient()
}

// visibilityEnv is the plugin's environment in this world reading where pods wait from
// the visibility API's own handler over the world's core, as the leader serves it. The
// snapshot is unreachable, so an answer that fell back to it would show.
func (w *world) visibilityEnv(t *testing.T) *env {
	t.Helper()
	srv := httptest.NewServer(visibility.NewHandler(w.core.Reader(), clocktesting.NewFakePassiveClock(now)))
	t.Cleanup(srv.Close)
	e := w.env(failingSource{})
	rc := restClientFor(t, srv.URL)
	e.podStatus = func() (podStatusSource, error) { return visibilityPodStatus(rc), nil }
	return e
}

// For every pod of the world, why through the visibility API says exactly what why
// through the manager's snapshot says (TestWhy checks those words), in text and JSON.
func TestWhyVisibilityMatchesSnapshot(t *testing.T) {
	w := teamsWorld(t)
	var pods corev1.PodList
	if err := w.client.List(t.Context(), &pods); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 10 {
		t.Fatalf("the world has %d pods, want 10", len(pods.Items))
	}
	for _, p := range pods.Items {
		for _, args := range [][]string{{"why", p.Namespace + "/" + p.Name}, {"why", p.Namespace + "/" + p.Name, "-o", "json"}} {
			want, wantErr, err := run(t, w.env(nil), args...)
			if err != nil {
				t.Fatalf("%v through the snapshot: %v", args, err)
			}
			got, gotErr, err := run(t, w.visibilityEnv(t), args...)
			if err != nil {
				t.Fatalf("%v through the visibility API: %v", args, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%v output (-snapshot +visibility API):\n%s", args, diff)
			}
			if diff := cmp.Diff(wantErr, gotErr); diff != "" {
				t.Errorf("%v notes (-snapshot +visibility API):\n%s", args, diff)
			}
		}
	}
}

// cannedAPI answers every request with code and body, as kube-apiserver does when it
// refuses a request or has no such API.
func cannedAPI(t *testing.T, code int, contentType, body string) podStatusSource {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return visibilityPodStatus(restClientFor(t, srv.URL))
}

func statusSource(st *visv1.PendingPodStatus) podStatusSource {
	return func(context.Context, string, string) (*visv1.PendingPodStatus, error) { return st, nil }
}

// What why says when the visibility API refuses, is missing, or holds no such pod: the
// pod's own state, and a note that says why there is no more.
func TestWhyVisibilityAnswers(t *testing.T) {
	const (
		summary   = "Pod team-a/train-3 is waiting for 6m (gate quotagate.io/budget)\n"
		eventNote = "Note: the latest reason is in the pod's events: kubectl events -n team-a --for pod/train-3\n"
		notHeld   = "Note: the manager holds this pod in no queue: it has not seen the pod yet, or is admitting it right now\n"
	)
	tests := map[string]struct {
		source    func(t *testing.T, w *world) podStatusSource
		wantOut   string
		wantNotes string
	}{
		"a tenant without get on pendingpods": {
			source: func(t *testing.T, _ *world) podStatusSource {
				return cannedAPI(t, 403, "application/json", `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pendingpods.visibility.quotagate.io \"train-3\" is forbidden: User \"bob\" cannot get resource \"pendingpods\" in API group \"visibility.quotagate.io\" in the namespace \"team-a\"","reason":"Forbidden","details":{"name":"train-3","group":"visibility.quotagate.io","kind":"pendingpods"},"code":403}`)
			},
			wantOut: summary,
			wantNotes: `Note: you may not see where pod team-a/train-3 waits: it needs get on pendingpods in visibility.quotagate.io in namespace team-a (the view role has it when the chart aggregates it): pendingpods.visibility.quotagate.io "train-3" is forbidden: User "bob" cannot get resource "pendingpods" in API group "visibility.quotagate.io" in the namespace "team-a"
` + eventNote,
		},
		"no APIService": {
			source: func(t *testing.T, _ *world) podStatusSource {
				return cannedAPI(t, 404, "application/json", `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}`)
			},
			wantOut:   summary,
			wantNotes: "Note: the visibility API is not installed (kubectl get apiservice v1alpha1.visibility.quotagate.io; the chart's visibility.enabled): the server could not find the requested resource\n" + eventNote,
		},
		"the APIService is not available": {
			source: func(t *testing.T, _ *world) podStatusSource {
				return cannedAPI(t, 503, "text/plain", "service unavailable\n")
			},
			wantOut:   summary,
			wantNotes: "Note: the visibility API is unavailable (kubectl get apiservice v1alpha1.visibility.quotagate.io shows why): the server is currently unable to handle the request\n" + eventNote,
		},
		"the manager holds no gated pod by that name": {
			source: func(t *testing.T, w *world) podStatusSource {
				srv := httptest.NewServer(visibility.NewHandler(w.core.Reader(), clocktesting.NewFakePassiveClock(now)))
				t.Cleanup(srv.Close)
				w.core.DeletePod("team-a-train-3")
				return visibilityPodStatus(restClientFor(t, srv.URL))
			},
			wantOut:   summary,
			wantNotes: notHeld,
		},
		"the manager holds an older pod of that name": {
			source: func(*testing.T, *world) podStatusSource {
				return statusSource(&visv1.PendingPodStatus{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "train-3", UID: "older"}, Reason: "x"})
			},
			wantOut:   summary,
			wantNotes: notHeld,
		},
		"with an estimate: when, its range and what it rests on": {
			source: func(*testing.T, *world) podStatusSource {
				at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }
				return statusSource(&visv1.PendingPodStatus{
					ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "train-3", UID: "team-a-train-3"},
					ReasonCode: "InsufficientQuota", Reason: "requests.cpu: 1 requested, 0 free in Budget team-a/team-a; position 3 of 3",
					EstimatedStart: &visv1.EstimatedStart{Median: at(4 * time.Minute), Low: at(2 * time.Minute), High: at(9 * time.Minute), Ends: 12, Samples: 5,
						Basis: "durations of 5 runs of Job team-a/train"},
				})
			},
			wantOut: summary + "Reason: requests.cpu: 1 requested, 0 free in Budget team-a/team-a; position 3 of 3\n" +
				"Estimated start: in 4m (between 2m and 9m), from 12 pod ends (durations of 5 runs of Job team-a/train)\n",
		},
		"with its budget's track record": {
			source: func(*testing.T, *world) podStatusSource {
				at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }
				return statusSource(&visv1.PendingPodStatus{
					ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "train-3", UID: "team-a-train-3"},
					ReasonCode: "InsufficientQuota", Reason: "requests.cpu: 1 requested, 0 free in Budget team-a/team-a; position 3 of 3",
					EstimatedStart: &visv1.EstimatedStart{Median: at(4 * time.Minute), Low: at(2 * time.Minute), High: at(9 * time.Minute), Ends: 12, Samples: 5,
						Basis: "durations of 5 runs of Job team-a/train"},
					EstimateRecord: &visv1.EstimateRecord{BudgetKind: "Budget", Namespace: "team-a", Name: "team-a", Pods: 120, MedianErrorSeconds: 40.4, WithinRange: 100,
						Since: metav1.NewTime(time.Date(2026, 12, 5, 7, 12, 30, 0, time.UTC))},
				})
			},
			wantOut: summary + "Reason: requests.cpu: 1 requested, 0 free in Budget team-a/team-a; position 3 of 3\n" +
				"Estimated start: in 4m (between 2m and 9m), from 12 pod ends (durations of 5 runs of Job team-a/train)\n" +
				"Estimates in Budget team-a/team-a: median error 40s, 83% within range (100 of 120 pods admitted since the manager started at 2026-12-05 07:12 UTC)\n",
		},
		"with an estimate from an older manager, without a basis": {
			source: func(*testing.T, *world) podStatusSource {
				at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }
				return statusSource(&visv1.PendingPodStatus{
					ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "train-3", UID: "team-a-train-3"},
					ReasonCode: "InsufficientQuota", Reason: "requests.cpu: 1 requested, 0 free in Budget team-a/team-a; position 3 of 3",
					EstimatedStart: &visv1.EstimatedStart{Median: at(4 * time.Minute), Low: at(2 * time.Minute), High: at(9 * time.Minute), Ends: 12, Samples: 5},
				})
			},
			wantOut: summary + "Reason: requests.cpu: 1 requested, 0 free in Budget team-a/team-a; position 3 of 3\n" +
				"Estimated start: in 4m (between 2m and 9m), from 12 pod ends, 5 samples at least\n",
		},
		"with an estimate from a wider circle: the basis says which": {
			source: func(*testing.T, *world) podStatusSource {
				at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }
				return statusSource(&visv1.PendingPodStatus{
					ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "train-3", UID: "team-a-train-3"},
					ReasonCode: "InsufficientQuota", Reason: "requests.cpu: 1 requested, 0 free in Budget team-a/team-a; position 3 of 3",
					EstimatedStart: &visv1.EstimatedStart{Median: at(4 * time.Minute), Low: at(2 * time.Minute), High: at(20 * time.Minute), Ends: 2, Samples: 30,
						Basis: "no run of Job team-a/etl yet; durations of 30 runs of pods in namespace team-a"},
				})
			},
			wantOut: summary + "Reason: requests.cpu: 1 requested, 0 free in Budget team-a/team-a; position 3 of 3\n" +
				"Estimated start: in 4m (between 2m and 20m), from 2 pod ends (no run of Job team-a/etl yet; durations of 30 runs of pods in namespace team-a)\n",
		},
		"with an estimate from declared durations, due now": {
			source: func(*testing.T, *world) podStatusSource {
				at := metav1.NewTime(now.Add(-time.Second))
				return statusSource(&visv1.PendingPodStatus{
					ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "train-3", UID: "team-a-train-3"},
					ReasonCode: "InsufficientQuota", Reason: "requests.cpu: 1 requested, 0 free in Budget team-a/team-a; position 1 of 1",
					EstimatedStart: &visv1.EstimatedStart{Median: &at, Low: &at, High: &at, Ends: 1},
				})
			},
			wantOut: summary + "Reason: requests.cpu: 1 requested, 0 free in Budget team-a/team-a; position 1 of 1\n" +
				"Estimated start: now, from 1 pod end\n",
		},
		"with an estimate that is unknown": {
			source: func(*testing.T, *world) podStatusSource {
				return statusSource(&visv1.PendingPodStatus{
					ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "train-3", UID: "team-a-train-3"},
					ReasonCode: "InsufficientQuota", Reason: "requests.cpu: 1 requested, 0 free in Budget team-a/team-a; position 3 of 3",
					EstimatedStart: &visv1.EstimatedStart{Unknown: "NoHistory", Message: "it waits for quota held by pods with no expected end"},
				})
			},
			wantOut: summary + "Reason: requests.cpu: 1 requested, 0 free in Budget team-a/team-a; position 3 of 3\n" +
				"Estimated start: unknown (NoHistory: it waits for quota held by pods with no expected end)\n",
		},
		"held, no budget covers it": {
			source: func(*testing.T, *world) podStatusSource {
				return statusSource(&visv1.PendingPodStatus{
					ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "train-3", UID: "team-a-train-3"},
					Held:       true, ReasonCode: "Uncovered", Reason: "no Budget or ClusterBudget covers it, and uncovered pods are held",
				})
			},
			wantOut: summary + "Reason: no Budget or ClusterBudget covers it, and uncovered pods are held\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := teamsWorld(t)
			e := w.env(failingSource{})
			src := tc.source(t, w)
			e.podStatus = func() (podStatusSource, error) { return src, nil }
			out, notes, err := run(t, e, "why", "team-a/train-3")
			if err != nil {
				t.Fatalf("why: %v", err)
			}
			if diff := cmp.Diff(tc.wantOut, out); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantNotes, notes); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
		})
	}
}

// why -o json through the visibility API carries the core's reason and places.
func TestWhyVisibilityJSON(t *testing.T) {
	w := teamsWorld(t)
	out, _, err := run(t, w.visibilityEnv(t), "why", "team-a/train-1", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var got whyResult
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("decoding: %v\n%s", err, out)
	}
	want, _ := w.core.Reader().WaitReason("team-a-train-1")
	if got.Reason == nil || *got.Reason != want {
		t.Errorf("reason %v, want the core's %v", got.Reason, want)
	}
	if len(got.Budgets) != 2 || got.Budgets[0].Position != 2 || got.Budgets[0].Of != 3 || got.Budgets[1].Budget.Name != "org" {
		t.Errorf("places %+v, want team-a 2 of 3, then org", got.Budgets)
	}
}

// The explanation the web UI shows on a gated pod's page is why's, without its
// "Estimated start" line: the page shows the estimate in a field of its own.
func TestWhyTextForThePodPageLeavesTheEstimateOut(t *testing.T) {
	w := teamsWorld(t)
	e := w.env(failingSource{})
	at := metav1.NewTime(now.Add(4 * time.Minute))
	src := statusSource(&visv1.PendingPodStatus{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "train-3", UID: "team-a-train-3"},
		ReasonCode: "InsufficientQuota", Reason: "requests.cpu: 1 requested, 0 free in Budget team-a/team-a; position 3 of 3",
		EstimatedStart: &visv1.EstimatedStart{Median: &at, Low: &at, High: &at, Ends: 3},
	})
	e.podStatus = func() (podStatusSource, error) { return src, nil }
	out, _, err := run(t, e, "why", "team-a/train-3")
	if err != nil || !strings.Contains(out, "Estimated start: in 4m") {
		t.Fatalf("why: %v\n%s\nwant its Estimated start line", err, out)
	}
	text, err := e.whyText(t.Context(), "team-a", "train-3")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text, "Estimated start") || !strings.Contains(text, "Reason: requests.cpu: 1 requested, 0 free") {
		t.Errorf("the pod page's explanation:\n%s\nwant the reason without the estimated start", text)
	}
}
