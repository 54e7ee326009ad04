package gates

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/quotagate/quotagate/internal/testbed/podtest"
)

const quotaGate = "quotagate.io/budget"

// makePod returns a pod carrying the named scheduling gates, in order.
func makePod(gates ...string) *corev1.Pod {
	return podtest.New("p").NS("team-a").TypeMeta().Container("c", "busybox").Gates(gates...).Obj()
}

func gateNames(pod *corev1.Pod) []string {
	var names []string
	for _, g := range pod.Spec.SchedulingGates {
		names = append(names, g.Name)
	}
	return names
}

func TestHasGate(t *testing.T) {
	tests := map[string]struct {
		pod  *corev1.Pod
		want bool
	}{
		"no gates":          {pod: makePod(), want: false},
		"only the gate":     {pod: makePod(quotaGate), want: true},
		"gate after others": {pod: makePod("a.io/x", "b.io/y", quotaGate), want: true},
		"only other gates":  {pod: makePod("a.io/x"), want: false},
		"similar name":      {pod: makePod("quotagate.io/budget2", "quotagate.io"), want: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := HasGate(tc.pod, quotaGate); got != tc.want {
				t.Errorf("HasGate() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestGate(t *testing.T) {
	tests := map[string]struct {
		pod         *corev1.Pod
		wantChanged bool
		wantGates   []string
	}{
		"no gates":      {pod: makePod(), wantChanged: true, wantGates: []string{quotaGate}},
		"other gates":   {pod: makePod("a.io/x"), wantChanged: true, wantGates: []string{"a.io/x", quotaGate}},
		"already gated": {pod: makePod("a.io/x", quotaGate), wantChanged: false, wantGates: []string{"a.io/x", quotaGate}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Gate(tc.pod, quotaGate); got != tc.wantChanged {
				t.Errorf("Gate() = %v, want %v", got, tc.wantChanged)
			}
			if diff := cmp.Diff(tc.wantGates, gateNames(tc.pod)); diff != "" {
				t.Errorf("gates after Gate() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUngate(t *testing.T) {
	tests := map[string]struct {
		pod         *corev1.Pod
		wantChanged bool
		wantGates   []string
	}{
		"no gates":      {pod: makePod(), wantChanged: false},
		"only the gate": {pod: makePod(quotaGate), wantChanged: true},
		"gate in the middle": {
			pod:         makePod("a.io/x", quotaGate, "b.io/y"),
			wantChanged: true,
			wantGates:   []string{"a.io/x", "b.io/y"},
		},
		"only other gates": {pod: makePod("a.io/x"), wantChanged: false, wantGates: []string{"a.io/x"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Ungate(tc.pod, quotaGate); got != tc.wantChanged {
				t.Errorf("Ungate() = %v, want %v", got, tc.wantChanged)
			}
			if diff := cmp.Diff(tc.wantGates, gateNames(tc.pod)); diff != "" {
				t.Errorf("gates after Ungate() (-want +got):\n%s", diff)
			}
		})
	}
}

// Ungate must not write into the backing array of the pod's gate list: the
// pod may be a shallow copy of an informer's cached object.
func TestUngateLeavesSharedGatesAlone(t *testing.T) {
	pod := makePod("a.io/x", quotaGate, "b.io/y")
	shared := pod.Spec.SchedulingGates
	copied := pod.DeepCopy()
	copied.Spec.SchedulingGates = shared

	Ungate(copied, quotaGate)

	if diff := cmp.Diff([]string{"a.io/x", quotaGate, "b.io/y"}, gateNames(pod)); diff != "" {
		t.Errorf("original pod's gates (-want +got):\n%s", diff)
	}
}
