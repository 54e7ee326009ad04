package quota

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/quotagate/quotagate/pkg/quota/internal/ledger"
)

func exactly(class string, n int64) resourceapi.DeviceRequest {
	return resourceapi.DeviceRequest{Name: "r", Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: n}}
}

func allOf(class string) resourceapi.DeviceRequest {
	return resourceapi.DeviceRequest{Name: "all", Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeAll}}
}

func claimSpec(reqs ...resourceapi.DeviceRequest) *resourceapi.ResourceClaimSpec {
	return &resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: reqs}}
}

// TestClaimUsage: what one claim charges, as kube's claim evaluator (resource_claims.go
// at v1.37.2) computes it.
func TestClaimUsage(t *testing.T) {
	sub := func(class string, mode resourceapi.DeviceAllocationMode, n int64) resourceapi.DeviceSubRequest {
		return resourceapi.DeviceSubRequest{Name: "s", DeviceClassName: class, AllocationMode: mode, Count: n}
	}
	exact := resourceapi.DeviceAllocationModeExactCount
	tests := map[string]struct {
		spec *resourceapi.ResourceClaimSpec
		want string
	}{
		"no requests charges nothing": {spec: claimSpec(), want: ""},
		"exactly: its count, under both names": {
			spec: claimSpec(exactly("gpu", 8)),
			want: "gpu.deviceclass.resource.k8s.io/devices=8,requests.deviceclass.resource.kubernetes.io/gpu=8,requests.example.com/gpu=8",
		},
		"requests of one class add up; a class without an extended name has none": {
			spec: claimSpec(exactly("gpu", 2), exactly("gpu", 3), exactly("nic", 1)),
			want: "gpu.deviceclass.resource.k8s.io/devices=5,requests.deviceclass.resource.kubernetes.io/gpu=5,requests.example.com/gpu=5," +
				"nic.deviceclass.resource.k8s.io/devices=1,requests.deviceclass.resource.kubernetes.io/nic=1",
		},
		"allocationMode All charges the most one claim can hold (32)": {
			spec: claimSpec(allOf("nic")),
			want: "nic.deviceclass.resource.k8s.io/devices=32,requests.deviceclass.resource.kubernetes.io/nic=32",
		},
		"firstAvailable: the largest subrequest of each class, every class": {
			spec: claimSpec(resourceapi.DeviceRequest{Name: "fa", FirstAvailable: []resourceapi.DeviceSubRequest{
				sub("gpu", exact, 4), sub("gpu", exact, 2), sub("nic", exact, 1),
			}}),
			want: "gpu.deviceclass.resource.k8s.io/devices=4,requests.deviceclass.resource.kubernetes.io/gpu=4,requests.example.com/gpu=4," +
				"nic.deviceclass.resource.k8s.io/devices=1,requests.deviceclass.resource.kubernetes.io/nic=1",
		},
		"firstAvailable with All": {
			spec: claimSpec(resourceapi.DeviceRequest{Name: "fa", FirstAvailable: []resourceapi.DeviceSubRequest{
				sub("nic", exact, 1), sub("nic", resourceapi.DeviceAllocationModeAll, 0),
			}}),
			want: "nic.deviceclass.resource.k8s.io/devices=32,requests.deviceclass.resource.kubernetes.io/nic=32",
		},
		"an unknown allocation mode charges zero devices, as in kube": {
			spec: claimSpec(resourceapi.DeviceRequest{Name: "x", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "nic", AllocationMode: "Future", Count: 3}}),
			want: "nic.deviceclass.resource.k8s.io/devices=0,requests.deviceclass.resource.kubernetes.io/nic=0",
		},
	}
	extended := func(class string) string {
		if class == "gpu" {
			return "example.com/gpu"
		}
		return ""
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := listDiff(parseList(tc.want), ClaimUsage(tc.spec, extended)); diff != "" {
				t.Errorf("ClaimUsage (-want +got):\n%s", diff)
			}
		})
	}
}

// fakeSpecs are claims and templates by namespace/name; a claim's UID is "uid-" and its
// key, and those in deleting are being deleted.
type fakeSpecs struct {
	claims, templates map[string]*resourceapi.ResourceClaimSpec
	deleting          map[string]bool
}

