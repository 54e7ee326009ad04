package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/pkg/quota"
)

// TestClaimSwapAfterAdmissionFails plays the attack of issue 46 as a tenant with nothing
// but the built-in edit role, with devices a scheduler can allocate (a ResourceSlice of
// 16 devices on a kwok node). Its pod is admitted with a claim of one device that no
// device matches, so it stays Pending; the tenant deletes the claim and makes one of the
// same name for 8 devices, which the scheduler would allocate at once. The claim was
// pinned before the gate was removed: the deleted claim stays, terminating, the new
// one cannot be made, and the tenant cannot take the pin off. A watch of the
// namespace's claims checks at every event that no more devices are allocated than the
// Budget's hard of 1. Once the pod is deleted (while no manager runs, then with a new
// one) the claim is released and its name is free again.
func TestClaimSwapAfterAdmissionFails(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t, true)
	class, driver := ns, ns+".example.com"
	devices := corev1.ResourceName(class + ".deviceclass.resource.k8s.io/devices")
	allocatable(t, class, driver, 16)
	guardNamespace(t, ns)
	claims := watchAllocatedDevices(t, ns)
	mustCreate(t, budget(ns, "gpus", corev1.ResourceList{devices: resource.MustParse("1")}, ""))
	tenant := editTenant(t, ns)
	m := startManager(t, nil, false)

	// One device that no device matches: admitted, it stays Pending.
	one := devicesSpec(class, 1)
	one.Devices.Requests[0].Exactly.Selectors = []resourceapi.DeviceSelector{{
		CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "nobody.example.com"`},
	}}
	tenantCreate(t, tenant.ResourceV1().ResourceClaims(ns).Create, &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}, Spec: *one})
	tenantCreate(t, tenant.CoreV1().Pods(ns).Create, claimPod(ns, "victim", corev1.PodResourceClaim{Name: "gpu", ResourceClaimName: ptr.To("gpu")}))
	testbed.Poll(t, time.Minute, "the victim to be admitted", func(context.Context) (bool, error) { return !isGated(t, ns, "victim"), nil })
	wantUsed(t, ns, "gpus", map[corev1.ResourceName]string{devices: "1"})
	pinned, err := clientset.ResourceV1().ResourceClaims(ns).Get(ctx, "gpu", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pinned.Finalizers, v1alpha1.ChargedFinalizer) {
		t.Fatalf("the admitted pod's claim is not pinned: finalizers %v", pinned.Finalizers)
	}

	// The attack.
	for name, patch := range map[string]struct {
		pt   types.PatchType
		data string
	}{
		"a merge patch": {types.MergePatchType, `{"metadata":{"finalizers":null}}`},
		"a JSON patch":  {types.JSONPatchType, `[{"op":"remove","path":"/metadata/finalizers"}]`},
	} {
		_, err := tenant.ResourceV1().ResourceClaims(ns).Patch(ctx, "gpu", patch.pt, []byte(patch.data), metav1.PatchOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), v1alpha1.ChargedFinalizer) {
			t.Errorf("the tenant removing the pin with %s: %v, want 403 naming %s", name, err, v1alpha1.ChargedFinalizer)
		}
	}
	if err := tenant.ResourceV1().ResourceClaims(ns).Delete(ctx, "gpu", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("the tenant deleting the claim: %v", err)
	}
	eight := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}, Spec: *devicesSpec(class, 8)}
	if _, err := tenant.ResourceV1().ResourceClaims(ns).Create(ctx, eight, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("the tenant making the claim again for 8 devices: %v, want 409 AlreadyExists", err)
	}
	got, err := clientset.ResourceV1().ResourceClaims(ns).Get(ctx, "gpu", metav1.GetOptions{})
	if err != nil || got.UID != pinned.UID || got.DeletionTimestamp == nil {
		t.Fatalf("after the delete: %v, %+v; want the pinned claim, terminating", err, got)
	}

	// The scheduler allocates 8 of these devices at once to a pod that may have them
	// (one of a namespace that does not opt in): it would have done so for the victim.
	plain := newNamespace(t, false)
	mustCreate(t, &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: plain, Name: "gpu"}, Spec: *devicesSpec(class, 8)})
	control := claimPod(plain, "control", corev1.PodResourceClaim{Name: "gpu", ResourceClaimName: ptr.To("gpu")})
	control.Spec.SchedulingGates = nil
	mustCreate(t, control)
	testbed.Poll(t, 2*time.Minute, "a pod with 8 of the devices to run", func(ctx context.Context) (bool, error) {
		p, err := clientset.CoreV1().Pods(plain).Get(ctx, "control", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, err
	})
	victim, err := clientset.CoreV1().Pods(ns).Get(ctx, "victim", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if victim.Spec.NodeName != "" || victim.Status.Phase != corev1.PodPending {
		t.Errorf("the victim is on node %q, %s; want it unscheduled and Pending", victim.Spec.NodeName, victim.Status.Phase)
	}
	if peak := claims.peak(); peak > 1 {
		t.Errorf("%d devices were allocated at once in %s, under a hard of 1", peak, ns)
	}
	wantUsed(t, ns, "gpus", map[corev1.ResourceName]string{devices: "1"})

	// The pod goes while no manager runs: the manager that comes next releases the claim,
	// and the name is free.
	m.stop(t)
	deletePod(t, ns, "victim", 0)
	m = startManager(t, nil, false)
	testbed.Poll(t, time.Minute, "the released claim to be gone", func(ctx context.Context) (bool, error) {
		_, err := clientset.ResourceV1().ResourceClaims(ns).Get(ctx, "gpu", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	tenantCreate(t, tenant.ResourceV1().ResourceClaims(ns).Create, eight)
	tenantCreate(t, tenant.CoreV1().Pods(ns).Create, claimPod(ns, "again", corev1.PodResourceClaim{Name: "gpu", ResourceClaimName: ptr.To("gpu")}))
	waitReason(t, m, ns, "again", quota.CodeNeverFits, string(devices)+": 8 requested, more than the 1 hard")
	if peak := claims.peak(); peak > 1 {
		t.Errorf("%d devices were allocated at once in %s, under a hard of 1", peak, ns)
	}
}

// TestDRABackedExtendedResourceIsChargedItsDevices: a tenant's pod that asks 8 of an
// extended resource that a DeviceClass backs (KEP-5004) is charged 8 devices of the
// class, and waits under a device hard of 1; raised to 8, it is admitted and charged 8
// under every name of the class. A pod that asks the class's implicit name is charged
// the same way, and waits while the first holds all 8.
func TestDRABackedExtendedResourceIsChargedItsDevices(t *testing.T) {
	ns := newNamespace(t, true)
	class := ns
	extended := "example.com/" + class
	devices := corev1.ResourceName(class + ".deviceclass.resource.k8s.io/devices")
	implicit := corev1.ResourceName("requests.deviceclass.resource.kubernetes.io/" + class)
	mustCreate(t, &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: class},
		Spec:       resourceapi.DeviceClassSpec{ExtendedResourceName: ptr.To(extended)},
	})
	t.Cleanup(func() {
		_ = admin.Delete(context.Background(), &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: class}})
	})
	hard := func(n string) corev1.ResourceList {
		return corev1.ResourceList{devices: resource.MustParse(n), implicit: resource.MustParse("100"),
			corev1.ResourceName("requests." + extended): resource.MustParse("100")}
	}
	mustCreate(t, budget(ns, "gpus", hard("1"), ""))
	tenant := editTenant(t, ns)
	m := startManager(t, nil, false)

	asks := func(name string, r corev1.ResourceName, n string) *corev1.Pod {
		p := gatedPod(ns, name, "100m")
		p.Spec.Containers[0].Resources.Requests[r] = resource.MustParse(n)
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{r: resource.MustParse(n)}
		return p
	}
	tenantCreate(t, tenant.CoreV1().Pods(ns).Create, asks("trainer", corev1.ResourceName(extended), "8"))
	waitReason(t, m, ns, "trainer", quota.CodeNeverFits, string(devices)+": 8 requested, more than the 1 hard")
	if !isGated(t, ns, "trainer") {
		t.Fatal("the pod was admitted with 8 devices under a hard of 1")
	}

	setHard(t, ns, "gpus", hard("8"))
	testbed.Poll(t, time.Minute, "the trainer to be admitted", func(context.Context) (bool, error) { return !isGated(t, ns, "trainer"), nil })
	wantUsed(t, ns, "gpus", map[corev1.ResourceName]string{devices: "8", implicit: "8", corev1.ResourceName("requests." + extended): "8"})

	tenantCreate(t, tenant.CoreV1().Pods(ns).Create, asks("implicit", corev1.ResourceName("deviceclass.resource.kubernetes.io/"+class), "1"))
	waitReason(t, m, ns, "implicit", quota.CodeInsufficient, string(devices)+": 1 requested, 0 free")
	if !isGated(t, ns, "implicit") {
		t.Fatal("a ninth device was admitted under a hard of 8")
	}
}

// allocatable creates a DeviceClass class of driver's devices and a ResourceSlice of n
// such devices on a kwok node, both deleted when the test ends.
func allocatable(t *testing.T, class, driver string, n int) {
	t.Helper()
	nodes, err := clientset.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("listing nodes: %v (%d)", err, len(nodes.Items))
	}
	slice := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: class},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   driver,
			Pool:     resourceapi.ResourcePool{Name: nodes.Items[0].Name, Generation: 1, ResourceSliceCount: 1},
			NodeName: ptr.To(nodes.Items[0].Name),
		},
	}
	for i := range n {
		slice.Spec.Devices = append(slice.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i)})
	}
	objs := []client.Object{
		&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Spec: resourceapi.DeviceClassSpec{
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "` + driver + `"`}}},
		}},
		slice,
	}
	mustCreate(t, objs...)
	t.Cleanup(func() {
		for _, o := range objs {
			_ = admin.Delete(context.Background(), o)
		}
	})
}

