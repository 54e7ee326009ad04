package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/quotagate/quotagate/internal/loglevel"
	"github.com/quotagate/quotagate/pkg/gates"
)

// Path is where the webhook server serves PodGater.
const Path = "/mutate-v1-pod"

// MirrorPodAnnotation marks a static pod's mirror in the API server; the
// kubelet runs it whatever the API server says, so gating it would only lie.
const MirrorPodAnnotation = corev1.MirrorPodAnnotationKey

// SkipReason says why a pod was not gated. It is the `reason` label of
// quotagate_webhook_pods_skipped_total.
type SkipReason string

// The reasons PodGater lets a pod through without a gate. The three shapes
// (mirror, bound, exempt DaemonSet) are skipped only for the identity that
// creates them legitimately (see identity.go): anyone can write an
// annotation, a nodeName or an ownerReference, and a tenant must not use them
// to run outside the queue.
const (
	// SkipNotCreate: the request is not a CREATE.
	SkipNotCreate SkipReason = "not-create"
	// SkipNotPod: the request is not for a core/v1 Pod.
	SkipNotPod SkipReason = "not-pod"
	// SkipMirrorPod: a node created a static pod's mirror.
	SkipMirrorPod SkipReason = "mirror-pod"
	// SkipNodeName: a node created a pod already bound to a node; a gate
	// would be refused.
	SkipNodeName SkipReason = "node-name"
	// SkipExemptDaemonSet: the DaemonSet controller created a pod of a
	// DaemonSet the administrator exempted (see DaemonSetRef). Other
	// DaemonSets' pods are gated: a tenant with edit may create DaemonSets.
	SkipExemptDaemonSet SkipReason = "exempt-daemonset"
	// SkipAlreadyGated: the pod carries the gate already.
	SkipAlreadyGated SkipReason = "already-gated"
)

