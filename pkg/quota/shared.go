package quota

import (
	"maps"
	"slices"
	"strconv"
	"sync"
	"unique"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Tens of thousands of gated pods are usually a few templates: their label maps and
// resource lists are equal, entry for entry. The manager keeps one copy of each
// (shared by the informer's cache and the core) instead of one per pod.
//
// A shared map is read-only: nothing may write to it. The core never writes to a pod's
// labels or usage, and the informer's objects are read-only already.

// maxShared bounds each table. Past it, maps are kept per pod as before: the tables
// cannot grow without limit when every pod is different, and the entries of pods that
// are gone cost at most this many maps.
const maxShared = 4096

type sharedTable[V any] struct {
	mu sync.Mutex
	m  map[string]V
}

// get returns the shared value for key, storing fresh() the first time; ok is false
// when the table is full and key is not in it. A key that is found costs no
// allocation: only a stored key is copied to a string.
func (t *sharedTable[V]) get(key []byte, fresh func() V) (v V, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.m[string(key)]; ok {
		return v, true
	}
	if len(t.m) >= maxShared {
		return v, false
	}
	if t.m == nil {
		t.m = map[string]V{}
	}
	v = fresh()
	t.m[string(key)] = v
	return v, true
}

var (
	sharedLabels sharedTable[map[string]string]
	sharedLists  sharedTable[corev1.ResourceList]
	sharedGates  sharedTable[[]corev1.PodSchedulingGate]
	sharedTols   sharedTable[[]corev1.Toleration]
)

// ShareString returns s, backed by one copy per distinct value in the process.
func ShareString(s string) string { return unique.Make(s).Value() }

// ShareLabels returns a map equal to labels that pods with the same labels share. The
// result must not be modified; nil and empty maps give nil.
func ShareLabels(labels map[string]string) map[string]string {
	if len(labels) == 0 {
		return nil
	}
	var keysBuf [16]string
	keys := keysBuf[:0]
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var buf [512]byte
	key := buf[:0]
	for _, k := range keys {
		key = append(append(key, k...), 0)
		key = append(append(key, labels[k]...), 0)
	}
	v, ok := sharedLabels.get(key, func() map[string]string {
		out := make(map[string]string, len(labels))
		for k, v := range labels {
			out[ShareString(k)] = ShareString(v)
		}
		return out
	})
	if !ok {
		return maps.Clone(labels)
	}
	return v
}

// ShareResourceList returns a list equal to l that pods with the same list share. The
// result must not be modified; nil and empty lists give nil.
func ShareResourceList(l corev1.ResourceList) corev1.ResourceList {
	if len(l) == 0 {
		return nil
	}
	v, ok := sharedLists.get(appendList(nil, l), func() corev1.ResourceList {
		out := make(corev1.ResourceList, len(l))
		for name, q := range l {
			out[corev1.ResourceName(ShareString(string(name)))] = q.DeepCopy()
		}
		return out
	})
	if !ok {
		return l
	}
	return v
}

// ShareGates returns a list of scheduling gates equal to gates that pods with the same
// gates share. The result must not be modified; nil and empty lists give nil.
func ShareGates(gates []corev1.PodSchedulingGate) []corev1.PodSchedulingGate {
	if len(gates) == 0 {
		return nil
	}
	var key []byte
	for _, g := range gates {
		key = append(append(key, g.Name...), 0)
	}
	v, ok := sharedGates.get(key, func() []corev1.PodSchedulingGate {
		out := make([]corev1.PodSchedulingGate, len(gates))
		for i, g := range gates {
			out[i] = corev1.PodSchedulingGate{Name: ShareString(g.Name)}
		}
		return out
	})
	if !ok {
		return slices.Clone(gates)
	}
	return v
}

// ShareTolerations returns a list equal to ts that pods with the same tolerations
// share (every pod has the two NoExecute ones the API server adds). The result must not
// be modified; nil and empty lists give nil.
func ShareTolerations(ts []corev1.Toleration) []corev1.Toleration {
	if len(ts) == 0 {
		return nil
	}
	var buf [256]byte
	key := buf[:0]
	for _, t := range ts {
		key = append(append(append(append(key, t.Key...), 0, byte(len(t.Operator))), t.Operator...), 0)
		key = append(append(append(append(key, t.Value...), 0), t.Effect...), 0)
		if t.TolerationSeconds != nil {
			key = strconv.AppendInt(key, *t.TolerationSeconds, 10)
		}
		key = append(key, 1)
	}
	v, ok := sharedTols.get(key, func() []corev1.Toleration {
		out := make([]corev1.Toleration, len(ts))
		for i, t := range ts {
			out[i] = *t.DeepCopy()
		}
		return out
	})
	if !ok {
		return slices.Clone(ts)
	}
	return v
}

// cloneLabels is a copy of labels that shares nothing with it; nil for none, as
// ShareLabels gives.
func cloneLabels(labels map[string]string) map[string]string {
	if len(labels) == 0 {
		return nil
	}
	return maps.Clone(labels)
}

// cloneTolerations is a deep copy of ts; nil for none, as ShareTolerations gives.
func cloneTolerations(ts []corev1.Toleration) []corev1.Toleration {
	if len(ts) == 0 {
		return nil
	}
	out := make([]corev1.Toleration, len(ts))
	for i := range ts {
		ts[i].DeepCopyInto(&out[i])
	}
	return out
}

// appendList appends an exact, order-free form of l to key: its names in order, each
// with its quantity's canonical mantissa, exponent and format. Equal lists give equal
// keys (a quantity written two ways at most gives two keys for one value). The format
// is part of the key: it is how the quantity prints in statuses and messages.
func appendList(key []byte, l corev1.ResourceList) []byte {
	var buf [8]corev1.ResourceName
	names := buf[:0]
	for name := range l {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		q := l[name]
		key = append(append(key, name...), 0)
		var exp int32
		key, exp = q.AsCanonicalBytes(key)
		key = append(strconv.AppendInt(append(key, 'e'), int64(exp), 10), formatCode(q.Format))
	}
	return append(key, 1)
}

// formatCode is one byte for each format a quantity is written in.
func formatCode(f resource.Format) byte {
	switch f {
	case resource.BinarySI:
		return 'b'
	case resource.DecimalExponent:
		return 'x'
	case resource.DecimalSI:
		return 'd'
	}
	return '?'
}

// sharedUsages holds PodUsage by what it is computed from (usageKey).
var sharedUsages sharedTable[corev1.ResourceList]

// SharedPodUsage returns PodUsage of the pod, shared as ShareResourceList shares it.
// Pods with equal inputs (usageKey) have equal usage, so it is computed once per
// distinct input: the informer transform runs for every event of every pod, and
// adding up requests and limits is most of its cost.
func SharedPodUsage(p *corev1.Pod) corev1.ResourceList {
	var buf [512]byte
	usage, ok := sharedUsages.get(usageKey(buf[:0], p), func() corev1.ResourceList {
		return ShareResourceList(PodUsage(p))
	})
	if !ok {
		return ShareResourceList(PodUsage(p))
	}
	return usage
}

// usageKey appends to key everything PodUsage reads from a pod, and nothing else: each
// init container's restart policy, requests and limits, in order (a sidecar's place
// matters); each container's requests and limits; after each container, what its status
// says was allocated and applied (an in-place resize); whether a resize is Infeasible;
// the pod-level resources; the overhead. PodUsage asks k8s.io/component-helpers for no
// DRA claims; TestSharedPodUsage fails if what it reads changes.
func usageKey(key []byte, p *corev1.Pod) []byte {
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		key = append(key, 'i')
		if c.RestartPolicy != nil {
			key = append(key, *c.RestartPolicy...)
		}
		key = appendRequirements(append(key, 0), &c.Resources)
		key = appendContainerStatus(key, p, c.Name)
	}
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		key = appendRequirements(append(key, 'c'), &c.Resources)
		key = appendContainerStatus(key, p, c.Name)
	}
	if resourcehelper.IsPodResizeInfeasible(p) {
		key = append(key, 'I')
	}
	if r := p.Spec.Resources; r != nil {
		key = appendRequirements(append(key, 'p'), r)
	}
	return appendList(append(key, 'o'), p.Spec.Overhead)
}

