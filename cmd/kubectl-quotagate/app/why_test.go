package app

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

func TestWhy(t *testing.T) {
	w := teamsWorld(t)
	tests := map[string]struct {
		args []string
		want string
	}{
		"waiting for room, held by two budgets": {
			args: []string{"why", "train-1", "-n", "team-a"},
			want: `Pod team-a/train-1 is waiting for 8m (gate quotagate.io/budget)
Reason: requests.cpu: 2 requested, 0 free in Budget team-a/team-a; position 2 of 3
BUDGET                 POSITION   QUEUE
Budget team-a/team-a   2 of 3     inadmissible
ClusterBudget org      3 of 4     inadmissible
`,
		},
		"can never fit": {
			args: []string{"why", "team-a/huge"},
			want: `Pod team-a/huge is waiting for 9m30s (gate quotagate.io/budget)
Reason: requests.cpu: 6 requested, more than the 4 hard of Budget team-a/team-a: it can never fit
BUDGET                 POSITION   QUEUE
Budget team-a/team-a   1 of 3     parked
ClusterBudget org      1 of 4     parked
`,
		},
		"admitted": {
			args: []string{"why", "pod/train-hi", "-n", "team-a"},
			want: "Pod team-a/train-hi was admitted at 2026-01-01T09:05:00Z (5m ago, after waiting 4m) by Budget team-a/team-a, ClusterBudget org\n",
		},
		"never gated": {
			args: []string{"why", "team-a/web"},
			want: "Pod team-a/web was never admitted by quotagate: it was created without the gate (before its namespace opted in, or skipped by the webhook) and counts as used in the budgets that cover it\n",
		},
		"namespace not opted in": {
			args: []string{"why", "legacy/cron"},
			want: "Pod legacy/cron is not gated by quotagate: namespace legacy is not opted in (label quotagate.io/enabled=true); budgets that cover it still count it as used\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, errOut, err := run(t, w.env(nil), tc.args...)
			if err != nil {
				t.Fatalf("why: %v\n%s", err, errOut)
			}
			if diff := cmp.Diff(tc.want, out); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

// The reason why prints is the core's own sentence for the pod (the one its Waiting
// event carries), for every gated pod of the world.
func TestWhyReasonIsTheCoresReason(t *testing.T) {
	w := teamsWorld(t)
	for _, name := range []string{"team-a/huge", "team-a/train-1", "team-a/train-3", "team-b/batch-3"} {
		out, _, err := run(t, w.env(nil), "why", name, "-o", "json")
		if err != nil {
			t.Fatalf("why %s: %v", name, err)
		}
		var got whyResult
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("decoding why -o json: %v\n%s", err, out)
		}
		want, ok := w.core.Reader().WaitReason(got.Pod.UID)
		if !ok {
			t.Fatalf("the core holds no wait reason for %s", name)
		}
		if got.Reason == nil {
			t.Fatalf("why %s: no reason in %s", name, out)
		}
		if diff := cmp.Diff(want, *got.Reason); diff != "" {
			t.Errorf("why %s reason (-core +plugin):\n%s", name, diff)
		}
	}
}

func TestWhyJSONAdmitted(t *testing.T) {
	w := teamsWorld(t)
	out, _, err := run(t, w.env(nil), "why", "team-b/batch-2", "-o", "json")
	if err != nil {
		t.Fatalf("why: %v", err)
	}
	var got whyResult
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("decoding: %v", err)
	}
	at := t0.Add(5 * time.Minute)
	want := whyResult{
		Pod:        quota.PodRef{UID: "team-b-batch-2", Namespace: "team-b", Name: "batch-2"},
		State:      podAdmitted,
		Summary:    "Pod team-b/batch-2 was admitted at 2026-01-01T09:05:00Z (5m ago, after waiting 3m30s) by Budget team-b/team-b, ClusterBudget org",
		Created:    t0.Add(90 * time.Second),
		AdmittedAt: &at,
		AdmittedBy: []string{"team-b/team-b", "org"},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(podPlace{})); diff != "" {
		t.Errorf("why -o json (-want +got):\n%s", diff)
	}
}

// Without the manager, why still says the pod waits and where to find the reason.
func TestWhyWithoutManager(t *testing.T) {
	w := teamsWorld(t)
	out, errOut, err := run(t, w.env(failingSource{}), "why", "team-a/train-3")
	if err != nil {
		t.Fatalf("why: %v", err)
	}
	if diff := cmp.Diff("Pod team-a/train-3 is waiting for 6m (gate quotagate.io/budget)\n", out); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	wantNotes := `Note: cannot read the queue snapshot from the test manager: connection refused
Note: the latest reason is in the pod's events: kubectl events -n team-a --for pod/train-3
`
	if diff := cmp.Diff(wantNotes, errOut); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}

func TestWhyUnknownPod(t *testing.T) {
	w := teamsWorld(t)
	_, _, err := run(t, w.env(nil), "why", "team-a/ghost")
	want := `reading pod team-a/ghost: pods "ghost" not found`
	if err == nil || err.Error() != want {
		t.Errorf("why of a missing pod: got error %v, want %q", err, want)
	}
}

// A pod admitted by borrowing says so, and what that means for it.
func TestWhyBorrowing(t *testing.T) {
	a := budget("team-a", "a", "requests.cpu=2", "org")
	a.Spec.BorrowingLimit = parseList("requests.cpu=2")
	w := newWorld(t, t0.Add(5*time.Minute),
		[]*corev1.Namespace{namespace("team-a", true), namespace("team-b", true)},
		[]*v1alpha1.Budget{a, budget("team-b", "b", "requests.cpu=2", "org")},
		[]*v1alpha1.ClusterBudget{clusterBudget("org", "requests.cpu=4", nil)},
		[]*corev1.Pod{
			makePod("team-a", "a1").Req("cpu=1").Created(10).Obj(),
			makePod("team-a", "a2").Req("cpu=1").Created(20).Obj(),
			makePod("team-a", "a3").Req("cpu=1").Created(30).Obj(),
		})
	for name, want := range map[string]string{
		"a2": "Pod team-a/a2 was admitted at 2026-01-01T09:05:00Z (5m ago, after waiting 4m40s) by Budget team-a/a, ClusterBudget org\n",
		"a3": "Pod team-a/a3 was admitted at 2026-01-01T09:05:00Z (5m ago, after waiting 4m30s) by Budget team-a/a, ClusterBudget org; it runs beyond the hard of Budget team-a/a, on quota borrowed under its parent, and may be evicted when a budget that lent it needs it back\n",
	} {
		out, errOut, err := run(t, w.env(nil), "why", "team-a/"+name)
		if err != nil {
			t.Fatalf("why %s: %v\n%s", name, err, errOut)
		}
		if diff := cmp.Diff(want, out); diff != "" {
			t.Errorf("why %s (-want +got):\n%s", name, diff)
		}
	}
}

// A waiting pod's budgets say what their windows do next: one is open until its end,
// the other opens later; a budget with no window says nothing.
func TestWhyWindows(t *testing.T) {
	now := t0.Add(10 * time.Minute)
	a := budget("team-a", "team-a", "requests.cpu=4,pods=10", "org")
	a.Status.ActiveWindows = []string{"deadline"}
	a.Status.NextWindowChange = &metav1.Time{Time: now.Add(2 * time.Hour)}
	org := clusterBudget("org", "requests.cpu=8", nil)
	org.Status.NextWindowChange = &metav1.Time{Time: now.Add(5 * time.Hour)}
	w := newWorld(t, t0.Add(5*time.Minute),
		[]*corev1.Namespace{namespace("team-a", true), namespace("team-b", true)},
		[]*v1alpha1.Budget{a, budget("team-b", "team-b", "requests.cpu=4", "org")},
		[]*v1alpha1.ClusterBudget{org},
		[]*corev1.Pod{
			makePod("team-a", "web").Req("cpu=4").Ungated().Obj(),
			makePod("team-a", "train-1").Req("cpu=2").Created(120).Obj(),
			makePod("team-b", "batch-1").Req("cpu=4").Ungated().Obj(),
			makePod("team-b", "batch-2").Req("cpu=1").Created(130).Obj(),
		})
	out, errOut, err := run(t, w.env(nil), "why", "team-a/train-1")
	if err != nil {
		t.Fatalf("why: %v\n%s", err, errOut)
	}
	want := `Pod team-a/train-1 is waiting for 8m (gate quotagate.io/budget)
Reason: requests.cpu: 2 requested, 0 free in Budget team-a/team-a; position 1 of 1
Window: Budget team-a/team-a: window deadline is open; the next change is at 2026-01-01T11:10:00Z (in 120m)
Window: ClusterBudget org: a window opens at 2026-01-01T14:10:00Z (in 5h) and changes what it may hold
BUDGET                 POSITION   QUEUE
Budget team-a/team-a   1 of 1     inadmissible
ClusterBudget org      1 of 2     inadmissible
`
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("why (-want +got):\n%s", diff)
	}
	// Team B's budget has no window: only the ClusterBudget's line.
	out, _, err = run(t, w.env(nil), "why", "team-b/batch-2", "-o", "json")
	if err != nil {
		t.Fatalf("why: %v", err)
	}
	var got whyResult
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("decoding: %v\n%s", err, out)
	}
	wantWindows := []string{"ClusterBudget org: a window opens at 2026-01-01T14:10:00Z (in 5h) and changes what it may hold"}
	if diff := cmp.Diff(wantWindows, got.Windows); diff != "" {
		t.Errorf("windows of batch-2 (-want +got):\n%s", diff)
	}
}
