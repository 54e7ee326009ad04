package admission_test

import (
	"strconv"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/gates"
)

// testManagerWrittenNames: every name of v1alpha1.ManagerWritten is the manager's alone,
// as a tenant with nothing but the built-in edit role finds it. The admission record's
// annotations (admitted-at, admitted-by, borrowing, flavor, admitted-max-runtime) cannot be put on a new pod nor
// added, changed or removed later; the finalizer that pins a charged ResourceClaim cannot
// be put on a new claim nor removed, so a claim the tenant deletes stays until the manager
// lets it go, and its name cannot be taken meanwhile. Runs with the shipped gate guard of
// testGateGuard in force.
func testManagerWrittenNames(t *testing.T, e *env) {
	ctx := t.Context()
	tenant := e.tenantClient(t)
	manager := e.managerClient(t)
	tenantUser := "system:serviceaccount:" + e.gated + ":tenant"
	record := map[string]string{
		v1alpha1.AdmittedAtAnnotation:         "2026-12-04T10:00:00Z",
		v1alpha1.AdmittedByAnnotation:         e.gated + "/team-a",
		v1alpha1.AdmittedLabelsAnnotation:     `{"app":"web"}`,
		v1alpha1.BorrowingAnnotation:          e.gated + "/team-a",
		v1alpha1.FlavorAnnotation:             "spot",
		v1alpha1.AdmittedMaxRuntimeAnnotation: "2h0m0s",
	}
	annotations := v1alpha1.ManagerWrittenNames(v1alpha1.KeyAnnotation)
	for _, key := range annotations {
		if _, ok := record[key]; !ok {
			t.Fatalf("the test writes no value for the manager's annotation %s", key)
		}
	}

	for _, key := range annotations {
		t.Run("a tenant's new pod with "+key+" is refused", func(t *testing.T) {
			pod := podtest.New("forged").Annotation(key, record[key]).Obj()
			_, err := tenant.CoreV1().Pods(e.gated).Create(ctx, pod, metav1.CreateOptions{})
			want := []string{"quotagate-gate-guard", key + ": ", "not " + tenantUser, "A new Pod may not carry it"}
			if !apierrors.IsForbidden(err) || !containsAll(err.Error(), want...) {
				t.Errorf("create = %v, want 403 containing %q", err, want)
			}
		})
	}

	// An admitted pod, as the manager's ungate patch leaves it: the whole record.
	created, err := tenant.CoreV1().Pods(e.gated).Create(ctx, podtest.New("admitted").Obj(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	ungate, ok := gates.UngatePatch(created, v1alpha1.SchedulingGate, record)
	if !ok {
		t.Fatalf("pod was not gated: %v", gateNames(created))
	}
	if _, err := manager.CoreV1().Pods(e.gated).Patch(ctx, created.Name, types.JSONPatchType, ungate, metav1.PatchOptions{}); err != nil {
		t.Fatalf("the manager's ungate patch: %v", err)
	}
	plain, err := tenant.CoreV1().Pods(e.gated).Create(ctx, podtest.New("plain").Obj(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	for _, key := range annotations {
		path := "/metadata/annotations/" + strings.ReplaceAll(key, "/", "~1")
		for name, tc := range map[string]struct{ pod, patch string }{
			"changes": {created.Name, `[{"op":"replace","path":"` + path + `","value":"elsewhere"}]`},
			"removes": {created.Name, `[{"op":"remove","path":"` + path + `"}]`},
			"adds":    {plain.Name, `{"metadata":{"annotations":{"` + key + `":` + strconv.Quote(record[key]) + `}}}`},
		} {
			t.Run("a tenant who "+name+" "+key+" gets 403", func(t *testing.T) {
				pt := types.JSONPatchType
				if strings.HasPrefix(tc.patch, "{") {
					pt = types.MergePatchType
				}
				_, err := tenant.CoreV1().Pods(e.gated).Patch(ctx, tc.pod, pt, []byte(tc.patch), metav1.PatchOptions{})
				if want := []string{"quotagate-gate-guard", key + ": ", "not " + tenantUser}; !apierrors.IsForbidden(err) || !containsAll(err.Error(), want...) {
					t.Errorf("patch = %v, want 403 containing %q", err, want)
				}
			})
		}
	}
	t.Run("the record is as the manager wrote it", func(t *testing.T) {
		for name, want := range map[string]map[string]string{created.Name: record, plain.Name: nil} {
			got, err := e.client.CoreV1().Pods(e.gated).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, key := range annotations {
				if v, ok := got.Annotations[key]; v != want[key] || ok != (want != nil) {
					t.Errorf("pod %s: %s = %q (set: %v), want %q", name, key, v, ok, want[key])
				}
			}
		}
	})

	t.Run("a tenant's new claim with the manager's finalizer is refused", func(t *testing.T) {
		claim := deviceClaim("forged")
		claim.Finalizers = []string{v1alpha1.ChargedFinalizer}
		_, err := tenant.ResourceV1().ResourceClaims(e.gated).Create(ctx, claim, metav1.CreateOptions{})
		want := []string{"quotagate-gate-guard", v1alpha1.ChargedFinalizer + ": ", "not " + tenantUser, "A new ResourceClaim may not carry it"}
		if !apierrors.IsForbidden(err) || !containsAll(err.Error(), want...) {
			t.Errorf("create = %v, want 403 containing %q", err, want)
		}
	})

	t.Run("a pinned claim outlives its deletion, and keeps its name, until the manager lets it go", func(t *testing.T) {
		claims := tenant.ResourceV1().ResourceClaims(e.gated)
		claim, err := claims.Create(ctx, deviceClaim("pinned"), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("the tenant creating a claim: %v", err)
		}
		pin := `[{"op":"test","path":"/metadata/uid","value":"` + string(claim.UID) + `"},` +
			`{"op":"add","path":"/metadata/finalizers","value":["` + v1alpha1.ChargedFinalizer + `"]}]`
		if _, err := manager.ResourceV1().ResourceClaims(e.gated).Patch(ctx, claim.Name, types.JSONPatchType, []byte(pin), metav1.PatchOptions{}); err != nil {
			t.Fatalf("the manager pinning the claim: %v", err)
		}
		for name, patch := range map[string]struct {
			pt   types.PatchType
			data string
		}{
			"a JSON patch":  {types.JSONPatchType, `[{"op":"remove","path":"/metadata/finalizers/0"}]`},
			"a merge patch": {types.MergePatchType, `{"metadata":{"finalizers":null}}`},
		} {
			_, err := claims.Patch(ctx, claim.Name, patch.pt, []byte(patch.data), metav1.PatchOptions{})
			if want := []string{"quotagate-gate-guard", v1alpha1.ChargedFinalizer + ": ", "not " + tenantUser}; !apierrors.IsForbidden(err) || !containsAll(err.Error(), want...) {
				t.Errorf("removing the finalizer with %s = %v, want 403 containing %q", name, err, want)
			}
		}
		if err := claims.Delete(ctx, claim.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("the tenant deleting the claim: %v", err)
		}
		got, err := claims.Get(ctx, claim.Name, metav1.GetOptions{})
		if err != nil || got.DeletionTimestamp == nil || got.UID != claim.UID {
			t.Fatalf("after the delete: %v, %+v; want the same claim, terminating", err, got)
		}
		if _, err := claims.Create(ctx, deviceClaim("pinned"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
			t.Errorf("the tenant re-creating the claim = %v, want 409 AlreadyExists", err)
		}
		release := `[{"op":"test","path":"/metadata/uid","value":"` + string(claim.UID) + `"},` +
			`{"op":"test","path":"/metadata/finalizers/0","value":"` + v1alpha1.ChargedFinalizer + `"},` +
			`{"op":"remove","path":"/metadata/finalizers/0"}]`
		if _, err := manager.ResourceV1().ResourceClaims(e.gated).Patch(ctx, claim.Name, types.JSONPatchType, []byte(release), metav1.PatchOptions{}); err != nil {
			t.Fatalf("the manager releasing the claim: %v", err)
		}
		if _, err := claims.Get(ctx, claim.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the released claim: %v, want it gone", err)
		}
		if _, err := claims.Create(ctx, deviceClaim("pinned"), metav1.CreateOptions{}); err != nil {
			t.Errorf("the tenant re-creating the claim once released: %v", err)
		}
	})
}

// deviceClaim is a ResourceClaim for one device of class gpu (no driver needs to exist:
// nothing allocates it).
func deviceClaim(name string) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name:    "gpu",
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
		}}}},
	}
}