// SkipReasonFor returns why pod, created by user in pod.Namespace, must not
// be gated with gate, or "" when it must be; exempt are the DaemonSets the
// administrator exempted. A pod with spec.nodeName that is not skipped cannot
// be gated either: PodGater refuses it (see boundPodRefusal).
//
// Keep it equivalent to the matchConditions in config/webhook and the chart:
// the API server does not call the webhook for the pods skipped here.
func SkipReasonFor(pod *corev1.Pod, user authenticationv1.UserInfo, gate string, exempt ...DaemonSetRef) SkipReason {
	switch {
	case hasKey(pod.Annotations, MirrorPodAnnotation) && isNode(user):
		return SkipMirrorPod
	case pod.Spec.NodeName != "" && isNode(user):
		return SkipNodeName
	case isExemptDaemonSetPod(pod, pod.Namespace, user, exempt):
		return SkipExemptDaemonSet
	case gates.HasGate(pod, gate):
		return SkipAlreadyGated
	}
	return ""
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// The webhook configuration for PodGater. controller-gen writes it to
// config/webhook/manifests.yaml; config/webhook/kustomization.yaml adds the
// namespaceSelector and matchConditions that markers cannot express.
// reinvocationPolicy=IfNeeded: if a later webhook rewrites the pod's gates,
// the API server asks again and the gate is put back.
//
// +kubebuilder:webhookconfiguration:mutating=true,name=quotagate-webhook
// +kubebuilder:webhook:path=/mutate-v1-pod,mutating=true,failurePolicy=fail,sideEffects=None,groups="",resources=pods,verbs=create,versions=v1,name=gate.quotagate.io,admissionReviewVersions=v1,matchPolicy=Equivalent,reinvocationPolicy=IfNeeded,timeoutSeconds=10,serviceName=quotagate-webhook,serviceNamespace=quotagate-system

// PodGater adds the quotagate scheduling gate to new pods. It is a raw
// admission.Handler: its answer is the explicit patch ops from gates.AddOps,
// or a refusal for a pod it cannot gate (one bound to a node by an identity
// that is not a node).
type PodGater struct {
	gate    string
	exempt  []DaemonSetRef
	metrics *Metrics
}

var _ admission.Handler = &PodGater{}

// NewPodGater returns a handler that adds the scheduling gate named gate to
// every pod but those SkipReasonFor skips, the pods of the exempt DaemonSets
// among them, and records what it did in m.
func NewPodGater(gate string, m *Metrics, exempt ...DaemonSetRef) *PodGater {
	return &PodGater{gate: gate, exempt: slices.Clone(exempt), metrics: m}
}

// Handle answers one admission request.
func (g *PodGater) Handle(ctx context.Context, req admission.Request) admission.Response {
	resp, result := g.handle(ctx, req)
	g.metrics.observe(result)
	return resp
}

func (g *PodGater) handle(ctx context.Context, req admission.Request) (admission.Response, string) {
	logger := log.FromContext(ctx)
	if req.Operation != admissionv1.Create {
		return g.skip(ctx, SkipNotCreate), resultSkipped
	}
	if req.Kind.Group != "" || req.Kind.Kind != "Pod" {
		return g.skip(ctx, SkipNotPod), resultSkipped
	}
	pod, err := decodePod(req.Object.Raw)
	if err != nil {
		logger.Error(err, "Refusing undecodable pod")
		return admission.Errored(http.StatusBadRequest, err), resultErrored
	}
	if pod.Namespace == "" {
		pod.Namespace = req.Namespace
	}
	if reason := SkipReasonFor(pod, req.UserInfo, g.gate, g.exempt...); reason != "" {
		return g.skip(ctx, reason), resultSkipped
	}
	if pod.Spec.NodeName != "" {
		// The API server refuses a scheduling gate beside spec.nodeName, and
		// a pod bound by anyone but a node must not run outside the queue.
		logger.V(loglevel.Events).Info("Refusing pod bound to a node by another identity",
			"nodeName", pod.Spec.NodeName, "user", req.UserInfo.Username)
		return admission.Denied(boundPodRefusal(pod, req.Namespace, req.UserInfo.Username, g.gate)), resultDenied
	}
	logger.V(loglevel.Events).Info("Gating pod", "gate", g.gate, "generateName", pod.GenerateName)
	return admission.Patched("", gates.AddOps(pod, g.gate)...), resultGated
}

func (g *PodGater) skip(ctx context.Context, reason SkipReason) admission.Response {
	g.metrics.podsSkipped.WithLabelValues(string(reason)).Inc()
	log.FromContext(ctx).V(loglevel.Details).Info("Not gating pod", "reason", reason)
	return admission.Allowed(string(reason))
}

// podFields is the part of a pod the gating decision reads; decoding only
// these keeps the handler's cost independent of the pod's size.
type podFields struct {
	Metadata struct {
		Namespace       string                  `json:"namespace"`
		GenerateName    string                  `json:"generateName"`
		Annotations     map[string]string       `json:"annotations"`
		OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
	} `json:"metadata"`
	Spec struct {
		NodeName        string                     `json:"nodeName"`
		SchedulingGates []corev1.PodSchedulingGate `json:"schedulingGates"`
	} `json:"spec"`
}

var errNoObject = errors.New("admission request carries no object")

func decodePod(raw []byte) (*corev1.Pod, error) {
	if len(raw) == 0 {
		return nil, errNoObject
	}
	var f podFields
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("decoding pod: %w", err)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       f.Metadata.Namespace,
			GenerateName:    f.Metadata.GenerateName,
			Annotations:     f.Metadata.Annotations,
			OwnerReferences: f.Metadata.OwnerReferences,
		},
		Spec: corev1.PodSpec{
			NodeName:        f.Spec.NodeName,
			SchedulingGates: f.Spec.SchedulingGates,
		},
	}, nil
}

// NewWebhook wraps h for a webhook server. A panic in h becomes an error
// answer for that request (HTTP 500 in the AdmissionReview) rather than a
// crashed server; it is counted in controller_runtime_webhook_panics_total.
func NewWebhook(h admission.Handler) *admission.Webhook {
	return (&admission.Webhook{Handler: h}).WithRecoverPanic(true)
}
