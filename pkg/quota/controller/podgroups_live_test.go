package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/pkg/quota"
)

// gangPod is a gated pod of 1 CPU that names PodGroup group.
func gangPod(ns, name, group string) *corev1.Pod {
	p := gatedPod(ns, name, "1")
	p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(group)}
	return p
}

func gangPodGroup(name string, minCount int32) *schedulingv1beta1.PodGroup {
	return &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
			Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount},
		}},
	}
}

// TestPodGroupGangIsAdmittedWhole, on a local control plane that serves the Workload API,
// as a tenant with the edit role: 8 pods of a PodGroup that does not exist yet wait for
// it; once it exists with a gang of minCount 8, a Budget that fits 7 keeps all 8 gated
// (the gang can never fit),
// though each carries a quotagate.io/group of size 2 that would have let pairs in (the
// PodGroup wins); raised to 8, all 8 are admitted, and kube-scheduler places them. A
// PodGroup of minCount 4 with 3 pods waits for the fourth, until its minCount is
// lowered to 3.
func TestPodGroupGangIsAdmittedWhole(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t, true)
	mustCreate(t, budget(ns, "b", cpu("7"), ""))
	tenant := editTenant(t, ns)
	m := startManager(t, nil, false)

	var names []string
	for i := range 8 {
		p := gangPod(ns, fmt.Sprintf("worker-%d", i), "gang")
		p.Labels = map[string]string{v1alpha1.GroupLabel: fmt.Sprintf("pair-%d", i/2)}
		p.Annotations = map[string]string{v1alpha1.GroupSizeAnnotation: "2"}
		tenantCreate(t, tenant.CoreV1().Pods(ns).Create, p)
		names = append(names, p.Name)
	}
	waitReason(t, m, ns, "worker-0", quota.CodePodGroupPending, "waiting for PodGroup gang, which does not exist yet")

	tenantCreate(t, tenant.SchedulingV1beta1().PodGroups(ns).Create, gangPodGroup("gang", 8))
	const never = "group " + quota.PodGroupPrefix + "gang: requests.cpu: 8 requested, more than the 7 hard"
	waitReason(t, m, ns, "worker-7", quota.CodeNeverFits, never)
	uids := map[string]types.UID{}
	for _, name := range names {
		p, err := clientset.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uids[name] = p.UID
		if r, _ := m.ctrl.Core().Reader().WaitReason(p.UID); r.Code != quota.CodeNeverFits || !strings.HasPrefix(r.Message, never) {
			t.Errorf("%s waits with %+v, want RequestsExceedHard for the whole PodGroup", name, r)
		}
		if !isGated(t, ns, name) {
			t.Errorf("%s was admitted under a Budget that fits 7 of the gang's 8", name)
		}
	}

	setHard(t, ns, "b", cpu("8"))
	testbed.Poll(t, 2*time.Minute, "the whole gang ungated and placed by kube-scheduler", func(context.Context) (bool, error) {
		placed := 0
		for _, name := range names {
			p, err := clientset.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if p.Spec.NodeName != "" {
				placed++
			}
		}
		return placed == len(names), nil
	})
	wantUsed(t, ns, "b", map[corev1.ResourceName]string{"requests.cpu": "8"})

	// minCount follows the PodGroup.
	setHard(t, ns, "b", cpu("100"))
	tenantCreate(t, tenant.SchedulingV1beta1().PodGroups(ns).Create, gangPodGroup("small", 4))
	for i := range 3 {
		tenantCreate(t, tenant.CoreV1().Pods(ns).Create, gangPod(ns, fmt.Sprintf("small-%d", i), "small"))
	}
	waitReason(t, m, ns, "small-0", quota.CodeGroupIncomplete, "3 of 4 members exist")
	pg, err := tenant.SchedulingV1beta1().PodGroups(ns).Get(ctx, "small", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pg.Spec.SchedulingPolicy.Gang.MinCount = 3
	if _, err := tenant.SchedulingV1beta1().PodGroups(ns).Update(ctx, pg, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("lowering minCount to 3: %v", err)
	}
	testbed.Poll(t, time.Minute, "the 3 pods admitted once minCount is 3", func(context.Context) (bool, error) {
		for i := range 3 {
			if isGated(t, ns, fmt.Sprintf("small-%d", i)) {
				return false, nil
			}
		}
		return true, nil
	})
}

// TestPodGroupClaimIsChargedOnce: a PodGroup's ResourceClaim (spec.resourceClaims, from a
// template) that both pods of its gang use is made once by Kubernetes for the group, and
// charged once: under a Budget of 4 devices, a gang of 2 whose group claim asks 4 is
// admitted, and the budget shows 4 used.
func TestPodGroupClaimIsChargedOnce(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t, true)
	class := ns
	devices := corev1.ResourceName(class + ".deviceclass.resource.k8s.io/devices")
	mustCreate(t, &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: class}})
	t.Cleanup(func() {
		_ = admin.Delete(context.Background(), &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: class}})
	})
	mustCreate(t, budget(ns, "gpus", corev1.ResourceList{devices: resource.MustParse("4")}, ""))
	tenant := editTenant(t, ns)
	startManager(t, nil, false)

	tenantCreate(t, tenant.ResourceV1().ResourceClaimTemplates(ns).Create, &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "four"},
		Spec:       resourceapi.ResourceClaimTemplateSpec{Spec: *devicesSpec(class, 4)},
	})
	pg := gangPodGroup("duo", 2)
	pg.Spec.ResourceClaims = []schedulingv1beta1.PodGroupResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("four")}}
	tenantCreate(t, tenant.SchedulingV1beta1().PodGroups(ns).Create, pg)
	for _, name := range []string{"duo-0", "duo-1"} {
		p := claimPod(ns, name, corev1.PodResourceClaim{Name: "gpu", ResourceClaimTemplateName: ptr.To("four")})
		p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("duo")}
		tenantCreate(t, tenant.CoreV1().Pods(ns).Create, p)
	}
	testbed.Poll(t, 2*time.Minute, "both pods of the gang admitted", func(context.Context) (bool, error) {
		return !isGated(t, ns, "duo-0") && !isGated(t, ns, "duo-1"), nil
	})
	wantUsed(t, ns, "gpus", map[corev1.ResourceName]string{devices: "4"})
	claims, err := clientset.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) != 1 {
		t.Errorf("%d ResourceClaims in the namespace, want the group's one", len(claims.Items))
	}
}
