package figures

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// bareWebhookName is the configuration registerBareWebhook creates.
const bareWebhookName = "quotagate-bench-bare"

// bareGatePatch adds the quotagate gate to a pod's gates, or creates the list with it.
var bareGatePatch = map[bool][]byte{
	true:  []byte(`[{"op":"add","path":"/spec/schedulingGates/-","value":{"name":"` + v1alpha1.SchedulingGate + `"}}]`),
	false: []byte(`[{"op":"add","path":"/spec/schedulingGates","value":[{"name":"` + v1alpha1.SchedulingGate + `"}]}]`),
}

// serveBareGate answers an AdmissionReview with the gate added and nothing else: no skip
// rules, no metrics, no decoding of the pod beyond whether it has gates.
func serveBareGate(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(w, fmt.Sprintf("not an AdmissionReview request: %v", err), http.StatusBadRequest)
		return
	}
	var pod struct {
		Spec struct {
			SchedulingGates []json.RawMessage `json:"schedulingGates"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(review.Request.Object.Raw, &pod); err != nil {
		http.Error(w, fmt.Sprintf("not a pod: %v", err), http.StatusBadRequest)
		return
	}
	review.Response = &admissionv1.AdmissionResponse{
		UID: review.Request.UID, Allowed: true,
		PatchType: ptr.To(admissionv1.PatchTypeJSONPatch), Patch: bareGatePatch[len(pod.Spec.SchedulingGates) > 0],
	}
	review.Request = nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

// registerBareWebhook serves, on 127.0.0.1 in this process, the least a webhook that
// gates pods can be (serveBareGate, over TLS and HTTP/1.1 as the shipped webhook serves
// by default), registers it for ns by name with no reinvocation, and waits until creates
// in ns come back gated. Figure 3 measures it beside the shipped webhook, so the run
// shows which part of the webhook's cost is the API server's and the round trip's. The
// returned func unregisters it, waits until creates come back ungated, and stops it.
func (e *Env) registerBareWebhook(ctx context.Context, ns string) (func(context.Context) error, error) {
	certPEM, keyPEM, err := LoopbackCert()
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"},
	})
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(serveBareGate)}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	stopServing := func() {
		_ = srv.Close()
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(os.Stderr, "bench: the bare webhook stopped with: %v\n", err)
		}
	}
	api := e.Client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: bareWebhookName},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "bare.bench.quotagate.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				URL: ptr.To("https://" + ln.Addr().String() + "/gate"), CABundle: certPEM,
			},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			ReinvocationPolicy:      ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
			TimeoutSeconds:          ptr.To[int32](10),
		}},
	}
	unregister := func(ctx context.Context) error {
		defer stopServing()
		return e.unregisterWebhookConfig(ctx, bareWebhookName, ns)
	}
	if _, err := api.Create(ctx, mwc, metav1.CreateOptions{}); err != nil {
		stopServing()
		return nil, fmt.Errorf("registering the bare webhook: %w", err)
	}
	if err := e.waitWebhookCalled(ctx, ns, true); err != nil {
		_ = unregister(ctx)
		return nil, err
	}
	return unregister, nil
}
