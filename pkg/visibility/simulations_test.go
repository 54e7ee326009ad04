package visibility

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	clocktesting "k8s.io/utils/clock/testing"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/quota"
)

// fakeReviewer allows what allow names ("user verb group/resource/subresource ns")
// and records what it was asked.
type fakeReviewer struct {
	allow map[string]bool
	asked *[]string
}

func (f fakeReviewer) Allowed(_ context.Context, u user.Info, a authorizationv1.ResourceAttributes) (bool, string, error) {
	key := u.GetName() + " " + a.Verb + " " + a.Group + "/" + a.Resource + "/" + a.Subresource + " " + a.Namespace
	*f.asked = append(*f.asked, key)
	return f.allow[key], "", nil
}

// stubSimulator answers one admitted pod on flavor a100 and one that waits, and says
// why no start is estimated.
type stubSimulator struct{}

func (stubSimulator) SimulatePods(_ context.Context, namespace string, _ *corev1.PodTemplateSpec, count int) (estimate.WhatIf, error) {
	w := estimate.WhatIf{Now: time.Unix(1_800_000_000, 0), NoStarts: "the estimator is off"}
	for i := range count {
		p := quota.Pod{PodRef: quota.PodRef{Namespace: namespace, Name: "simulated-" + string(rune('0'+i))}}
		pl := estimate.Placement{Pod: p.PodRef, Found: true}
		if i == 0 {
			pl.Admitted, pl.Flavor, pl.Budgets = true, "a100", []quota.BudgetKey{{Namespace: namespace, Name: "gpus"}}
			pl.Reason = quota.Reason{Code: quota.CodeFits}
		} else {
			pl.Reason = quota.Reason{Code: quota.CodeInsufficient, Message: "no room"}
			pl.Wait.Places = []quota.PodPlace{{Budget: quota.BudgetKey{Namespace: namespace, Name: "gpus"}, Position: 1, Total: 1, Queue: quota.QueueInadmissible}, {Budget: quota.BudgetKey{Name: "org"}, Position: 4, Total: 9, Queue: quota.QueueInadmissible}}
		}
		w.Pods, w.Placements = append(w.Pods, p), append(w.Placements, pl)
	}
	return w, nil
}

const simBody = `{"apiVersion":"visibility.quotagate.io/v1alpha1","kind":"PodSimulation","spec":{"count":2,"template":{"spec":{"containers":[{"name":"c"}]}}}}`

// TestPodSimulationsHandler: the answer's conversion, 405 for other verbs and named
// paths, 503 without a simulator, and who simulationAccess lets through.
func TestPodSimulationsHandler(t *testing.T) {
	path := PodSimulationsPath("team-a")
	h := NewHandler(fakeQueues{}, clocktesting.NewFakePassiveClock(time.Now()), WithSimulator(stubSimulator{}))
	serve := func(h http.Handler, method, path, body string, u user.Info, headers ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		if u != nil {
			r = r.WithContext(genericrequest.WithUser(r.Context(), u))
		}
		for i := 0; i+1 < len(headers); i += 2 {
			r.Header.Set(headers[i], headers[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}

	rec := serve(h, http.MethodPost, path, simBody, nil)
	var sim visv1.PodSimulation
	if err := json.Unmarshal(rec.Body.Bytes(), &sim); err != nil || rec.Code != http.StatusCreated {
		t.Fatalf("POST: %d %v\n%s", rec.Code, err, rec.Body)
	}
	want := []visv1.SimulatedPod{
		{Name: "simulated-0", Admitted: true, Flavor: "a100", ReasonCode: "Fits",
			Budgets:        []visv1.BudgetPlace{{BudgetKind: "Budget", Namespace: "team-a", Name: "gpus"}},
			EstimatedStart: &visv1.EstimatedStart{Unknown: NotEstimated, Message: "the estimator is off"}},
		{Name: "simulated-1", ReasonCode: string(quota.CodeInsufficient), Reason: "no room",
			Budgets: []visv1.BudgetPlace{
				{BudgetKind: "Budget", Namespace: "team-a", Name: "gpus", Position: 1, Total: 1, Queue: "inadmissible"},
				{BudgetKind: "ClusterBudget", Name: "org", Position: 4, Total: 9, Queue: "inadmissible"},
			},
			EstimatedStart: &visv1.EstimatedStart{Unknown: NotEstimated, Message: "the estimator is off"}},
	}
	if diff := cmp.Diff(want, sim.Status.Pods); diff != "" {
		t.Errorf("the answer's pods (-want +got):\n%s", diff)
	}
	if sim.Namespace != "team-a" || !sim.CreationTimestamp.Equal(&metav1.Time{Time: time.Unix(1_800_000_000, 0)}) {
		t.Errorf("the answer's metadata: %+v", sim.ObjectMeta)
	}

	for what, tc := range map[string]struct {
		h      http.Handler
		method string
		path   string
		code   int
	}{
		"GET":                  {h, http.MethodGet, path, http.StatusMethodNotAllowed},
		"DELETE of a name":     {h, http.MethodDelete, path + "/x", http.StatusMethodNotAllowed},
		"POST to a name":       {h, http.MethodPost, path + "/x", http.StatusMethodNotAllowed},
		"no simulator":         {NewHandler(fakeQueues{}, clocktesting.NewFakePassiveClock(time.Now())), http.MethodPost, path, http.StatusServiceUnavailable},
		"another kind of body": {h, http.MethodPost, path, http.StatusBadRequest},
	} {
		body := simBody
		if what == "another kind of body" {
			body = `{"apiVersion":"v1","kind":"Pod"}`
		}
		if rec := serve(tc.h, tc.method, tc.path, body, nil); rec.Code != tc.code {
			t.Errorf("%s: %d, want %d: %s", what, rec.Code, tc.code, rec.Body)
		}
	}

	var asked []string
	rev := fakeReviewer{asked: &asked, allow: map[string]bool{
		"alice create /pods/ team-a": true,
		"manager create visibility.quotagate.io/podsimulations/forwarded team-a": true,
	}}
	guarded := simulationAccess(rev, h)
	for what, tc := range map[string]struct {
		user    string
		headers []string
		code    int
	}{
		"a user who may create pods":                   {user: "alice", code: http.StatusCreated},
		"a user who may not":                           {user: "bob", code: http.StatusForbidden},
		"a user who sets the forwarded header":         {user: "alice", headers: []string{forwardedHeader, "1"}, code: http.StatusForbidden},
		"a replica that forwards":                      {user: "manager", headers: []string{forwardedHeader, "1"}, code: http.StatusCreated},
		"a request without a user (not authenticated)": {code: http.StatusForbidden},
	} {
		var u user.Info
		if tc.user != "" {
			u = &user.DefaultInfo{Name: tc.user}
		}
		rec := serve(guarded, http.MethodPost, path, simBody, u, tc.headers...)
		if rec.Code != tc.code {
			t.Errorf("%s: %d, want %d: %s", what, rec.Code, tc.code, rec.Body)
		}
		if tc.user == "bob" && !strings.Contains(rec.Body.String(), `user \"bob\" may not create pods in namespace \"team-a\"`) {
			t.Errorf("%s: the refusal does not say why: %s", what, rec.Body)
		}
	}
	if rec := serve(guarded, http.MethodGet, GroupVersionPath+"/namespaces/team-a/budgets/b/pendingpods", "", nil); rec.Code == http.StatusForbidden {
		t.Errorf("simulationAccess refused a pendingpods read: %s", rec.Body)
	}
}
