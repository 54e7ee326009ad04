package gates

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

const (
	nodeSelectorPath = "/spec/nodeSelector"
	tolerationsPath  = "/spec/tolerations"
)

// SelectorConflictError says that a pod's nodeSelector already has one of a flavor's
// node labels with another value: the pod cannot run on that flavor's nodes, and an
// ungate patch must not overwrite what its owner asked for.
type SelectorConflictError struct {
	Key, PodValue, FlavorValue string
}

func (e *SelectorConflictError) Error() string {
	return fmt.Sprintf("the pod's nodeSelector has %s=%s, the flavor's node label is %s=%s",
		e.Key, e.PodValue, e.Key, e.FlavorValue)
}

// NodeSelectorOps returns the JSON patch ops that add labels to pod's nodeSelector: one
// `add` of /spec/nodeSelector with all of them when pod has none, else an `add` of each
// key pod does not have yet, in key order. A key pod has with the same value needs no
// op; a key it has with another value is a *SelectorConflictError, and no ops.
func NodeSelectorOps(pod *corev1.Pod, labels map[string]string) ([]Op, error) {
	if len(labels) == 0 {
		return nil, nil
	}
	if len(pod.Spec.NodeSelector) == 0 {
		return []Op{{Operation: "add", Path: nodeSelectorPath, Value: labels}}, nil
	}
	var ops []Op
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		v, has := pod.Spec.NodeSelector[k]
		switch {
		case !has:
			ops = append(ops, Op{Operation: "add", Path: nodeSelectorPath + "/" + EscapePointer(k), Value: labels[k]})
		case v != labels[k]:
			return nil, &SelectorConflictError{Key: k, PodValue: v, FlavorValue: labels[k]}
		}
	}
	return ops, nil
}

// TolerationOps returns the JSON patch ops that add tolerations to pod: one `add` of
// /spec/tolerations with all of them when pod has none, else an append at
// /spec/tolerations/- of each. A toleration pod already has (equal in every field) is
// not added again, nor is one listed twice in tolerations.
func TolerationOps(pod *corev1.Pod, tolerations []corev1.Toleration) []Op {
	var add []corev1.Toleration
	for _, t := range tolerations {
		if !hasToleration(pod.Spec.Tolerations, t) && !hasToleration(add, t) {
			add = append(add, t)
		}
	}
	if len(add) == 0 {
		return nil
	}
	if len(pod.Spec.Tolerations) == 0 {
		return []Op{{Operation: "add", Path: tolerationsPath, Value: add}}
	}
	ops := make([]Op, len(add))
	for i, t := range add {
		ops[i] = Op{Operation: "add", Path: tolerationsPath + "/-", Value: t}
	}
	return ops
}

// hasToleration reports whether ts holds a toleration equal to t in every field.
func hasToleration(ts []corev1.Toleration, t corev1.Toleration) bool {
	return slices.ContainsFunc(ts, func(o corev1.Toleration) bool {
		return o.Key == t.Key && o.Operator == t.Operator && o.Value == t.Value && o.Effect == t.Effect &&
			equalSeconds(o.TolerationSeconds, t.TolerationSeconds)
	})
}

func equalSeconds(a, b *int64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
