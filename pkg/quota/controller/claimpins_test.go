package controller

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/gates"
	"github.com/quotagate/quotagate/pkg/quota"
)

// devicesOf is a claim spec of n devices of class gpu.
func devicesOf(n int64) resourceapi.ResourceClaimSpec {
	return resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
		Name: "r", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: n},
	}}}}
}

// gpuClaim is the claim ns/gpu of n devices with uid.
func gpuClaim(uid string, n int64, finalizers ...string) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gpu", UID: types.UID(uid), Finalizers: finalizers},
		Spec:       devicesOf(n),
	}
}

// claimUser is a gated pod of ns that uses the claim ns/gpu.
func claimUser(name string) *corev1.Pod {
	pod := podtest.New(name).NS("ns").UID("uid-"+name).At(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)).
		Gated().Container("c", "").Req("cpu=1").Obj()
	pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("gpu")}}
	return pod
}

// claimsController is a controller on api (a fake API server) that knows the claims
// seen (as its informer would have delivered them) and a Budget ns/b of 4 gpu devices.
func claimsController(t *testing.T, api client.Client, seen ...*resourceapi.ResourceClaim) (*Controller, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c, err := New(Options{Gate: v1alpha1.SchedulingGate, Workers: 1, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	useAPI(c, api, false, events.NewFakeRecorder(10))
	c.claims = newClaimIndex()
	c.pins = newClaimPins(c, c.claims)
	t.Cleanup(c.pins.queue.ShutDown)
	for _, claim := range seen {
		c.onClaimObject(claim, false)
	}
	c.core.SetNamespace("ns", map[string]string{v1alpha1.EnabledLabel: "true"})
	c.core.UpsertBudget(quota.Budget{Key: quota.BudgetKey{Namespace: "ns", Name: "b"}, Hard: corev1.ResourceList{
		"gpu.deviceclass.resource.k8s.io/devices": resource.MustParse("4"),
	}})
	return c, clk
}

// seePod gives the controller the pod as api has it now, as its informer would.
func seePod(t *testing.T, c *Controller, api client.Reader, pod *corev1.Pod) {
	t.Helper()
	fresh := &corev1.Pod{}
	if err := api.Get(t.Context(), client.ObjectKeyFromObject(pod), fresh); err != nil {
		t.Fatal(err)
	}
	c.onPod(fresh, false)
}

// TestUngatePinsTheChargedClaim: the claim a pod was charged for is pinned before its gate
// is removed, fenced on the claim's UID; a pod whose claim cannot be pinned is not
// ungated, and is decided again.
func TestUngatePinsTheChargedClaim(t *testing.T) {
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("i/o timeout")}
	deleting := gpuClaim("u1", 1, "example.com/keep")
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	tests := map[string]struct {
		// inAPI is the claim as the API server has it when the pod is ungated (nil:
		// gone); the manager decided on gpuClaim("u1", 1).
		inAPI *resourceapi.ResourceClaim
		// pin answers the pin patch; apply sends it on.
		pin func(apply func() error) error
		// readFails makes the fresh reads of the claim fail after the first.
		readFails  bool
		wantPinned bool
		wantGated  bool
	}{
		"pinned, then ungated": {inAPI: gpuClaim("u1", 1), wantPinned: true},
		"already pinned for another pod: ungated": {
			inAPI: gpuClaim("u1", 1, v1alpha1.ChargedFinalizer), wantPinned: true,
		},
		"next to another controller's finalizer": {inAPI: gpuClaim("u1", 1, "example.com/keep"), wantPinned: true},
		"the pin applied, its answer lost: ungated": {
			inAPI: gpuClaim("u1", 1),
			pin: func(apply func() error) error {
				if err := apply(); err != nil {
					return err
				}
				return timeout
			},
			wantPinned: true,
		},
		"the pin never applied and the claim cannot be read: not ungated": {
			inAPI:     gpuClaim("u1", 1),
			pin:       func(func() error) error { return timeout },
			readFails: true,
			wantGated: true,
		},
		"the pin refused every time: not ungated": {
			inAPI:     gpuClaim("u1", 1),
			pin:       func(func() error) error { return apierrors.NewServiceUnavailable("overloaded") },
			wantGated: true,
		},
		"the claim made again since the decision, with 8 devices: not ungated": {
			inAPI: gpuClaim("u2", 8), wantGated: true,
		},
		"the claim being deleted: not ungated": {inAPI: deleting, wantGated: true},
		"the claim gone: not ungated":          {wantGated: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			pod := claimUser("p1")
			objs := []client.Object{pod}
			if tc.inAPI != nil {
				objs = append(objs, tc.inAPI)
			}
			reads, failReads := 0, tc.readFails
			var unpinnedUngate bool
			api := fake.NewClientBuilder().WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					apply := func() error { return c.Patch(ctx, obj, patch, opts...) }
					if _, isClaim := obj.(*resourceapi.ResourceClaim); !isClaim {
						claim := &resourceapi.ResourceClaim{}
						err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "gpu"}, claim)
						unpinnedUngate = unpinnedUngate || err != nil || !slices.Contains(claim.Finalizers, v1alpha1.ChargedFinalizer)
						return apply()
					}
					if tc.pin != nil {
						return tc.pin(apply)
					}
					return apply()
				},
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if _, isClaim := obj.(*resourceapi.ResourceClaim); isClaim {
						if reads++; failReads && reads > 1 {
							return timeout
						}
					}
					return c.Get(ctx, key, obj, opts...)
				},
			}).Build()
			c, clk := claimsController(t, api, gpuClaim("u1", 1))
			seePod(t, c, api, pod)
			adm := c.core.Admit()
			if len(adm) != 1 {
				t.Fatalf("Admit = %v, want p1", adm)
			}
			if diff := cmp.Diff([]quota.ClaimCharge{{Key: "ns/gpu", UID: "u1", Usage: adm[0].Claims[0].Usage}}, adm[0].Claims); diff != "" {
				t.Fatalf("the admission's claims (-want +got):\n%s", diff)
			}
			c.ungate(ctx, adm[0])
			failReads = false

			got := &corev1.Pod{}
			if err := api.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
				t.Fatal(err)
			}
			if gated := gates.HasGate(got, v1alpha1.SchedulingGate); gated != tc.wantGated {
				t.Errorf("pod gated = %v, want %v", gated, tc.wantGated)
			}
			if unpinnedUngate {
				t.Error("the ungate patch was sent while the claim did not carry the finalizer")
			}
			claim := &resourceapi.ResourceClaim{}
			err := api.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "gpu"}, claim)
			if pinned := err == nil && slices.Contains(claim.Finalizers, v1alpha1.ChargedFinalizer); pinned != tc.wantPinned {
				t.Errorf("claim pinned = %v (%v), want %v", pinned, err, tc.wantPinned)
			}
			if tc.inAPI != nil && err == nil {
				for _, f := range tc.inAPI.Finalizers {
					if !slices.Contains(claim.Finalizers, f) {
						t.Errorf("the finalizer %s is gone: %v", f, claim.Finalizers)
					}
				}
			}
			// Not ungated, the pod has its charge back and waits to be decided again.
			if _, waiting := c.core.Reader().WaitCode(pod.UID); waiting != tc.wantGated {
				t.Errorf("pod waiting in the core = %v, want %v", waiting, tc.wantGated)
			}
			clk.Step(quota.DefaultInitialBackoff)
			if again := c.core.Admit(); tc.wantGated && len(again) != 1 {
				t.Errorf("after a backoff, Admit = %v, want p1 decided again", again)
			}
		})
	}
}

