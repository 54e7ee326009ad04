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
// matters); each container's requests and limits; after each container what its
// status reports of its resources (allocated and actual, for an in-place resize); the
// pod-level resources; the overhead; whether a resize is infeasible. PodUsage reads no
// pod-level status and no DRA claims; TestSharedPodUsage fails if that changes.
func usageKey(key []byte, p *corev1.Pod) []byte {
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		key = append(key, 'i')
		if c.RestartPolicy != nil {
			key = append(key, *c.RestartPolicy...)
		}
		key = appendRequirements(append(key, 0), &c.Resources)
		key = appendStatusResources(key, p, c.Name)
	}
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		key = appendRequirements(append(key, 'c'), &c.Resources)
		key = appendStatusResources(key, p, c.Name)
	}
	if r := p.Spec.Resources; r != nil {
		key = appendRequirements(append(key, 'p'), r)
	}
	key = appendList(append(key, 'o'), p.Spec.Overhead)
	if resourcehelper.IsPodResizeInfeasible(p) {
		key = append(key, 'x')
	}
	return key
}

// appendStatusResources appends what the status of the named container reports of its
// resources, as k8s.io/component-helpers reads it: the allocated requests and the
// actual requests and limits, each only when set (set and empty is not unset).
func appendStatusResources(key []byte, p *corev1.Pod, name string) []byte {
	cs := containerStatus(p, name)
	if cs == nil {
		return key
	}
	if cs.AllocatedResources != nil {
		key = appendList(append(key, 'a'), cs.AllocatedResources)
	}
	if r := cs.Resources; r != nil {
		key = append(key, 's')
		if r.Requests != nil {
			key = appendList(append(key, 'q'), r.Requests)
		}
		if r.Limits != nil {
			key = appendList(append(key, 'l'), r.Limits)
		}
	}
	return key
}

// containerStatus finds a container's status by name, among the containers' statuses
// first, as k8s.io/component-helpers does.
func containerStatus(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return &p.Status.ContainerStatuses[i]
		}
	}
	for i := range p.Status.InitContainerStatuses {
		if p.Status.InitContainerStatuses[i].Name == name {
			return &p.Status.InitContainerStatuses[i]
		}
	}
	return nil
}

// appendRequirements appends requests, then limits, as appendList writes them.
func appendRequirements(key []byte, r *corev1.ResourceRequirements) []byte {
	return appendList(append(appendList(key, r.Requests), 'l'), r.Limits)
}
