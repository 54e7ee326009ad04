package controller_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/pkg/quota"
)

// DRA devices, as a tenant with nothing but the built-in edit role makes them: a pod
// that asks 8 devices of class <ns> through a ResourceClaimTemplate waits for its claim,
// then under a Budget of 4, and is charged 8 once it is raised to 8, its claim pinned;
// two pods that share a ResourceClaim of 4 are charged 4, until the last of them ends; a
// pod whose template does not exist waits and says for which. No driver allocates
// anything: quotagate charges at ungate, as ResourceQuota charges at claim creation.
func TestDRADevicesAreChargedFromClaims(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t, true)
	class := ns // DeviceClasses are cluster-scoped: one per test namespace
	devices := corev1.ResourceName(class + ".deviceclass.resource.k8s.io/devices")
	extended := corev1.ResourceName("requests.example.com/" + class)
	mustCreate(t, &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: class},
		Spec:       resourceapi.DeviceClassSpec{ExtendedResourceName: ptr.To("example.com/" + class)},
	})
	t.Cleanup(func() {
		_ = admin.Delete(context.Background(), &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: class}})
	})
	mustCreate(t, budget(ns, "gpus", corev1.ResourceList{devices: resource.MustParse("4"), extended: resource.MustParse("100")}, ""))
	tenant := editTenant(t, ns)
	m := startManager(t, nil, false)

	// The template asks 8; the tenant's pod, gated as the webhook would have it.
	tenantCreate(t, tenant.ResourceV1().ResourceClaimTemplates(ns).Create, &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "eight"},
		Spec:       resourceapi.ResourceClaimTemplateSpec{Spec: *devicesSpec(class, 8)},
	})
	tenantCreate(t, tenant.CoreV1().Pods(ns).Create, claimPod(ns, "trainer", corev1.PodResourceClaim{Name: "gpu", ResourceClaimTemplateName: ptr.To("eight")}))
	tenantCreate(t, tenant.CoreV1().Pods(ns).Create, claimPod(ns, "early", corev1.PodResourceClaim{Name: "gpu", ResourceClaimTemplateName: ptr.To("sixteen")}))

	// Kubernetes makes the claim from the template while the pod is gated: the pod is
	// charged what the claim asks, and waits.
	waitReason(t, m, ns, "trainer", quota.CodeNeverFits, string(devices)+": 8 requested, more than the 4 hard")
	waitReason(t, m, ns, "early", quota.CodeClaimPending, "waiting for ResourceClaimTemplate "+ns+"/sixteen")
	var generated string
	testbed.Poll(t, time.Minute, "the trainer's claim to be generated", func(context.Context) (bool, error) {
		p, err := clientset.CoreV1().Pods(ns).Get(ctx, "trainer", metav1.GetOptions{})
		if err != nil || len(p.Status.ResourceClaimStatuses) != 1 || p.Status.ResourceClaimStatuses[0].ResourceClaimName == nil {
			return false, err
		}
		generated = *p.Status.ResourceClaimStatuses[0].ResourceClaimName
		return true, nil
	})
	if !isGated(t, ns, "trainer") || !isGated(t, ns, "early") {
		t.Fatal("a pod was admitted past a Budget of 4 devices")
	}

	setHard(t, ns, "gpus", corev1.ResourceList{devices: resource.MustParse("8"), extended: resource.MustParse("100")})
	testbed.Poll(t, time.Minute, "the trainer to be admitted", func(context.Context) (bool, error) { return !isGated(t, ns, "trainer"), nil })
	wantUsed(t, ns, "gpus", map[corev1.ResourceName]string{devices: "8", extended: "8"})
	if claim, err := clientset.ResourceV1().ResourceClaims(ns).Get(ctx, generated, metav1.GetOptions{}); err != nil {
		t.Errorf("getting the trainer's claim %s: %v", generated, err)
	} else if !slices.Contains(claim.Finalizers, v1alpha1.ChargedFinalizer) {
		t.Errorf("the admitted trainer's claim %s has finalizers %v; want it pinned", generated, claim.Finalizers)
	}

	// A claim shared by two pods is charged once, and stays charged while either runs.
	setHard(t, ns, "gpus", corev1.ResourceList{devices: resource.MustParse("12"), extended: resource.MustParse("100")})
	tenantCreate(t, tenant.ResourceV1().ResourceClaims(ns).Create, &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "shared"}, Spec: *devicesSpec(class, 4),
	})
	for _, name := range []string{"s1", "s2"} {
		tenantCreate(t, tenant.CoreV1().Pods(ns).Create, claimPod(ns, name, corev1.PodResourceClaim{Name: "gpu", ResourceClaimName: ptr.To("shared")}))
	}
	testbed.Poll(t, time.Minute, "both pods of the shared claim to be admitted", func(context.Context) (bool, error) {
		return !isGated(t, ns, "s1") && !isGated(t, ns, "s2"), nil
	})
	wantUsed(t, ns, "gpus", map[corev1.ResourceName]string{devices: "12", extended: "12"})
	tenantCreate(t, tenant.ResourceV1().ResourceClaims(ns).Create, &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "one"}, Spec: *devicesSpec(class, 1),
	})
	tenantCreate(t, tenant.CoreV1().Pods(ns).Create, claimPod(ns, "s3", corev1.PodResourceClaim{Name: "gpu", ResourceClaimName: ptr.To("one")}))
	waitReason(t, m, ns, "s3", quota.CodeInsufficient, string(devices)+": 1 requested, 0 free")

	deletePod(t, ns, "s1", 0)
	testbed.Poll(t, time.Minute, "the manager to see s1 gone", func(context.Context) (bool, error) {
		b := getBudget(t, ns, "gpus")
		return b.Status.AdmittedPods == 2, nil
	})
	if !isGated(t, ns, "s3") {
		t.Fatal("s3 was admitted while s2 still holds the shared claim")
	}
	wantUsed(t, ns, "gpus", map[corev1.ResourceName]string{devices: "12", extended: "12"})
	deletePod(t, ns, "s2", 0)
	testbed.Poll(t, time.Minute, "s3 to be admitted once the shared claim's last pod ended", func(context.Context) (bool, error) { return !isGated(t, ns, "s3"), nil })
	wantUsed(t, ns, "gpus", map[corev1.ResourceName]string{devices: "9", extended: "9"})

	// The template appears: the early pod's claim is known, and it would need 16.
	tenantCreate(t, tenant.ResourceV1().ResourceClaimTemplates(ns).Create, &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "sixteen"},
		Spec:       resourceapi.ResourceClaimTemplateSpec{Spec: *devicesSpec(class, 16)},
	})
	waitReason(t, m, ns, "early", quota.CodeNeverFits, string(devices)+": 16 requested")
}