func (f fakeSpecs) Claim(ns, name string) (*resourceapi.ResourceClaimSpec, bool) {
	s, ok := f.claims[ns+"/"+name]
	return s, ok
}
func (f fakeSpecs) ClaimIdentity(ns, name string) (types.UID, bool) {
	return types.UID("uid-" + ns + "/" + name), f.deleting[ns+"/"+name]
}
func (f fakeSpecs) Template(ns, name string) (*resourceapi.ResourceClaimSpec, bool) {
	s, ok := f.templates[ns+"/"+name]
	return s, ok
}
func (f fakeSpecs) ExtendedResourceName(string) string { return "" }

var testSpecs = fakeSpecs{
	claims: map[string]*resourceapi.ResourceClaimSpec{
		"team-a/shared":      claimSpec(exactly("gpu", 4)),
		"team-a/job-0-gpu-x": claimSpec(exactly("gpu", 8)),
		"team-a/going":       claimSpec(exactly("gpu", 2)),
	},
	templates: map[string]*resourceapi.ResourceClaimSpec{"team-a/eight": claimSpec(exactly("gpu", 8))},
	deleting:  map[string]bool{"team-a/going": true},
}

func TestWithClaims(t *testing.T) {
	direct := func(entry, claim string) corev1.PodResourceClaim {
		return corev1.PodResourceClaim{Name: entry, ResourceClaimName: ptr.To(claim)}
	}
	fromTemplate := func(entry, tmpl string) corev1.PodResourceClaim {
		return corev1.PodResourceClaim{Name: entry, ResourceClaimTemplateName: ptr.To(tmpl)}
	}
	tests := map[string]struct {
		claims    []corev1.PodResourceClaim
		generated map[string]string // entry -> claim name in status.resourceClaimStatuses
		ungated   bool
		wantKeys  []string
		wantUsage string
		wantErr   string
	}{
		"no claims: PodUsage alone": {wantUsage: "requests.cpu=1,pods=1,count/pods=1"},
		"a claim named directly, by its name and UID": {
			claims:    []corev1.PodResourceClaim{direct("gpus", "shared")},
			wantKeys:  []string{"team-a/shared uid-team-a/shared"},
			wantUsage: "requests.cpu=1,pods=1,count/pods=1,gpu.deviceclass.resource.k8s.io/devices=4,requests.deviceclass.resource.kubernetes.io/gpu=4",
		},
		"the same claim twice counts once": {
			claims:    []corev1.PodResourceClaim{direct("a", "shared"), direct("b", "shared")},
			wantKeys:  []string{"team-a/shared uid-team-a/shared"},
			wantUsage: "requests.cpu=1,pods=1,count/pods=1,gpu.deviceclass.resource.k8s.io/devices=4,requests.deviceclass.resource.kubernetes.io/gpu=4",
		},
		"a template whose claim is not made yet waits for it, charged nothing": {
			claims:    []corev1.PodResourceClaim{fromTemplate("gpu", "eight")},
			wantUsage: "requests.cpu=1,pods=1,count/pods=1",
			wantErr:   `waiting for Kubernetes to make the ResourceClaim of resourceClaims "gpu" from ResourceClaimTemplate team-a/eight`,
		},
		"a template whose claim exists: the claim, by its name": {
			claims:    []corev1.PodResourceClaim{fromTemplate("gpu", "eight")},
			generated: map[string]string{"gpu": "job-0-gpu-x"},
			wantKeys:  []string{"team-a/job-0-gpu-x uid-team-a/job-0-gpu-x"},
			wantUsage: "requests.cpu=1,pods=1,count/pods=1,gpu.deviceclass.resource.k8s.io/devices=8,requests.deviceclass.resource.kubernetes.io/gpu=8",
		},
		"a made claim not in the cache yet waits, never charged from its template": {
			claims:    []corev1.PodResourceClaim{fromTemplate("gpu", "eight")},
			generated: map[string]string{"gpu": "job-1-gpu-y"},
			wantUsage: "requests.cpu=1,pods=1,count/pods=1",
			wantErr:   `waiting for ResourceClaim team-a/job-1-gpu-y (resourceClaims "gpu") to exist`,
		},
		"a missing claim is named": {
			claims:    []corev1.PodResourceClaim{direct("gpus", "shared"), direct("more", "nowhere")},
			wantKeys:  []string{"team-a/shared uid-team-a/shared"},
			wantUsage: "requests.cpu=1,pods=1,count/pods=1,gpu.deviceclass.resource.k8s.io/devices=4,requests.deviceclass.resource.kubernetes.io/gpu=4",
			wantErr:   `waiting for ResourceClaim team-a/nowhere (resourceClaims "more") to exist`,
		},
		"a missing template is named": {
			claims:    []corev1.PodResourceClaim{fromTemplate("gpu", "sixteen")},
			wantUsage: "requests.cpu=1,pods=1,count/pods=1",
			wantErr:   `waiting for ResourceClaimTemplate team-a/sixteen (resourceClaims "gpu") to exist`,
		},
		"a gated pod waits while its claim is being deleted": {
			claims:    []corev1.PodResourceClaim{direct("gpus", "going")},
			wantUsage: "requests.cpu=1,pods=1,count/pods=1",
			wantErr:   `waiting for ResourceClaim team-a/going (resourceClaims "gpus"), which is being deleted, to exist again`,
		},
		"an admitted pod stays charged for its claim while it is being deleted": {
			claims:    []corev1.PodResourceClaim{direct("gpus", "going")},
			ungated:   true,
			wantKeys:  []string{"team-a/going uid-team-a/going"},
			wantUsage: "requests.cpu=1,pods=1,count/pods=1,gpu.deviceclass.resource.k8s.io/devices=2,requests.deviceclass.resource.kubernetes.io/gpu=2",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := makePod("p").NS("team-a").Req("cpu=1").Obj()
			pod.Spec.ResourceClaims = tc.claims
			for entry, claim := range tc.generated {
				pod.Status.ResourceClaimStatuses = append(pod.Status.ResourceClaimStatuses, corev1.PodResourceClaimStatus{Name: entry, ResourceClaimName: ptr.To(claim)})
			}
			before := NewPod(pod, "", t0)
			before.Gated = !tc.ungated
			got := WithClaims(before, PodClaims(pod), testSpecs)
			var keys []string
			for _, c := range got.Claims {
				keys = append(keys, c.Key+" "+string(c.UID))
			}
			if diff := cmp.Diff(tc.wantKeys, keys); diff != "" {
				t.Errorf("claim keys (-want +got):\n%s", diff)
			}
			if diff := listDiff(parseList(tc.wantUsage), got.Usage); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
			if got.ClaimsError != tc.wantErr {
				t.Errorf("ClaimsError = %q, want %q", got.ClaimsError, tc.wantErr)
			}
			if diff := listDiff(parseList("requests.cpu=1,pods=1,count/pods=1"), before.Usage); diff != "" {
				t.Errorf("WithClaims changed the usage it was given (-want +got):\n%s", diff)
			}
		})
	}
}

