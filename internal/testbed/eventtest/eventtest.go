// Package eventtest records the events a component sends about pods, for tests that
// check what a user would read with `kubectl get events`: each event as one line,
// "namespace/name: type reason note".
//
// It is a package of its own, apart from internal/testbed, so that tests of packages
// that never start a control plane can use it: it imports only the Kubernetes API
// types and client-go's event recorder.
package eventtest

import (
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// PodRecorder is an events.EventRecorder (and AnnotatedEventRecorder, as
// controller-runtime's recorder.EventRecorder wants) that records each event about a pod as
// "namespace/name: type reason note". Events about other objects are recorded with
// the object's type in place of namespace/name.
type PodRecorder struct {
	mu  sync.Mutex
	got []string
}

var (
	_ events.EventRecorder          = (*PodRecorder)(nil)
	_ events.AnnotatedEventRecorder = (*PodRecorder)(nil)
)

// Eventf records one event.
func (r *PodRecorder) Eventf(regarding, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	who := fmt.Sprintf("%T", regarding)
	if pod, ok := regarding.(*corev1.Pod); ok {
		who = pod.Namespace + "/" + pod.Name
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, fmt.Sprintf("%s: %s %s %s", who, eventtype, reason, fmt.Sprintf(note, args...)))
}

// AnnotatedEventf records one event, as Eventf: the annotations are not recorded.
func (r *PodRecorder) AnnotatedEventf(regarding, related runtime.Object, _ map[string]string, eventtype, reason, action, note string, args ...any) {
	r.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

// Take returns the events recorded since the last call, sorted.
func (r *PodRecorder) Take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.got
	r.got = nil
	slices.Sort(got)
	return got
}
