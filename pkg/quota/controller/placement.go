package controller

import (
	"slices"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/quotagate/quotagate/pkg/quota"
)

// podPlacement is what an ungate patch on a flavor reads of a pod besides its gates:
// its spec.nodeSelector and spec.tolerations, so that the patch adds only the labels and
// tolerations the pod lacks, key by key when it has some (gates.UngatePatchOnFlavor).
//
// Nearly every pod has tolerations (the API server's DefaultTolerationSeconds plugin
// adds two), and pods of one template have equal ones, so a cached pod keeps a pointer
// to a placement shared by the pods with an equal nodeSelector and equal tolerations:
// 8 bytes per pod. It is nil for a pod with neither. A placement is read-only.
type podPlacement struct {
	nodeSelector map[string]string
	tolerations  []corev1.Toleration
}

// maxSharedPlacements bounds the table, as quota's tables are bounded: past it, each pod
// keeps a placement of its own.
const maxSharedPlacements = 4096

var sharedPlacements struct {
	mu sync.Mutex
	m  map[string]*podPlacement
}

// placementOf returns the placement of pod, shared with the pods that have an equal one;
// nil when pod has neither a nodeSelector nor tolerations. One already shared costs no
// allocation.
func placementOf(pod *corev1.Pod) *podPlacement {
	selector, tolerations := pod.Spec.NodeSelector, pod.Spec.Tolerations
	if len(selector) == 0 && len(tolerations) == 0 {
		return nil
	}
	var buf [512]byte
	key := appendPlacementKey(buf[:0], selector, tolerations)
	t := &sharedPlacements
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.m[string(key)]; ok {
		return p
	}
	p := &podPlacement{nodeSelector: quota.ShareLabels(selector), tolerations: shareTolerations(tolerations)}
	if len(t.m) < maxSharedPlacements {
		if t.m == nil {
			t.m = map[string]*podPlacement{}
		}
		t.m[string(key)] = p
	}
	return p
}

// appendPlacementKey appends an exact form of a nodeSelector and a list of tolerations to
// key: the selector's entries in key order, then each toleration's fields in order. Label
// keys and values and toleration fields cannot hold a NUL, which separates them.
func appendPlacementKey(key []byte, selector map[string]string, tolerations []corev1.Toleration) []byte {
	var keysBuf [16]string
	keys := keysBuf[:0]
	for k := range selector {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		key = append(append(append(append(key, k...), 0), selector[k]...), 0)
	}
	key = append(key, 1)
	for _, t := range tolerations {
		key = append(append(key, t.Key...), 0)
		key = append(append(key, t.Operator...), 0)
		key = append(append(key, t.Value...), 0)
		key = append(append(key, t.Effect...), 0)
		if t.TolerationSeconds != nil {
			key = strconv.AppendInt(append(key, 's'), *t.TolerationSeconds, 10)
		}
		key = append(key, 1)
	}
	return key
}

// shareTolerations copies tolerations with their strings shared (nil for none): the
// decoded pod they come from is dropped once the informer has transformed it.
func shareTolerations(tolerations []corev1.Toleration) []corev1.Toleration {
	if len(tolerations) == 0 {
		return nil
	}
	out := make([]corev1.Toleration, len(tolerations))
	for i, t := range tolerations {
		out[i] = corev1.Toleration{
			Key: quota.ShareString(t.Key), Operator: corev1.TolerationOperator(quota.ShareString(string(t.Operator))),
			Value: quota.ShareString(t.Value), Effect: corev1.TaintEffect(quota.ShareString(string(t.Effect))),
		}
		if t.TolerationSeconds != nil {
			out[i].TolerationSeconds = ptr.To(*t.TolerationSeconds)
		}
	}
	return out
}