// appendContainerStatus appends the status of the named container as PodUsage reads
// it: its allocated resources and the resources the kubelet reports applied, each
// told apart from an absent one (component-helpers falls back to the next source only
// when a list is nil). The status is found by name, first among the containers', then
// the init containers' statuses, as component-helpers finds it.
func appendContainerStatus(key []byte, p *corev1.Pod, name string) []byte {
	var cs *corev1.ContainerStatus
	for _, statuses := range [][]corev1.ContainerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses} {
		for i := range statuses {
			if cs == nil && statuses[i].Name == name {
				cs = &statuses[i]
			}
		}
	}
	if cs == nil {
		return append(key, '-')
	}
	key = appendOptionalList(append(key, 's'), cs.AllocatedResources)
	if cs.Resources == nil {
		return append(key, '-')
	}
	key = appendOptionalList(append(key, 'r'), cs.Resources.Requests)
	return appendOptionalList(key, cs.Resources.Limits)
}

// appendOptionalList appends l as appendList does, told apart from nil.
func appendOptionalList(key []byte, l corev1.ResourceList) []byte {
	if l == nil {
		return append(key, '-')
	}
	return appendList(append(key, '+'), l)
}

// appendRequirements appends requests, then limits, as appendList writes them.
func appendRequirements(key []byte, r *corev1.ResourceRequirements) []byte {
	return appendList(append(appendList(key, r.Requests), 'l'), r.Limits)
}
