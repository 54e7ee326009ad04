package quota

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEqualLabelsAndListsAreSharedAndUnchanged(t *testing.T) {
	a := map[string]string{"app": "web", "tier": "front"}
	b := map[string]string{"tier": "front", "app": "web"}
	sa, sb := ShareLabels(a), ShareLabels(b)
	if fmt.Sprintf("%p", sa) != fmt.Sprintf("%p", sb) {
		t.Errorf("equal label maps are not shared")
	}
	if !equality.Semantic.DeepEqual(sa, a) {
		t.Errorf("shared labels %v, want %v", sa, a)
	}
	if other := ShareLabels(map[string]string{"app": "web", "tier": "back"}); other["tier"] != "back" {
		t.Errorf("different labels got %v", other)
	}
	if ShareLabels(map[string]string{}) != nil || ShareLabels(nil) != nil {
		t.Errorf("empty labels should give nil")
	}

	l1 := corev1.ResourceList{"requests.cpu": resource.MustParse("1000m"), "pods": resource.MustParse("1")}
	l2 := corev1.ResourceList{"requests.cpu": resource.MustParse("1"), "pods": resource.MustParse("1")}
	s1, s2 := ShareResourceList(l1), ShareResourceList(l2)
	if fmt.Sprintf("%p", s1) != fmt.Sprintf("%p", s2) {
		t.Errorf("equal resource lists are not shared")
	}
	if !equality.Semantic.DeepEqual(s1, l1) {
		t.Errorf("shared list %v, want %v", s1, l1)
	}
	two := resource.MustParse("2")
	if s := ShareResourceList(corev1.ResourceList{"requests.cpu": two}); len(s) != 1 || s.Name("requests.cpu", resource.DecimalSI).Cmp(two) != 0 {
		t.Errorf("a different list got %v", s)
	}
}

func TestEqualGatesAreSharedInOrder(t *testing.T) {
	a := []corev1.PodSchedulingGate{{Name: "quotagate.io/budget"}, {Name: "example.com/hold"}}
	b := []corev1.PodSchedulingGate{{Name: "quotagate.io/budget"}, {Name: "example.com/hold"}}
	sa, sb := ShareGates(a), ShareGates(b)
	if &sa[0] != &sb[0] {
		t.Errorf("equal gate lists are not shared")
	}
	if !equality.Semantic.DeepEqual(sa, a) {
		t.Errorf("shared gates %v, want %v", sa, a)
	}
	swapped := ShareGates([]corev1.PodSchedulingGate{{Name: "example.com/hold"}, {Name: "quotagate.io/budget"}})
	if swapped[0].Name != "example.com/hold" {
		t.Errorf("gates in another order got %v: the order is the patch's index", swapped)
	}
	if ShareGates(nil) != nil || ShareGates([]corev1.PodSchedulingGate{}) != nil {
		t.Errorf("no gates should give nil")
	}
}

func TestSharingStopsAtTheTableLimit(t *testing.T) {
	var last map[string]string
	for i := range maxShared + 10 {
		last = ShareLabels(map[string]string{"limit-test": fmt.Sprint(i)})
	}
	if last["limit-test"] != fmt.Sprint(maxShared+9) {
		t.Errorf("past the limit the labels are %v", last)
	}
	sharedLabels.mu.Lock()
	n := len(sharedLabels.m)
	sharedLabels.mu.Unlock()
	if n > maxShared {
		t.Errorf("the table holds %d maps, more than %d", n, maxShared)
	}
}

// BenchmarkNewPodLabelsAndUsage compares, in one run, the ways NewPod has taken a pod's
// labels and usage: usage remembered by its inputs (memo, what NewPod does), usage
// computed and then shared (shared), and a clone of the labels with a usage map of its
// own (copied). The pod is a typical one: a sidecar and two containers with requests
// and limits.
func BenchmarkNewPodLabelsAndUsage(b *testing.B) {
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{}
	pod.Labels = map[string]string{"app": "web", "tier": "front"}
	res := func(cpu, mem string) corev1.ResourceRequirements {
		l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
		return corev1.ResourceRequirements{Requests: l, Limits: l}
	}
	pod.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &always, Resources: res("50m", "64Mi")}}
	pod.Spec.Containers = []corev1.Container{{Name: "app", Resources: res("500m", "1Gi")}, {Name: "log", Resources: res("10m", "32Mi")}}
	b.Run("memo", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			_, _ = ShareLabels(pod.Labels), SharedPodUsage(pod)
		}
	})
	b.Run("shared", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			_, _ = ShareLabels(pod.Labels), ShareResourceList(PodUsage(pod))
		}
	})
	b.Run("copied", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			_, _ = maps.Clone(pod.Labels), PodUsage(pod)
		}
	})
}

// TestUnsharedPodsStayOutOfTheSharedTables: a what-if's pods (NewPodUnshared) are
// viewed as NewPod views them, and enter none of the process-wide tables, which keep
// what they hold until the process ends: a tenant's made-up labels, tolerations and
// requests go with the answer.
func TestUnsharedPodsStayOutOfTheSharedTables(t *testing.T) {
	sizes := func() []int {
		var n []int
		for _, size := range []func() int{sharedLabels.size, sharedLists.size, sharedTols.size, sharedUsages.size, sharedUnsets.size} {
			n = append(n, size())
		}
		return n
	}
	pod := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "what-if", Labels: map[string]string{"made-up": t.Name()}},
			// A container named after the test leaves cpu and memory unset.
			Spec: corev1.PodSpec{
				NodeSelector: map[string]string{"pool": t.Name()},
				Tolerations:  []corev1.Toleration{{Key: t.Name(), Operator: corev1.TolerationOpExists}},
				Containers: []corev1.Container{{Name: strings.ToLower(t.Name()), Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{"example.com/made-up-" + corev1.ResourceName(strings.ToLower(t.Name())): resource.MustParse("3")},
				}}},
			},
		}
	}
	before := sizes()
	unshared := NewPodUnshared(pod(), "quotagate.io/budget", time.Now())
	if diff := cmp.Diff(before, sizes()); diff != "" {
		t.Errorf("the shared tables' sizes (labels, lists, tolerations, usages, unset values) after NewPodUnshared (-before +after):\n%s", diff)
	}
	shared := NewPod(pod(), "quotagate.io/budget", unshared.Created)
	if diff := cmp.Diff(shared, unshared, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
		t.Errorf("NewPodUnshared's view differs from NewPod's (-NewPod +NewPodUnshared):\n%s", diff)
	}
	// Other tests may have filled a table (maxShared); the others take NewPod's entries.
	if after := sizes(); slices.Equal(after, before) {
		t.Errorf("NewPod of the same pod entered no shared table (sizes %v, then %v): the test shows nothing", before, after)
	}
}

func (t *sharedTable[V]) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}
