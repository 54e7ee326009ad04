package figures

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestServeBareGate(t *testing.T) {
	review := func(pod string) string {
		return `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1","object":` + pod + `}}`
	}
	for _, tc := range []struct {
		name, body string
		wantStatus int
		wantPatch  string
	}{
		{"a pod without gates gets the list", review(`{"spec":{"containers":[]}}`), http.StatusOK,
			`[{"op":"add","path":"/spec/schedulingGates","value":[{"name":"quotagate.io/budget"}]}]`},
		{"a pod with gates gets one more", review(`{"spec":{"schedulingGates":[{"name":"hold"}]}}`), http.StatusOK,
			`[{"op":"add","path":"/spec/schedulingGates/-","value":{"name":"quotagate.io/budget"}}]`},
		{"not JSON", `{`, http.StatusBadRequest, ""},
		{"a review without a request", `{"kind":"AdmissionReview"}`, http.StatusBadRequest, ""},
		{"an object that is not a pod", review(`{"spec":"x"}`), http.StatusBadRequest, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			serveBareGate(rec, httptest.NewRequest(http.MethodPost, "/gate", strings.NewReader(tc.body)))
			if rec.Code != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.wantStatus, rec.Body)
			}
			if tc.wantStatus != http.StatusOK {
				return
			}
			var got admissionv1.AdmissionReview
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			r := got.Response
			if r == nil || r.UID != types.UID("u-1") || !r.Allowed || r.PatchType == nil || *r.PatchType != admissionv1.PatchTypeJSONPatch || string(r.Patch) != tc.wantPatch {
				t.Errorf("response %+v, want allowed, uid u-1 and patch %s", r, tc.wantPatch)
			}
			if got.Request != nil {
				t.Errorf("the response echoes the request back")
			}
		})
	}
}