func devicesSpec(class string, n int64) *resourceapi.ResourceClaimSpec {
	return &resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
		Name:    "gpus",
		Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: n},
	}}}}
}

// claimPod is a gated pod of 100m CPU that uses one claim.
func claimPod(ns, name string, claim corev1.PodResourceClaim) *corev1.Pod {
	p := gatedPod(ns, name, "100m")
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{claim}
	p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: claim.Name}}
	return p
}

// editTenant returns a client acting as the ServiceAccount "tenant" of ns, bound there
// to the built-in edit ClusterRole, once it may create pods and ResourceClaims.
func editTenant(t *testing.T, ns string) kubernetes.Interface {
	t.Helper()
	ctx := t.Context()
	cfg, err := cluster.ServiceAccountConfig(ctx, ns, "tenant", time.Hour)
	if err != nil {
		t.Fatalf("credentials for the tenant: %v", err)
	}
	mustCreate(t, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "tenant-edit", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "tenant"}},
	})
	c := kubernetes.NewForConfigOrDie(cfg)
	testbed.Poll(t, time.Minute, "the tenant to be allowed to create pods and resourceclaims", func(context.Context) (bool, error) {
		_, err := c.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		_, err = c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	return c
}

// tenantCreate creates obj with the tenant's client, retrying while edit's aggregated
// rules are still reaching the authorizer.
func tenantCreate[T any](t *testing.T, create func(context.Context, T, metav1.CreateOptions) (T, error), obj T) {
	t.Helper()
	var last error
	testbed.Poll(t, time.Minute, "the tenant's create to succeed", func(context.Context) (bool, error) {
		_, last = create(t.Context(), obj, metav1.CreateOptions{})
		return last == nil, nil
	})
}

// waitReason waits until the manager gives pod ns/name a wait reason of code whose
// message contains text.
func waitReason(t *testing.T, m *runningManager, ns, name string, code quota.ReasonCode, text string) {
	t.Helper()
	p, err := clientset.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting pod %s: %v", name, err)
	}
	var last quota.Reason
	testbed.Poll(t, time.Minute, "pod "+name+" to wait with "+string(code), func(context.Context) (bool, error) {
		last, _ = m.ctrl.Core().Reader().WaitReason(p.UID)
		return last.Code == code && strings.Contains(last.Message, text), nil
	})
}

func setHard(t *testing.T, ns, name string, hard corev1.ResourceList) {
	t.Helper()
	editBudget(t, ns, name, func(b *v1alpha1.Budget) { b.Spec.Hard = hard })
}

// wantUsed waits until the budget's status.used shows want for each name of want.
func wantUsed(t *testing.T, ns, name string, want map[corev1.ResourceName]string) {
	t.Helper()
	matches := func() bool {
		b := getBudget(t, ns, name)
		for r, v := range want {
			if q := b.Status.Used[r]; q.Cmp(resource.MustParse(v)) != 0 {
				return false
			}
		}
		return true
	}
	testbed.Poll(t, time.Minute, "budget "+name+" to show used "+formatUsed(want), func(context.Context) (bool, error) { return matches(), nil })
}

func formatUsed(want map[corev1.ResourceName]string) string {
	var parts []string
	for r, v := range want {
		parts = append(parts, string(r)+"="+v)
	}
	return strings.Join(parts, ",")
}
