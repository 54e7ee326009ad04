package admission

// How the tests send an AdmissionReview to the handler and read its answer.

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// answer is what the API server reads from an AdmissionReview response.
type answer struct {
	Allowed bool
	Code    int32
	Message string
	Patch   string
}

var podKind = metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}

// review is an AdmissionReview of pod from tenant, an ordinary user.
func review(t testing.TB, op admissionv1.Operation, pod *corev1.Pod) []byte {
	t.Helper()
	return reviewAs(t, op, pod, tenant)
}

func reviewAs(t testing.TB, op admissionv1.Operation, pod *corev1.Pod, user authenticationv1.UserInfo) []byte {
	t.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatalf("marshalling pod: %v", err)
	}
	return reviewRawAs(t, op, podKind, raw, user)
}

func reviewRaw(t testing.TB, op admissionv1.Operation, kind metav1.GroupVersionKind, object []byte) []byte {
	t.Helper()
	return reviewRawAs(t, op, kind, object, tenant)
}

func reviewRawAs(t testing.TB, op admissionv1.Operation, kind metav1.GroupVersionKind, object []byte, user authenticationv1.UserInfo) []byte {
	t.Helper()
	ar := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       "req-1",
			Kind:      kind,
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Namespace: "team-a",
			Operation: op,
			UserInfo:  user,
			Object:    runtime.RawExtension{Raw: object},
		},
	}
	b, err := json.Marshal(ar)
	if err != nil {
		t.Fatalf("marshalling review: %v", err)
	}
	return b
}

// serve posts body to h as the API server would and returns its answer.
func serve(t testing.TB, h http.Handler, body []byte, contentType string) answer {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("HTTP status %d, want 200 with the answer in the AdmissionReview", rec.Code)
	}
	var ar admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &ar); err != nil {
		t.Fatalf("decoding answer %s: %v", rec.Body, err)
	}
	if ar.Response == nil {
		t.Fatalf("answer %s has no response", rec.Body)
	}
	a := answer{Allowed: ar.Response.Allowed, Patch: string(ar.Response.Patch)}
	if r := ar.Response.Result; r != nil {
		a.Code, a.Message = r.Code, r.Message
	}
	return a
}
