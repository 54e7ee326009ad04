package controller

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/pkg/quota"
)

// keptAnnotationPrefix: the only annotations the pod cache keeps are quotagate's own.
const keptAnnotationPrefix = "quotagate.io/"

// hasOtherAnnotations marks, in a stripped pod, that the real pod has annotations we
// dropped. An ungate patch must then add its annotations key by key, never replace
// /metadata/annotations as a whole.
const hasOtherAnnotations = "quotagate.io/internal-has-annotations"

// StripPod is the pod informer's transform: it keeps only what accounting, ordering,
// ungating and events need, so the cache stays small with tens of thousands of pods.
// Label maps, resource lists and the strings many pods repeat (namespace, label keys
// and values, container names, gates) are shared between pods (quota.ShareLabels):
// objects in the cache are read-only.
func StripPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		// Tombstones and other types pass through unchanged.
		return obj, nil
	}
	out := &corev1.Pod{
		TypeMeta: pod.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:                       pod.Name,
			Namespace:                  quota.ShareString(pod.Namespace),
			UID:                        pod.UID,
			ResourceVersion:            pod.ResourceVersion,
			CreationTimestamp:          pod.CreationTimestamp,
			DeletionTimestamp:          pod.DeletionTimestamp,
			DeletionGracePeriodSeconds: pod.DeletionGracePeriodSeconds,
			Labels:                     quota.ShareLabels(pod.Labels),
			Annotations:                keepAnnotations(pod.Annotations),
		},
		Spec: corev1.PodSpec{
			NodeName:          pod.Spec.NodeName,
			Priority:          pod.Spec.Priority,
			SchedulingGates:   shareGates(pod.Spec.SchedulingGates),
			Overhead:          quota.ShareResourceList(pod.Spec.Overhead),
			Resources:         shareResources(pod.Spec.Resources),
			Containers:        stripContainers(pod.Spec.Containers),
			InitContainers:    stripContainers(pod.Spec.InitContainers),
			RestartPolicy:     pod.Spec.RestartPolicy,
			PriorityClassName: quota.ShareString(pod.Spec.PriorityClassName),
		},
		Status: corev1.PodStatus{Phase: pod.Status.Phase},
	}
	return out, nil
}

func keepAnnotations(in map[string]string) map[string]string {
	if len(in) == 0 {
		return nil
	}
	out := map[string]string{}
	for k, v := range in {
		if strings.HasPrefix(k, keptAnnotationPrefix) {
			out[k] = v
		} else {
			out[hasOtherAnnotations] = "true"
		}
	}
	return quota.ShareLabels(out) // most pods keep only the marker, or nothing
}

// stripContainers keeps the fields that pod resource math reads: resources, and
// restartPolicy (an init container with restartPolicy Always is a sidecar).
func stripContainers(in []corev1.Container) []corev1.Container {
	if in == nil {
		return nil
	}
	out := make([]corev1.Container, len(in))
	for i, c := range in {
		out[i] = corev1.Container{
			Name:          quota.ShareString(c.Name),
			Resources:     *shareResources(&c.Resources),
			RestartPolicy: c.RestartPolicy,
		}
	}
	return out
}

// shareResources keeps requests, limits and claims, with shared lists.
func shareResources(r *corev1.ResourceRequirements) *corev1.ResourceRequirements {
	if r == nil {
		return nil
	}
	return &corev1.ResourceRequirements{
		Requests: quota.ShareResourceList(r.Requests),
		Limits:   quota.ShareResourceList(r.Limits),
		Claims:   r.Claims,
	}
}

// shareGates keeps the gates with shared names.
func shareGates(in []corev1.PodSchedulingGate) []corev1.PodSchedulingGate {
	if in == nil {
		return nil
	}
	out := make([]corev1.PodSchedulingGate, len(in))
	for i, g := range in {
		out[i] = corev1.PodSchedulingGate{Name: quota.ShareString(g.Name)}
	}
	return out
}
