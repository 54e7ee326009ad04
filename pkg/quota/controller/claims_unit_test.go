package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/quota"
)

// A cluster that does not serve resource.k8s.io/v1 is told apart from a failed lookup.
func TestServesClaims(t *testing.T) {
	without := meta.NewDefaultRESTMapper(nil)
	if served, err := servesClaims(without); served || err != nil {
		t.Errorf("without resource.k8s.io/v1: served %v, err %v; want false, nil", served, err)
	}
	with := meta.NewDefaultRESTMapper(nil)
	with.Add(resourceapi.SchemeGroupVersion.WithKind("ResourceClaim"), meta.RESTScopeNamespace)
	if served, err := servesClaims(with); !served || err != nil {
		t.Errorf("with resource.k8s.io/v1: served %v, err %v; want true, nil", served, err)
	}
}

// The handlers in the order an informer may deliver them: the pod before its template,
// the template, the class's extended name, the claim made from the template; the core's
// view follows each, and a pod that lost its claim waits again.
func TestClaimEventsReachThePod(t *testing.T) {
	c, err := New(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	c.pods = store
	c.claims = newClaimIndex()
	c.pins = newClaimPins(c, c.claims)
	t.Cleanup(c.pins.queue.ShutDown)
	c.core.SetNamespace("team-a", map[string]string{v1alpha1.EnabledLabel: "true"})
	c.core.UpsertBudget(quota.Budget{Key: quota.BudgetKey{Namespace: "team-a", Name: "gpus"}, Hard: corev1.ResourceList{
		"gpu.deviceclass.resource.k8s.io/devices": resource.MustParse("4"),
		"requests.example.com/gpu":                resource.MustParse("4"),
	}})

	pod := podtest.New("trainer").NS("team-a").UID("u1").RV(1).Gated().Container("c", "").Obj()
	pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("eight")}}
	deliver := func(p *corev1.Pod) {
		cp := compactPod(p)
		if err := store.Update(cp); err != nil {
			t.Fatal(err)
		}
		c.onPod(cp, false)
	}
	reason := func(want quota.ReasonCode, wantMsg string) {
		t.Helper()
		r, ok := c.core.Reader().WaitReason("u1")
		if !ok || r.Code != want || (wantMsg != "" && r.Message != wantMsg) {
			t.Errorf("reason = %+v (waiting %v), want %s %q", r, ok, want, wantMsg)
		}
	}
	spec := func(n int64) resourceapi.ResourceClaimSpec {
		return resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "r", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: n},
		}}}}
	}

	deliver(pod)
	reason(quota.CodeClaimPending, `waiting for ResourceClaimTemplate team-a/eight (resourceClaims "gpu") to exist`)

	tmpl := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "eight"},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: spec(8)}}
	c.onClaimObject(tmpl, false)
	// The template is not charged in place of its claim: the pod waits for the claim.
	reason(quota.CodeClaimPending, `waiting for Kubernetes to make the ResourceClaim of resourceClaims "gpu" from ResourceClaimTemplate team-a/eight`)

	// Kubernetes makes the claim: it is what counts, and it never fits.
	generated := pod.DeepCopy()
	generated.ResourceVersion = "2"
	generated.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptr.To("trainer-gpu-abcde")}}
	deliver(generated)
	reason(quota.CodeClaimPending, `waiting for ResourceClaim team-a/trainer-gpu-abcde (resourceClaims "gpu") to exist`)
	c.onClaimObject(&resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "trainer-gpu-abcde", UID: "c1"}, Spec: spec(8)}, false)
	reason(quota.CodeNeverFits, "gpu.deviceclass.resource.k8s.io/devices: 8 requested, more than the 4 hard of Budget team-a/gpus: it can never fit")

	// The class names an extended resource: the pod asks it as well.
	c.onClaimObject(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"},
		Spec: resourceapi.DeviceClassSpec{ExtendedResourceName: ptr.To("example.com/gpu")}}, false)
	st, _ := c.core.Reader().Status(quota.BudgetKey{Namespace: "team-a", Name: "gpus"})
	if q := st.Pending["requests.example.com/gpu"]; q.Value() != 8 {
		t.Errorf("pending requests.example.com/gpu = %s, want 8", q.String())
	}

	// The claim is deleted (nothing pinned it: the pod is gated) and made again with 2:
	// the new claim is what counts, and it fits.
	c.onClaimObject(&resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "trainer-gpu-abcde", UID: "c1"}}, true)
	reason(quota.CodeClaimPending, `waiting for ResourceClaim team-a/trainer-gpu-abcde (resourceClaims "gpu") to exist`)
	c.onClaimObject(&resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "trainer-gpu-abcde", UID: "c2"}, Spec: spec(2)}, false)
	reason(quota.CodeQueued, "")
	admitted := c.core.Admit()
	if len(admitted) != 1 || admitted[0].Pod.Name != "trainer" {
		t.Fatalf("admitted %v, want the trainer", admitted)
	}
	if got := admitted[0].Claims; len(got) != 1 || got[0].UID != "c2" {
		t.Errorf("the admission charges %+v, want the claim of UID c2", got)
	}
	st, _ = c.core.Reader().Status(quota.BudgetKey{Namespace: "team-a", Name: "gpus"})
	if q := st.Used["gpu.deviceclass.resource.k8s.io/devices"]; q.Value() != 2 {
		t.Errorf("used devices = %s, want 2", q.String())
	}

	// The pod is deleted: it uses nothing any more.
	c.forgetClaimUser("u1")
	if n := len(c.claims.podsOf("")); n != 0 {
		t.Errorf("%d pods still recorded as using claims after the delete", n)
	}
}