// guardNamespace puts the shipped gate guard in force in ns only (its binding selects ns),
// so that the other tests of the package, which write pods as no tenant may, are not
// refused. It waits until the API server applies it.
func guardNamespace(t *testing.T, ns string) {
	t.Helper()
	objs, err := testbed.GateGuard(repoRoot())
	if err != nil {
		t.Fatal(err)
	}
	policy := objs[0].(*admissionregistrationv1.ValidatingAdmissionPolicy)
	binding := objs[1].(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
	policy.Name, binding.Name = ns+"-gate-guard", ns+"-gate-guard"
	binding.Spec.PolicyName = policy.Name
	binding.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
		MatchLabels: map[string]string{corev1.LabelMetadataName: ns},
	}}
	mustCreate(t, policy, binding)
	t.Cleanup(func() {
		_ = admin.Delete(context.Background(), binding)
		_ = admin.Delete(context.Background(), policy)
	})
	testbed.Poll(t, time.Minute, "the gate guard to apply in "+ns, func(ctx context.Context) (bool, error) {
		probe := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "probe", Finalizers: []string{v1alpha1.ChargedFinalizer}},
			Spec: *devicesSpec("probe", 1)}
		_, err := clientset.ResourceV1().ResourceClaims(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsForbidden(err), nil
	})
}

// deviceWatch follows the allocated devices of a namespace's claims at every watch event.
type deviceWatch struct {
	mu        sync.Mutex
	allocated map[types.UID]int // by claim
	max       int
}

// watchAllocatedDevices starts following ns's claims before any exists.
func watchAllocatedDevices(t *testing.T, ns string) *deviceWatch {
	t.Helper()
	w, err := clientset.ResourceV1().ResourceClaims(ns).Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watching claims: %v", err)
	}
	t.Cleanup(w.Stop)
	d := &deviceWatch{allocated: map[types.UID]int{}}
	go func() {
		for ev := range w.ResultChan() {
			claim, ok := ev.Object.(*resourceapi.ResourceClaim)
			if !ok {
				continue
			}
			d.mu.Lock()
			n := 0
			if ev.Type != watch.Deleted && claim.Status.Allocation != nil {
				n = len(claim.Status.Allocation.Devices.Results)
			}
			d.allocated[claim.UID] = n
			sum := 0
			for _, v := range d.allocated {
				sum += v
			}
			d.max = max(d.max, sum)
			d.mu.Unlock()
		}
	}()
	return d
}

// peak is the most devices allocated at once to the namespace's claims.
func (d *deviceWatch) peak() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.max
}
