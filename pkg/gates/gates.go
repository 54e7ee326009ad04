package gates

import (
	corev1 "k8s.io/api/core/v1"
)

// HasGate reports whether pod carries the scheduling gate named gate.
func HasGate(pod *corev1.Pod, gate string) bool {
	return Contains(pod.Spec.SchedulingGates, gate)
}

// Contains reports whether the scheduling gates gs include the one named gate, for
// callers that keep a pod's gates without the pod.
func Contains(gs []corev1.PodSchedulingGate, gate string) bool {
	return indexIn(gs, gate) >= 0
}

// Gate appends the scheduling gate named gate to pod, and reports whether it
// changed the pod (false when the gate was already there).
func Gate(pod *corev1.Pod, gate string) bool {
	if HasGate(pod, gate) {
		return false
	}
	pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: gate})
	return true
}

// Ungate removes the scheduling gate named gate from pod, keeping the order of
// the other gates, and reports whether it changed the pod.
func Ungate(pod *corev1.Pod, gate string) bool {
	i := index(pod, gate)
	if i < 0 {
		return false
	}
	gs := pod.Spec.SchedulingGates
	pod.Spec.SchedulingGates = append(gs[:i:i], gs[i+1:]...)
	if len(pod.Spec.SchedulingGates) == 0 {
		// The API server drops an empty list; so do we, so that a pod
		// compares equal to its round-tripped self.
		pod.Spec.SchedulingGates = nil
	}
	return true
}

// index returns the position of the gate named gate in pod's scheduling gates,
// or -1. The API server rejects duplicate gate names, so the first match is the
// only one.
func index(pod *corev1.Pod, gate string) int {
	return indexIn(pod.Spec.SchedulingGates, gate)
}

func indexIn(gs []corev1.PodSchedulingGate, gate string) int {
	for i, g := range gs {
		if g.Name == gate {
			return i
		}
	}
	return -1
}
