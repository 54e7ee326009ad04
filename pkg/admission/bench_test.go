package admission

import (
	"encoding/json"
	"fmt"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// benchPod is a Deployment's pod of realistic size: two containers with
// resources, env and probes, labels and annotations.
func benchPod() *corev1.Pod {
	pod := makePod().Owner("apps/v1", "ReplicaSet", "owner", true).Annotation("prometheus.io/scrape", "true").Obj()
	pod.Labels = map[string]string{"app": "web", "pod-template-hash": "5d9c7b8f6"}
	c := corev1.Container{
		Name:  "app",
		Image: "registry.example.com/team-a/web:1.2.3",
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
		},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz"}}},
	}
	for i := range 20 {
		c.Env = append(c.Env, corev1.EnvVar{Name: fmt.Sprintf("VAR_%d", i), Value: "some-value"})
	}
	sidecar := c
	sidecar.Name = "proxy"
	pod.Spec.Containers = []corev1.Container{c, sidecar}
	return pod
}

// BenchmarkPodGaterHandle measures the handler alone: decoding the pod,
// deciding and building the ops.
func BenchmarkPodGaterHandle(b *testing.B) {
	raw, err := json.Marshal(benchPod())
	if err != nil {
		b.Fatal(err)
	}
	g := NewPodGater(quotaGate, newTestMetrics(b))
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "req", Kind: podKind, Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw},
	}}
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if resp := g.Handle(ctx, req); len(resp.Patches) != 1 {
			b.Fatalf("got %d patch ops, want 1", len(resp.Patches))
		}
	}
}

// BenchmarkWebhookServeHTTP measures one whole AdmissionReview in and out,
// as served over HTTP (without TLS).
func BenchmarkWebhookServeHTTP(b *testing.B) {
	body := review(b, admissionv1.Create, benchPod())
	h := NewWebhook(NewPodGater(quotaGate, newTestMetrics(b)))
	b.ReportAllocs()
	for b.Loop() {
		if a := serve(b, h, body, "application/json"); a.Patch == "" {
			b.Fatalf("answer %+v has no patch", a)
		}
	}
}
