package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/pkg/quota"
)

// TestCompositePodGroupAdmitsCompleteChildren, on a local control plane that serves
// CompositePodGroups: a CompositePodGroup "trainer" whose gang wants 2 of its
// PodGroups a, b and c (gangs of 2 each). With a and b complete and c short of a pod,
// a Budget of 3 CPUs keeps all gated (a and b need 4: never fits, c's lone pod not
// counted); raised to 4, a and b are ungated, while c-0 stays gated, waiting for its
// PodGroup. (kube-scheduler 1.37.2's alpha CompositePodGroup support leaves the
// ungated pods unplaced here, Workload object or not: it does not even move them past
// SchedulingGated. What this test checks is quotagate's part.) A PodGroup whose parent does not
// exist holds its pods. Once c has its second pod and there is room, c goes too.
func TestCompositePodGroupAdmitsCompleteChildren(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t, true)
	mustCreate(t, budget(ns, "b", cpu("3"), ""))
	tenant := editTenant(t, ns)
	m := startManager(t, nil, false)

	ref := func(template string) *schedulingv1alpha3.WorkloadReference {
		return &schedulingv1alpha3.WorkloadReference{WorkloadName: "trainer", TemplateName: template}
	}
	child := func(name, parent string) *schedulingv1beta1.PodGroup {
		g := gangPodGroup(name, 2)
		g.Spec.ParentCompositePodGroupName = ptr.To(parent)
		g.Spec.WorkloadRef = &schedulingv1beta1.WorkloadReference{WorkloadName: "trainer", TemplateName: "workers"}
		return g
	}
	for _, pg := range []string{"a", "b", "c"} {
		tenantCreate(t, tenant.SchedulingV1beta1().PodGroups(ns).Create, child(pg, "trainer"))
	}
	for _, name := range []string{"a-0", "a-1", "b-0", "b-1", "c-0"} {
		tenantCreate(t, tenant.CoreV1().Pods(ns).Create, gangPod(ns, name, name[:1]))
	}
	waitReason(t, m, ns, "a-0", quota.CodePodGroupPending, "waiting for CompositePodGroup trainer (above PodGroup a), which does not exist yet")

	gang := func(n int32) schedulingv1alpha3.PodGroupSchedulingPolicy {
		return schedulingv1alpha3.PodGroupSchedulingPolicy{Gang: &schedulingv1alpha3.GangSchedulingPolicy{MinCount: n}}
	}
	if _, err := clientset.SchedulingV1alpha3().Workloads(ns).Create(ctx, &schedulingv1alpha3.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: "trainer"},
		Spec: schedulingv1alpha3.WorkloadSpec{
			CompositePodGroupTemplates: []schedulingv1alpha3.CompositePodGroupTemplate{{
				Name: "root",
				SchedulingPolicy: schedulingv1alpha3.CompositePodGroupSchedulingPolicy{
					Gang: &schedulingv1alpha3.CompositeGangSchedulingPolicy{MinGroupCount: 2},
				},
				PodGroupTemplates: []schedulingv1alpha3.PodGroupTemplate{{Name: "workers", SchedulingPolicy: gang(2)}},
			}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the Workload: %v", err)
	}
	if _, err := clientset.SchedulingV1alpha3().CompositePodGroups(ns).Create(ctx, &schedulingv1alpha3.CompositePodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "trainer"},
		Spec: schedulingv1alpha3.CompositePodGroupSpec{
			WorkloadRef: ref("root"),
			SchedulingPolicy: schedulingv1alpha3.CompositePodGroupSchedulingPolicy{
				Gang: &schedulingv1alpha3.CompositeGangSchedulingPolicy{MinGroupCount: 2},
			},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the CompositePodGroup: %v", err)
	}
	never := "group " + quota.CompositePodGroupPrefix + "trainer: requests.cpu: 4 requested, more than the 3 hard"
	waitReason(t, m, ns, "b-1", quota.CodeNeverFits, never)
	waitReason(t, m, ns, "c-0", quota.CodeNeverFits, never)

	setHard(t, ns, "b", cpu("4"))
	testbed.Poll(t, time.Minute, "PodGroups a and b ungated", func(context.Context) (bool, error) {
		for _, name := range []string{"a-0", "a-1", "b-0", "b-1"} {
			if isGated(t, ns, name) {
				return false, nil
			}
		}
		return true, nil
	})
	waitReason(t, m, ns, "c-0", quota.CodeGroupPartIncomplete, quota.PodGroupPrefix+"c: 1 of the 2 pods its gang needs ready")
	if !isGated(t, ns, "c-0") {
		t.Fatal("c-0 was ungated without the second pod its PodGroup needs")
	}
	wantUsed(t, ns, "b", map[corev1.ResourceName]string{"requests.cpu": "4"})

	tenantCreate(t, tenant.CoreV1().Pods(ns).Create, gangPod(ns, "c-1", "c"))
	setHard(t, ns, "b", cpu("6"))
	testbed.Poll(t, time.Minute, "PodGroup c admitted once complete", func(context.Context) (bool, error) {
		for i := range 2 {
			if isGated(t, ns, fmt.Sprintf("c-%d", i)) {
				return false, nil
			}
		}
		return true, nil
	})
	wantUsed(t, ns, "b", map[corev1.ResourceName]string{"requests.cpu": "6"})
}
