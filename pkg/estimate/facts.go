package estimate

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Facts is what Expect and Observe read of a pod: its owner, deadline, declared
// duration and the times it started, took its quota and finished. It is small and
// comparable, so that a cache that keeps no *corev1.Pod (the manager's pod informer
// keeps a compact view) can carry it, and pods with equal facts (the gated pods of one
// Job) can share one copy (unique.Make).
type Facts struct {
	Namespace string
	// OwnerKind and Owner are what made the pod, its generated suffix removed (ownerOf).
	OwnerKind, Owner string
	// Deadline is spec.activeDeadlineSeconds (0 when unset or not positive).
	Deadline time.Duration
	// Declared is the expected-duration annotation (0 when absent or unusable), and
	// Ignored why an annotation that is there was not used.
	Declared time.Duration
	Ignored  string
	// Started is status.startTime, Held when the pod took its quota (holdStart) and
	// Finished when its last container finished (zero when unknown).
	Started, Held, Finished time.Time
	// Ended is true for a Succeeded or Failed pod.
	Ended bool
}

// FactsOf reads a pod's Facts.
func FactsOf(pod *corev1.Pod) Facts {
	kind, owner := ownerOf(pod)
	f := Facts{
		Namespace: pod.Namespace,
		OwnerKind: kind,
		Owner:     owner,
		Started:   startTime(pod),
		Held:      holdStart(pod),
		Finished:  finishedAt(pod),
		Ended:     pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed,
	}
	if d := pod.Spec.ActiveDeadlineSeconds; d != nil && *d > 0 {
		f.Deadline = time.Duration(*d) * time.Second
	}
	f.Declared, f.Ignored = declaredDuration(pod)
	return f
}

// Compact returns f without what the pod's name gives back: a bare pod's owner is the
// pod itself, named after it (ownerOf), so pods that differ only in their names (the
// gated pods of one namespace, created one by one) have equal compact facts, and a
// cache can keep one copy of them (unique.Make). Expand restores them.
func (f Facts) Compact(podName string) Facts {
	if f.OwnerKind == "Pod" && f.Owner == stem(podName) {
		f.Owner = ""
	}
	return f
}

// Expand is the inverse of Compact for the pod named podName.
func (f Facts) Expand(podName string) Facts {
	if f.OwnerKind == "Pod" && f.Owner == "" {
		f.Owner = stem(podName)
	}
	return f
}
