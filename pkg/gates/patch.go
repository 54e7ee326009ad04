package gates

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
)

// Op is one JSON patch operation. It is controller-runtime's type, so the ops
// can be handed to admission.Patched as they are.
type Op = jsonpatch.Operation

const schedulingGatesPath = "/spec/schedulingGates"

// AddOps returns the JSON patch ops that add the scheduling gate named gate to
// pod: the whole /spec/schedulingGates list when the pod has no gates yet, an
// append at /spec/schedulingGates/- otherwise, and nothing when the pod already
// carries the gate.
func AddOps(pod *corev1.Pod, gate string) []Op {
	if HasGate(pod, gate) {
		return nil
	}
	if len(pod.Spec.SchedulingGates) == 0 {
		return []Op{{
			Operation: "add",
			Path:      schedulingGatesPath,
			Value:     []corev1.PodSchedulingGate{{Name: gate}},
		}}
	}
	return []Op{{
		Operation: "add",
		Path:      schedulingGatesPath + "/-",
		Value:     corev1.PodSchedulingGate{Name: gate},
	}}
}

// RemoveOps returns the JSON patch ops that remove the scheduling gate named
// gate from pod: a `test` that the gate's name is still at the index it has in
// pod, then a `remove` of that index. Other gates are left as they are. It
// returns nothing when pod does not carry the gate.
func RemoveOps(pod *corev1.Pod, gate string) []Op {
	i := index(pod, gate)
	if i < 0 {
		return nil
	}
	at := schedulingGatesPath + "/" + strconv.Itoa(i)
	return []Op{
		{Operation: "test", Path: at + "/name", Value: gate},
		{Operation: "remove", Path: at},
	}
}

// AnnotateOps returns the JSON patch ops that set annotations on pod: one `add`
// of /metadata/annotations with all of them when pod has no annotations, else
// an `add` of each key (which replaces a value already there), in key order.
func AnnotateOps(pod *corev1.Pod, annotations map[string]string) []Op {
	if len(annotations) == 0 {
		return nil
	}
	if len(pod.Annotations) == 0 {
		return []Op{{Operation: "add", Path: "/metadata/annotations", Value: annotations}}
	}
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	ops := make([]Op, 0, len(keys))
	for _, k := range keys {
		ops = append(ops, Op{
			Operation: "add",
			Path:      "/metadata/annotations/" + EscapePointer(k),
			Value:     annotations[k],
		})
	}
	return ops
}

// UngatePatch returns the JSON patch that removes the scheduling gate named
// gate from pod (see RemoveOps) and sets annotations on it (see AnnotateOps),
// ready for client.RawPatch(types.JSONPatchType, patch). It returns false, and
// no patch, when pod does not carry the gate.
//
// The patch is fenced on pod as the caller saw it: it tests pod's
// resourceVersion (when it has one) before anything else, so it can apply only
// to that version of the pod. A patch whose answer was lost can therefore never
// land later on a newer version: once the pod is seen at a newer version, still
// gated, the patch is known not to have applied. The fence also keeps a stale
// copy from replacing annotations written since (AnnotateOps adds the whole map
// when pod shows none), and the gate's `test` refuses the patch if the gate has
// moved.
func UngatePatch(pod *corev1.Pod, gate string, annotations map[string]string) ([]byte, bool) {
	// Without node labels there is no selector to conflict with.
	patch, ok, _ := UngatePatchOnFlavor(pod, gate, annotations, nil, nil)
	return patch, ok
}

// UngatePatchOnFlavor is UngatePatch for a pod admitted on a flavor: after the gate's
// removal and the annotations, the same patch adds the flavor's node labels to pod's
// nodeSelector (see NodeSelectorOps) and its tolerations to pod's (see TolerationOps),
// all under the one resourceVersion fence. Kubernetes lets nodeSelector grow only while
// the pod is gated (KEP-3838), so the additions must be part of the patch that removes
// the gate. With no labels and no tolerations the patch is UngatePatch's, byte for byte.
//
// It returns false and no patch when pod does not carry the gate, and a
// *SelectorConflictError and no patch when pod's nodeSelector has one of the labels with
// another value: the pod cannot be put on this flavor, and the patch must not overwrite
// its owner's selector.
func UngatePatchOnFlavor(pod *corev1.Pod, gate string, annotations, nodeLabels map[string]string,
	tolerations []corev1.Toleration) ([]byte, bool, error) {
	ops := RemoveOps(pod, gate)
	if ops == nil {
		return nil, false, nil
	}
	selector, err := NodeSelectorOps(pod, nodeLabels)
	if err != nil {
		return nil, false, err
	}
	if pod.ResourceVersion != "" {
		ops = append([]Op{{Operation: "test", Path: "/metadata/resourceVersion", Value: pod.ResourceVersion}}, ops...)
	}
	ops = append(ops, AnnotateOps(pod, annotations)...)
	ops = append(ops, selector...)
	ops = append(ops, TolerationOps(pod, tolerations)...)
	patch, err := json.Marshal(ops)
	if err != nil {
		// Strings, string maps, gate and toleration structs always marshal.
		panic(fmt.Sprintf("marshalling ungate patch: %v", err))
	}
	return patch, true, nil
}

// EscapePointer escapes s for use as one reference token of a JSON pointer
// (RFC 6901): "~" becomes "~0" and "/" becomes "~1".
func EscapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