// withClaims gives a test pod claims of n gpu devices each, by key.
func withClaims(p Pod, claims map[string]int64) Pod {
	specs := fakeSpecs{claims: map[string]*resourceapi.ResourceClaimSpec{}}
	var refs []PodClaim
	for key, n := range claims {
		specs.claims[p.Namespace+"/"+key] = claimSpec(exactly("gpu", n))
		refs = append(refs, PodClaim{Name: key, ClaimName: key})
	}
	return WithClaims(p, refs, specs)
}

// A claim shared by pods is charged once to each budget covering any of them, while
// any of them is charged, and given back with the last.
func TestLedgerChargesASharedClaimOnce(t *testing.T) {
	l := ledger.New[*podState]()
	l.SetHard(parseList("gpu.deviceclass.resource.k8s.io/devices=8,requests.cpu=4"))
	a := &podState{pod: withClaims(makePod("a").Req("cpu=1").Pod(), map[string]int64{"shared": 8})}
	b := &podState{pod: withClaims(makePod("b").Req("cpu=1").Pod(), map[string]int64{"shared": 8})}
	used := func(want string) {
		t.Helper()
		if diff := listDiff(parseList(want), restrictTo(listOf(l.Used()), l.Resources())); diff != "" {
			t.Errorf("used (-want +got):\n%s", diff)
		}
	}
	if diff := listDiff(parseList("requests.cpu=1,pods=1,count/pods=1"), listOf(l.Unshared(a.usage(), a.claims()))); diff == "" {
		t.Error("before any charge, unshared dropped the claim")
	}
	chargeLedger(&l, a, a.usage(), a.claims())
	used("gpu.deviceclass.resource.k8s.io/devices=8,requests.cpu=1")
	if r, over := l.Excess(l.Unshared(b.usage(), b.claims())); over {
		t.Errorf("b, whose claim is charged already, does not fit: %s", r)
	}
	if _, over := l.Excess(b.usage()); !over {
		t.Error("b's whole usage fits beside a's: the test proves nothing")
	}
	chargeLedger(&l, b, b.usage(), b.claims())
	used("gpu.deviceclass.resource.k8s.io/devices=8,requests.cpu=2")
	l.Release(a.pod.UID, a.usage(), a.claims())
	used("gpu.deviceclass.resource.k8s.io/devices=8,requests.cpu=1")
	l.Release(b.pod.UID, b.usage(), b.claims())
	used("gpu.deviceclass.resource.k8s.io/devices=0,requests.cpu=0")
	if left := maps.Collect(l.ChargedClaims()); len(left) != 0 {
		t.Errorf("claims left charged after every pod was released: %v", left)
	}
}