// TestClaimIsReleasedWhenNoPodMayRunWithIt: the finalizer stays while a pod that uses the
// claim may run with it, and goes once none may.
func TestClaimIsReleasedWhenNoPodMayRunWithIt(t *testing.T) {
	running := func(name string) *corev1.Pod {
		p := claimUser(name)
		p.Spec.SchedulingGates = nil
		p.Status.Phase = corev1.PodRunning
		return p
	}
	ended := func(name string, phase corev1.PodPhase) *corev1.Pod {
		p := running(name)
		p.Status.Phase = phase
		return p
	}
	tests := map[string]struct {
		pods []*corev1.Pod
		// sent marks p1 as ungated by a patch fenced on its version now (sentOlder: on an
		// older one); pinning marks its ungate as under way.
		sent, sentOlder, pinning bool
		wantPinned               bool
	}{
		"a running pod":                     {pods: []*corev1.Pod{running("p1")}, wantPinned: true},
		"a pod that succeeded":              {pods: []*corev1.Pod{ended("p1", corev1.PodSucceeded)}},
		"a pod that failed":                 {pods: []*corev1.Pod{ended("p1", corev1.PodFailed)}},
		"no pod (deleted, or a restart)":    {},
		"a gated pod no patch was sent for": {pods: []*corev1.Pod{claimUser("p1")}},
		"a gated pod whose ungate is under way": {
			pods: []*corev1.Pod{claimUser("p1")}, pinning: true, wantPinned: true,
		},
		"a gated pod whose patch may still apply": {
			pods: []*corev1.Pod{claimUser("p1")}, sent: true, wantPinned: true,
		},
		"a pod seen gated after its patch's version: it never applied": {
			pods: []*corev1.Pod{claimUser("p1")}, sentOlder: true,
		},
		"one sharer ended, one runs": {
			pods: []*corev1.Pod{ended("p1", corev1.PodSucceeded), running("p2")}, wantPinned: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			objs := []client.Object{gpuClaim("u1", 1, v1alpha1.ChargedFinalizer)}
			for _, p := range tc.pods {
				objs = append(objs, p)
			}
			api := fake.NewClientBuilder().WithObjects(objs...).Build()
			claim := &resourceapi.ResourceClaim{}
			if err := api.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "gpu"}, claim); err != nil {
				t.Fatal(err)
			}
			c, _ := claimsController(t, api, claim)
			for _, p := range tc.pods {
				seePod(t, c, api, p)
			}
			if len(tc.pods) > 0 {
				fresh := &corev1.Pod{}
				if err := api.Get(ctx, client.ObjectKeyFromObject(tc.pods[0]), fresh); err != nil {
					t.Fatal(err)
				}
				switch {
				case tc.sent:
					c.pins.sending(fresh.UID, fresh.ResourceVersion)
				case tc.sentOlder:
					c.pins.sending(fresh.UID, "1")
				}
				if tc.pinning {
					c.pins.begin(fresh.UID)
				}
			}
			retry, err := c.pins.release(ctx, "ns/gpu")
			if err != nil || retry {
				t.Fatalf("releaseClaim = %v, %v", retry, err)
			}
			got := &resourceapi.ResourceClaim{}
			if err := api.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "gpu"}, got); err != nil {
				t.Fatal(err)
			}
			if pinned := slices.Contains(got.Finalizers, v1alpha1.ChargedFinalizer); pinned != tc.wantPinned {
				t.Errorf("claim pinned = %v, want %v", pinned, tc.wantPinned)
			}
		})
	}
}

