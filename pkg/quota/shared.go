package quota

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"unique"

	corev1 "k8s.io/api/core/v1"
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
// when the table is full and key is not in it.
func (t *sharedTable[V]) get(key string, fresh func() V) (v V, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.m[key]; ok {
		return v, true
	}
	if len(t.m) >= maxShared {
		return v, false
	}
	if t.m == nil {
		t.m = map[string]V{}
	}
	v = fresh()
	t.m[key] = v
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
	keys := slices.Sorted(maps.Keys(labels))
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(labels[k])
		b.WriteByte(0)
	}
	v, ok := sharedLabels.get(b.String(), func() map[string]string {
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
	names := slices.Sorted(maps.Keys(l))
	var b strings.Builder
	for _, name := range names {
		q := l[name]
		b.WriteString(string(name))
		b.WriteByte(0)
		b.WriteString(q.String())
		b.WriteByte(0)
	}
	v, ok := sharedLists.get(b.String(), func() corev1.ResourceList {
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
	var b strings.Builder
	for _, g := range gates {
		b.WriteString(g.Name)
		b.WriteByte(0)
	}
	v, ok := sharedGates.get(b.String(), func() []corev1.PodSchedulingGate {
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