// A pod that asks example.com/gpu: 8 is charged 8 devices once a DeviceClass backs that
// name, and as a plain extended resource again when none does: a change of the classes
// gives the gated pods that ask extended resources their views again.
func TestDeviceClassesReachExtendedResourcePods(t *testing.T) {
	c, err := New(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	c.pods = store
	c.claims = newClaimIndex()
	c.pins = newClaimPins(c, c.claims)
	t.Cleanup(c.pins.queue.ShutDown)
	c.core.SetNamespace("team-a", map[string]string{v1alpha1.EnabledLabel: "true"})
	key := quota.BudgetKey{Namespace: "team-a", Name: "gpus"}
	c.core.UpsertBudget(quota.Budget{Key: key, Hard: corev1.ResourceList{
		"gpu.deviceclass.resource.k8s.io/devices":         resource.MustParse("1"),
		"requests.deviceclass.resource.kubernetes.io/gpu": resource.MustParse("100"),
		"requests.example.com/gpu":                        resource.MustParse("100"),
	}})

	pod := podtest.New("trainer").NS("team-a").UID("u1").RV(1).Gated().Container("c", "").Req("cpu=1,example.com/gpu=8").Obj()
	cp := compactPod(pod)
	if err := store.Add(cp); err != nil {
		t.Fatal(err)
	}
	c.onPod(cp, false)
	pending := func() corev1.ResourceList {
		t.Helper()
		st, _ := c.core.Reader().Status(key)
		return st.Pending
	}
	reason := func() quota.ReasonCode {
		r, _ := c.core.Reader().WaitReason("u1")
		return r.Code
	}
	if q := pending()["gpu.deviceclass.resource.k8s.io/devices"]; !q.IsZero() || reason() != quota.CodeQueued {
		t.Errorf("with no class: pending devices %s, reason %s; want none, and queued", q.String(), reason())
	}

	gpu := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"},
		Spec: resourceapi.DeviceClassSpec{ExtendedResourceName: ptr.To("example.com/gpu")}}
	c.onClaimObject(gpu, false)
	want := corev1.ResourceList{
		"gpu.deviceclass.resource.k8s.io/devices":         resource.MustParse("8"),
		"requests.deviceclass.resource.kubernetes.io/gpu": resource.MustParse("8"),
		"requests.example.com/gpu":                        resource.MustParse("8"),
	}
	for name, q := range want {
		if got := pending()[name]; got.Cmp(q) != 0 {
			t.Errorf("pending %s = %s, want %s", name, got.String(), q.String())
		}
	}
	if got := reason(); got != quota.CodeNeverFits {
		t.Errorf("reason with class gpu = %s, want %s (8 devices under a hard of 1)", got, quota.CodeNeverFits)
	}
	if adm := c.core.Admit(); len(adm) != 0 {
		t.Errorf("admitted %v under a hard of 1 device", adm)
	}

	c.onClaimObject(gpu, true)
	if q := pending()["gpu.deviceclass.resource.k8s.io/devices"]; !q.IsZero() {
		t.Errorf("with the class deleted: pending devices %s, want none", q.String())
	}
}