// The core: pods that share a claim are admitted together under a budget the claim
// alone fills; a pod whose claim does not exist waits, saying for which.
func TestAdmitSharedClaimAndPendingClaim(t *testing.T) {
	q, _ := newTestQueue()
	q.SetNamespace("team-a", map[string]string{"quotagate.io/enabled": "true"})
	key := BudgetKey{Namespace: "team-a", Name: "gpus"}
	q.UpsertBudget(makeBudget("team-a", "gpus").Hard("gpu.deviceclass.resource.k8s.io/devices=8").Obj())
	a := withClaims(makePod("a").NS("team-a").Created(1).Pod(), map[string]int64{"shared": 8})
	b := withClaims(makePod("b").NS("team-a").Created(2).Pod(), map[string]int64{"shared": 8})
	c := withClaims(makePod("c").NS("team-a").Created(3).Pod(), map[string]int64{"own": 1})
	pending := makePod("d").NS("team-a").Created(0).Pod()
	pending = WithClaims(pending, []PodClaim{{Name: "gpu", TemplateName: "sixteen"}}, testSpecs)
	for _, p := range []Pod{a, b, c, pending} {
		q.UpsertPod(p)
	}
	if diff := cmp.Diff([]string{"a", "b"}, admitNames(q)); diff != "" {
		t.Errorf("admitted (-want +got):\n%s", diff)
	}
	devices := func(want int64) {
		t.Helper()
		st := mustStatus(t, q, key)
		if got := st.Used["gpu.deviceclass.resource.k8s.io/devices"]; got.Value() != want {
			t.Errorf("used devices = %s, want %d", got.String(), want)
		}
	}
	devices(8)
	if r, ok := q.Reader().WaitReason(pending.UID); !ok || r.Code != CodeClaimPending || r.Message != `waiting for ResourceClaimTemplate team-a/sixteen (resourceClaims "gpu") to exist` {
		t.Errorf("pending pod's reason = %+v, %v", r, ok)
	}
	if r, _ := q.Reader().WaitReason(c.UID); r.Code != CodeInsufficient {
		t.Errorf("c's reason = %+v, want %s", r, CodeInsufficient)
	}
	// a ends: b still uses the claim, so nothing is freed.
	q.DeletePod(a.UID)
	if got := admitNames(q); len(got) != 0 {
		t.Errorf("admitted %v after a ended while b holds the shared claim", got)
	}
	devices(8)
	q.DeletePod(b.UID)
	if diff := cmp.Diff([]string{"c"}, admitNames(q)); diff != "" {
		t.Errorf("admitted after the claim's last pod ended (-want +got):\n%s", diff)
	}
	devices(1)
}

// A claim of the same name and spec, made again, is another claim: the pod's view
// changes, so a gated pod is decided again and the claim it is charged for is the new one.
func TestSameClaimsComparesUIDs(t *testing.T) {
	usage := parseList("gpu.deviceclass.resource.k8s.io/devices=1")
	a := []ClaimCharge{{Key: "team-a/c", UID: "u1", Usage: usage}}
	if !sameClaims(a, []ClaimCharge{{Key: "team-a/c", UID: "u1", Usage: usage}}) {
		t.Error("the same claim is not the same")
	}
	if sameClaims(a, []ClaimCharge{{Key: "team-a/c", UID: "u2", Usage: usage}}) {
		t.Error("a claim made again under the same name is the same")
	}
}

