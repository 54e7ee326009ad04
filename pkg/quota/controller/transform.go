package controller

import (
	"slices"
	"time"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/gates"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/quota/depend"
)

// cachedPod is what the pod informer keeps of a pod (CompactPod is its transform): the
// core's view of it, computed once when the pod arrives, and the little an ungate patch
// needs besides. Even stripped to what accounting reads, a corev1.Pod is 1.2 KB of
// struct and 0.4 KB per container before any content; this is about 250 bytes, with
// its labels, usage, gates, nodeSelector and tolerations shared between pods that have
// equal ones.
//
// Objects in the cache are read-only, as client-go requires of informer objects.
type cachedPod struct {
	// view is quota.NewPod of the pod, before the time is known: a terminating pod
	// has ReleaseAt set even if its grace period is over (at decides), and Gated is
	// for the default gate (gated decides for the controller's).
	view quota.Pod
	// gates are the pod's scheduling gates, shared between pods with equal ones.
	gates []corev1.PodSchedulingGate
	// hasAnnotations: the pod has annotations. An ungate patch must then add its own
	// key by key, never replace /metadata/annotations as a whole (gates.AnnotateOps).
	hasAnnotations bool
	// placement is the pod's nodeSelector and tolerations, for an ungate patch on a
	// flavor; shared between pods with equal ones, nil for a pod with neither.
	placement *podPlacement
	// claims are the pod's spec.resourceClaims, resolved (nil for none): the core's
	// view gets what they charge when the pod is given to it (claimIndex).
	claims []quota.PodClaim
	// extended are its requests that a DeviceClass may back (quota.ExtendedRequests; nil
	// for none): the core's view gets the devices of those a class backs (claimIndex).
	extended corev1.ResourceList
	// facts are what the estimator reads of the pod (its owner, deadline, declared
	// duration, start and end), compact (estimate.Facts.Compact: a bare pod's own name
	// left out) and shared between pods with equal ones: the gated pods of one Job, or
	// of one namespace's bare pods, share one copy (the estimator; read them with
	// factsOf).
	facts unique.Handle[estimate.Facts]
	// owner is the pod's Job or Deployment (depend.OwnerOf), kept only for a pod that
	// waits for something (quotagate.io/wait-for): the workloads' graph, in which the
	// manager finds cycles, is made of those (dependencyIndex).
	owner *depend.Dependency
	// condition is the quotagate condition the pod carries while it waits, nil for
	// none (podConditions): few pods carry one.
	condition *condition
}

var _ runtime.Object = (*cachedPod)(nil)

// GetObjectKind: cached pods carry no type information; nothing serialises them.
func (p *cachedPod) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies the struct; what it points to is shared and never written.
func (p *cachedPod) DeepCopyObject() runtime.Object {
	c := *p
	return &c
}

// GetObjectMeta gives the informer's store and its namespace index the pod's key.
func (p *cachedPod) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: p.view.Namespace, Name: p.view.Name, UID: p.view.UID, ResourceVersion: p.view.ResourceVersion}
}

// at returns the core's view of the pod at now, for the controller's gate.
func (p *cachedPod) at(now time.Time, gate string) quota.Pod {
	v := p.view
	if !v.ReleaseAt.IsZero() && now.After(v.ReleaseAt) {
		v.Terminal, v.ReleaseAt = true, time.Time{}
	}
	v.Gated = gates.Contains(p.gates, gate)
	return v
}

// someAnnotations stands for a pod's annotations in patchTarget: that there are some
// is all an ungate patch needs to know.
var someAnnotations = map[string]string{"quotagate.io/cached-pod-has-annotations": "true"}

// patchTarget is the pod as far as an ungate patch reads it (gates.UngatePatchOnFlavor):
// its key, version, gates, whether it has annotations, its nodeSelector and tolerations.
func (p *cachedPod) patchTarget() *corev1.Pod {
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: p.view.Namespace, Name: p.view.Name, UID: p.view.UID,
			ResourceVersion: p.view.ResourceVersion,
		},
		Spec: corev1.PodSpec{SchedulingGates: p.gates},
	}
	if p.hasAnnotations {
		pod.Annotations = someAnnotations
	}
	if p.placement != nil {
		pod.Spec.NodeSelector, pod.Spec.Tolerations = p.placement.nodeSelector, p.placement.tolerations
	}
	return pod
}

// factsOf is the pod's estimate.Facts.
func (p *cachedPod) factsOf() estimate.Facts { return p.facts.Value().Expand(p.view.Name) }

// CompactPod is the pod informer's transform: it keeps a cachedPod instead of the pod,
// so the cache stays small with tens of thousands of pods. Pod resource math
// (quota.PodUsage), ordering and grouping read the full pod here, once.
func CompactPod(obj any) (any, error) {
	switch pod := obj.(type) {
	case *corev1.Pod:
		return compactPod(pod), nil
	case *cachedPod:
		return pod, nil
	default:
		// Tombstones pass through unchanged: they hold what the store held.
		return obj, nil
	}
}

// compactSimulated is compactPod for a what-if's pod, which is not in the cluster:
// nothing of it enters the tables that real pods share (quota.NewPodUnshared), and it
// has no placement, which only an ungate patch reads.
func compactSimulated(pod *corev1.Pod) *cachedPod {
	return &cachedPod{
		view:     quota.NewPodUnshared(pod, "", time.Time{}),
		gates:    slices.Clone(pod.Spec.SchedulingGates),
		claims:   quota.PodClaims(pod),
		extended: quota.ExtendedRequests(pod),
		facts:    unique.Make(estimate.FactsOf(pod).Compact(pod.Name)),
	}
}

func compactPod(pod *corev1.Pod) *cachedPod {
	return &cachedPod{
		// Gated and Terminal are decided when the view is read (at), with the
		// controller's gate and the time of reading.
		view:           quota.NewPod(pod, "", time.Time{}),
		gates:          quota.ShareGates(pod.Spec.SchedulingGates),
		hasAnnotations: len(pod.Annotations) > 0,
		placement:      placementOf(pod),
		claims:         quota.PodClaims(pod),
		extended:       quota.ExtendedRequests(pod),
		facts:          unique.Make(estimate.FactsOf(pod).Compact(pod.Name)),
		condition:      conditionOf(pod),
		owner:          dependencyOwner(pod),
	}
}

// dependencyOwner is the pod's Job or Deployment when it waits for anything, else nil.
func dependencyOwner(pod *corev1.Pod) *depend.Dependency {
	if _, waits := pod.Annotations[v1alpha1.WaitForAnnotation]; !waits {
		return nil
	}
	if d, ok := depend.OwnerOf(pod); ok {
		return &d
	}
	return nil
}