// TestUnsettledReleaseBlocksPins: a release whose answer is lost before it applied may
// still apply; until that is known, no pod is ungated relying on a pin of the claim.
// A retry of the same release settles it.
func TestUnsettledReleaseBlocksPins(t *testing.T) {
	ctx := t.Context()
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("i/o timeout")}
	pinned := gpuClaim("u1", 1, v1alpha1.ChargedFinalizer)
	lose := true
	api := fake.NewClientBuilder().WithObjects(pinned, claimUser("p1")).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, isClaim := obj.(*resourceapi.ResourceClaim); isClaim && lose {
				return timeout // lost on the way: not applied, as far as anyone can see
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	}).Build()
	c, _ := claimsController(t, api, pinned)

	// No pod may run with the claim yet: the release is tried, and its outcome is lost.
	retry, err := c.pins.release(ctx, "ns/gpu")
	if !retry || err == nil {
		t.Fatalf("releaseClaim = %v, %v; want a retry and the error", retry, err)
	}
	// p1 is admitted now: its claim still carries the finalizer, but the lost release may
	// land after the ungate; so p1 is not ungated.
	seePod(t, c, api, claimUser("p1"))
	adm := c.core.Admit()
	if len(adm) != 1 {
		t.Fatalf("Admit = %v, want p1", adm)
	}
	c.ungate(ctx, adm[0])
	got := &corev1.Pod{}
	if err := api.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "p1"}, got); err != nil {
		t.Fatal(err)
	}
	if !gates.HasGate(got, v1alpha1.SchedulingGate) {
		t.Fatal("p1 was ungated while a release of its claim might still apply")
	}
	// The retry gets an answer: released; the next ungate pins the claim afresh.
	lose = false
	if retry, err := c.pins.release(ctx, "ns/gpu"); retry || err != nil {
		t.Fatalf("releaseClaim = %v, %v", retry, err)
	}
	claim := &resourceapi.ResourceClaim{}
	if err := api.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "gpu"}, claim); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(claim.Finalizers, v1alpha1.ChargedFinalizer) {
		t.Fatalf("the retried release left the finalizer: %v", claim.Finalizers)
	}
	if err := c.pins.pinClaim(ctx, quota.ClaimCharge{Key: "ns/gpu", UID: "u1"}); err != nil {
		t.Fatalf("pinning once the release is settled: %v", err)
	}
}