// The core hands out, with an admission, the claims it charged, by name and UID: what
// the controller pins before the ungate patch.
func TestAdmissionCarriesItsClaims(t *testing.T) {
	q, _ := newTestQueue()
	q.SetNamespace("team-a", map[string]string{"quotagate.io/enabled": "true"})
	q.UpsertBudget(makeBudget("team-a", "gpus").Hard("gpu.deviceclass.resource.k8s.io/devices=4").Obj())
	p := withClaims(makePod("a").NS("team-a").Pod(), map[string]int64{"shared": 4})
	q.UpsertPod(p)
	adm := q.Admit()
	if len(adm) != 1 {
		t.Fatalf("Admit = %v, want one", adm)
	}
	want := []ClaimCharge{{Key: "team-a/shared", UID: "uid-team-a/shared", Usage: p.Claims[0].Usage}}
	if diff := cmp.Diff(want, adm[0].Claims); diff != "" {
		t.Errorf("Admission.Claims (-want +got):\n%s", diff)
	}
	if got := adm[0].Claims[0]; got.Namespace() != "team-a" || got.Name() != "shared" {
		t.Errorf("claim %s: namespace %q, name %q", got.Key, got.Namespace(), got.Name())
	}
}

// A group whose members share a claim is charged the claim once, when it is weighed as
// when it is charged: it fits a budget the claim alone fills, and one that a running
// pod's use of the claim already charges.
func TestGroupSharingAClaimIsChargedItOnce(t *testing.T) {
	q, _ := newTestQueue()
	q.SetNamespace("team-a", map[string]string{"quotagate.io/enabled": "true"})
	q.UpsertBudget(makeBudget("team-a", "gpus").Hard("gpu.deviceclass.resource.k8s.io/devices=8").Obj())
	for _, name := range []string{"g-0", "g-1"} {
		q.UpsertPod(withClaims(makePod(name).NS("team-a").Group("g", 2).Pod(), map[string]int64{"shared": 8}))
	}
	got := admitNames(q)
	slices.Sort(got)
	if diff := cmp.Diff([]string{"g-0", "g-1"}, got); diff != "" {
		t.Fatalf("admitted (-want +got):\n%s", diff)
	}
	if used := mustStatus(t, q, BudgetKey{Namespace: "team-a", Name: "gpus"}).Used["gpu.deviceclass.resource.k8s.io/devices"]; used.Value() != 8 {
		t.Errorf("used devices = %s, want 8", used.String())
	}

	// A second group on the same claim, which the first keeps charged: it adds nothing.
	for _, name := range []string{"h-0", "h-1"} {
		q.UpsertPod(withClaims(makePod(name).NS("team-a").Group("h", 2).Pod(), map[string]int64{"shared": 8}))
	}
	got = admitNames(q)
	slices.Sort(got)
	if diff := cmp.Diff([]string{"h-0", "h-1"}, got); diff != "" {
		t.Fatalf("admitted (-want +got):\n%s", diff)
	}
}

// A group member whose claim another pod keeps charged adds only its own requests
// while that pod runs, but the budget's hard must still hold the claim with them: a
// hard lowered below the claim makes it never fit, and it is parked so, not left at
// the head of a StrictFIFO budget, where it would hold back every pod behind it once
// the claim's last running pod ended.
func TestGroupOnAChargedClaimThatCanNeverFitIsParked(t *testing.T) {
	q, _ := newTestQueue()
	q.SetNamespace("team-a", map[string]string{"quotagate.io/enabled": "true"})
	q.UpsertBudget(makeBudget("team-a", "gpus").Hard("gpu.deviceclass.resource.k8s.io/devices=8,cpu=1").Strict().Obj())
	a := withClaims(makePod("a").NS("team-a").Req("cpu=1").Created(1).Pod(), map[string]int64{"shared": 8})
	q.UpsertPod(a)
	if got := admitNames(q); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("admitted %v, want a", got)
	}
	q.UpsertPod(withClaims(makePod("g-0").NS("team-a").Req("cpu=1").Group("g", 1).Created(2).Pod(), map[string]int64{"shared": 8}))
	q.UpsertPod(makePod("d").NS("team-a").Req("cpu=1").Created(3).Pod())
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v while a holds the only cpu", got)
	}
	q.UpsertBudget(makeBudget("team-a", "gpus").Hard("gpu.deviceclass.resource.k8s.io/devices=4,cpu=1").Strict().Obj())
	if r := waitOf(t, q, "g-0"); r.Code != CodeNeverFits || !strings.Contains(r.Message, "8 requested, more than the 4 hard") {
		t.Errorf("g-0 waits with %+v, want RequestsExceedHard: with its claim it needs 8 devices", r)
	}
	q.DeletePod(a.UID)
	if got := admitNames(q); !slices.Equal(got, []string{"d"}) {
		t.Fatalf("admitted %v once a ended, want d (g-0 can never fit and holds nothing back)", got)
	}
}
