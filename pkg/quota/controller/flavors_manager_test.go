package controller_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/pkg/gates"
)

// TestFlavorsPutPodsOnTheirNodes: two node pools (one tainted), a Flavor for each, and a
// Budget with quota on both in order. A burst of Jobs fills the first flavor and falls
// back to the second; every admitted pod carries its flavor's labels (and toleration),
// runs on a node of that flavor, and the Budget's status counts it there.
func TestFlavorsPutPodsOnTheirNodes(t *testing.T) {
	ns := newNamespace(t, true)
	fast, slow := ns+"-fast", ns+"-slow" // Flavors and nodes are cluster-wide: names of this test's own
	taint := corev1.Taint{Key: "pool", Value: fast, Effect: corev1.TaintEffectNoSchedule}
	node := func(name, pool string, taints ...corev1.Taint) *corev1.Node {
		capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("110")}
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
				Labels: map[string]string{"pool": pool, corev1.LabelHostname: name, corev1.LabelOSStable: "linux"}},
			Spec:   corev1.NodeSpec{Taints: taints},
			Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity.DeepCopy()},
		}
	}
	flavor := func(name string, tolerations ...corev1.Toleration) *v1alpha1.Flavor {
		return &v1alpha1.Flavor{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.FlavorSpec{NodeLabels: map[string]string{"pool": name}, Tolerations: tolerations}}
	}
	objs := []client.Object{
		node(fast, fast, taint), node(slow, slow),
		flavor(fast, corev1.Toleration{Key: "pool", Operator: corev1.TolerationOpEqual, Value: fast, Effect: corev1.TaintEffectNoSchedule}),
		flavor(slow),
	}
	mustCreate(t, objs...)
	t.Cleanup(func() {
		for _, o := range objs {
			_ = admin.Delete(context.Background(), o)
		}
	})
	b := budget(ns, "team", nil, "")
	b.Spec.Flavors = []v1alpha1.FlavorQuota{{Name: fast, Hard: cpu("2")}, {Name: slow, Hard: cpu("3")}}
	mustCreate(t, b)
	for i := range 6 {
		mustCreate(t, gatedJob(ns, fmt.Sprintf("job-%d", i), "1", 1, "10m", ""))
	}
	startManager(t, nil, false)

	onFlavor := func() (map[string][]corev1.Pod, int) {
		on, gated := map[string][]corev1.Pod{}, 0
		for _, p := range podsOf(t, ns) {
			if gates.HasGate(&p, v1alpha1.SchedulingGate) {
				gated++
				continue
			}
			on[p.Spec.NodeSelector["pool"]] = append(on[p.Spec.NodeSelector["pool"]], p)
		}
		return on, gated
	}
	testbed.Poll(t, time.Minute, "two pods on the fast flavor, three on the slow one, one gated", func(context.Context) (bool, error) {
		on, gated := onFlavor()
		return len(on[fast]) == 2 && len(on[slow]) == 3 && gated == 1, nil
	})
	testbed.Poll(t, time.Minute, "every admitted pod running on a node of its flavor", func(context.Context) (bool, error) {
		on, _ := onFlavor()
		for pool, pods := range on {
			for _, p := range pods {
				if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning {
					return false, nil
				}
				if p.Spec.NodeName != pool {
					return false, fmt.Errorf("pod %s on flavor %s runs on node %s", p.Name, pool, p.Spec.NodeName)
				}
			}
		}
		return true, nil
	})
	on, _ := onFlavor()
	for _, p := range on[fast] {
		if !slices.ContainsFunc(p.Spec.Tolerations, func(tl corev1.Toleration) bool { return tl.Key == "pool" && tl.Value == fast }) {
			t.Errorf("pod %s on %s lacks the flavor's toleration: %v", p.Name, fast, p.Spec.Tolerations)
		}
	}
	testbed.Poll(t, time.Minute, "the Budget's status to count each flavor", func(context.Context) (bool, error) {
		got := &v1alpha1.Budget{}
		if err := admin.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "team"}, got); err != nil {
			return false, err
		}
		used := map[string]string{}
		for _, f := range got.Status.Flavors {
			q := f.Used["requests.cpu"]
			used[f.Name] = q.String()
		}
		return got.Status.AdmittedPods == 5 && got.Status.GatedPods == 1 && used[fast] == "2" && used[slow] == "3", nil
	})
}