// The pin and release patches apply to the claim they were built from only.
func TestPinAndReleasePatches(t *testing.T) {
	claim := gpuClaim("u1", 1)
	claim.ResourceVersion = "7"
	if diff := cmp.Diff(`[{"op":"test","path":"/metadata/uid","value":"u1"},{"op":"test","path":"/metadata/resourceVersion","value":"7"},`+
		`{"op":"add","path":"/metadata/finalizers","value":["quotagate.io/charged"]}]`, string(pinPatch(claim))); diff != "" {
		t.Errorf("pinPatch without finalizers (-want +got):\n%s", diff)
	}
	claim.Finalizers = []string{"example.com/keep"}
	if diff := cmp.Diff(`[{"op":"test","path":"/metadata/uid","value":"u1"},{"op":"test","path":"/metadata/resourceVersion","value":"7"},`+
		`{"op":"add","path":"/metadata/finalizers/-","value":"quotagate.io/charged"}]`, string(pinPatch(claim))); diff != "" {
		t.Errorf("pinPatch beside another finalizer (-want +got):\n%s", diff)
	}
	claim.Finalizers = append(claim.Finalizers, v1alpha1.ChargedFinalizer)
	if diff := cmp.Diff(`[{"op":"test","path":"/metadata/uid","value":"u1"},{"op":"test","path":"/metadata/resourceVersion","value":"7"},`+
		`{"op":"test","path":"/metadata/finalizers/1","value":"quotagate.io/charged"},{"op":"remove","path":"/metadata/finalizers/1"}]`,
		string(releasePatch(claim, 1))); diff != "" {
		t.Errorf("releasePatch (-want +got):\n%s", diff)
	}
	if !slices.ContainsFunc(v1alpha1.ManagerWritten, func(k v1alpha1.Key) bool {
		return k.Name == v1alpha1.ChargedFinalizer && k.Kind == v1alpha1.KeyFinalizer
	}) {
		t.Errorf("the finalizer the manager writes on claims, %s, is not in v1alpha1.ManagerWritten: the gate guard lets tenants remove it", v1alpha1.ChargedFinalizer)
	}
}

// Locks of different keys do not wait for each other, and a lock no one holds is dropped.
func TestKeyLocksDropUnusedLocks(t *testing.T) {
	var k keyLocks
	unlockA := k.lock("a")
	unlockB := k.lock("b") // would wait forever if keys shared a lock
	unlockB()
	unlockA()
	unlockA = k.lock("a") // free again
	unlockA()
	if n := len(k.locks); n != 0 {
		t.Errorf("%d locks kept with no holder", n)
	}
}
