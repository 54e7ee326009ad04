package quota

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
)

// DRA devices (resource.k8s.io/v1), counted as Kubernetes' claim evaluator counts them
// (k8s.io/kubernetes/pkg/quota/v1/evaluator/core/resource_claims.go):
//
//   - each request of a ResourceClaim charges <class>.deviceclass.resource.k8s.io/devices:
//     its count for allocationMode ExactCount, 32 (resourceapi.AllocationResultsMaxSize,
//     the most one claim can be allocated) for allocationMode All;
//   - a request with firstAvailable charges, per device class named by its subrequests,
//     the largest of those subrequests' counts (the worst case);
//   - the same count is charged as requests.deviceclass.resource.kubernetes.io/<class>
//     and, when the DeviceClass has spec.extendedResourceName, as requests.<that name>.
//
// ResourceQuota charges a claim when it is created, once, whichever pods use it.
// quotagate charges it when the first pod that uses it is admitted, to each budget that
// covers such a pod, once per budget (the ledger counts a claim's pods), until the last
// of them ends. Only a claim that exists is charged: a gated pod whose claim is missing,
// still to be made from its ResourceClaimTemplate, or being deleted waits (ClaimsError).
// The claim charged is the one of that UID (ClaimCharge.UID), and the manager pins it
// with v1alpha1.ChargedFinalizer before it removes the pod's gate, so the pod cannot run
// with another claim of the same name, nor with a claim made again from an edited
// template.
//
// A container may also ask devices as an extended resource that a DeviceClass backs:
// WithExtendedDevices.

// deviceClassQuotaSuffix is ResourceQuota's per-class device name:
// <class>.deviceclass.resource.k8s.io/devices.
const deviceClassQuotaSuffix = corev1.ResourceClaimsPerClass

// implicitExtendedPrefix is the quota name of a class's implicit extended resource:
// requests.deviceclass.resource.kubernetes.io/<class>.
const implicitExtendedPrefix = corev1.ResourceImplicitExtendedClaimsPerClass

// DeviceClassResource returns ResourceQuota's name for the devices of a class.
func DeviceClassResource(class string) corev1.ResourceName {
	return corev1.ResourceName(class + deviceClassQuotaSuffix)
}

// isDeviceQuotaName reports whether name is <class>.deviceclass.resource.k8s.io/devices
// or requests.deviceclass.resource.kubernetes.io/<class>, with a valid class name.
func isDeviceQuotaName(name corev1.ResourceName) bool {
	s := string(name)
	if class, ok := strings.CutSuffix(s, deviceClassQuotaSuffix); ok {
		return len(validation.IsDNS1123Subdomain(class)) == 0
	}
	if class, ok := strings.CutPrefix(s, implicitExtendedPrefix); ok {
		return len(validation.IsDNS1123Subdomain(class)) == 0
	}
	return false
}

// ClaimUsage is what one ResourceClaim charges.
// extended returns a DeviceClass's spec.extendedResourceName ("" when it has none or
// is unknown).
func ClaimUsage(spec *resourceapi.ResourceClaimSpec, extended func(class string) string) corev1.ResourceList {
	perClass := map[string]int64{}
	for _, req := range spec.Devices.Requests {
		switch {
		case len(req.FirstAvailable) > 0:
			worst := map[string]int64{}
			for _, sub := range req.FirstAvailable {
				worst[sub.DeviceClassName] = max(worst[sub.DeviceClassName], deviceCount(sub.AllocationMode, sub.Count))
			}
			for class, n := range worst {
				perClass[class] += n
			}
		case req.Exactly != nil:
			perClass[req.Exactly.DeviceClassName] += deviceCount(req.Exactly.AllocationMode, req.Exactly.Count)
		}
		// A request of a kind this version does not know charges nothing, as in kube.
	}
	usage := corev1.ResourceList{}
	for _, class := range slices.Sorted(maps.Keys(perClass)) {
		q := *resource.NewQuantity(perClass[class], resource.DecimalSI)
		usage[DeviceClassResource(class)] = q
		usage[corev1.ResourceName(implicitExtendedPrefix+class)] = q
		if ext := extended(class); ext != "" {
			usage[corev1.ResourceName(requestsPrefix+ext)] = q
		}
	}
	return usage
}

// deviceCount is what one request charges: its count, the most a claim can be
// allocated for All, nothing for a mode this version does not know.
func deviceCount(mode resourceapi.DeviceAllocationMode, count int64) int64 {
	switch mode {
	case resourceapi.DeviceAllocationModeExactCount:
		return count
	case resourceapi.DeviceAllocationModeAll:
		return resourceapi.AllocationResultsMaxSize
	}
	return 0
}

// PodClaim is one entry of a pod's spec.resourceClaims, with the name of the claim it
// resolves to when known.
type PodClaim struct {
	// Name is the entry's name in the pod.
	Name string
	// ClaimName is spec.resourceClaimName, or the claim made from the template as
	// status.resourceClaimStatuses names it ("" until then: Kubernetes makes it while
	// the pod is gated too).
	ClaimName string
	// TemplateName is spec.resourceClaimTemplateName ("" for a claim named directly).
	TemplateName string
}

// PodClaims returns the claims a pod uses (nil for none).
func PodClaims(pod *corev1.Pod) []PodClaim {
	if len(pod.Spec.ResourceClaims) == 0 {
		return nil
	}
	out := make([]PodClaim, 0, len(pod.Spec.ResourceClaims))
	for _, rc := range pod.Spec.ResourceClaims {
		c := PodClaim{Name: rc.Name}
		switch {
		case rc.ResourceClaimName != nil:
			c.ClaimName = *rc.ResourceClaimName
		case rc.ResourceClaimTemplateName != nil:
			c.TemplateName = *rc.ResourceClaimTemplateName
			for _, st := range pod.Status.ResourceClaimStatuses {
				if st.Name == rc.Name && st.ResourceClaimName != nil {
					c.ClaimName = *st.ResourceClaimName
				}
			}
		}
		out = append(out, c)
	}
	return out
}

// ClaimSpecs is where WithClaims reads claims, templates and device classes (the
// manager's informers).
type ClaimSpecs interface {
	// Claim returns a ResourceClaim's spec.
	Claim(namespace, name string) (*resourceapi.ResourceClaimSpec, bool)
	// ClaimIdentity returns the UID of the ResourceClaim Claim finds, and whether it is
	// being deleted.
	ClaimIdentity(namespace, name string) (uid types.UID, deleting bool)
	// Template returns a ResourceClaimTemplate's spec.spec.
	Template(namespace, name string) (*resourceapi.ResourceClaimSpec, bool)
	// ExtendedResourceName returns a DeviceClass's spec.extendedResourceName, "" when
	// it has none or does not exist.
	ExtendedResourceName(class string) string
}

// ClaimCharge is one ResourceClaim a pod uses and what it charges. Pods that share a
// claim carry the same Key, and a budget charges the claim once for all of them.
type ClaimCharge struct {
	// Key is "<namespace>/<claim name>".
	Key string `json:"key"`
	// UID is the claim's: the one whose spec Usage was computed from, which the manager
	// pins before it admits the pod.
	UID   types.UID           `json:"uid"`
	Usage corev1.ResourceList `json:"usage"`
}

// Namespace and Name are the claim's, from Key.
func (c ClaimCharge) Namespace() string { ns, _, _ := strings.Cut(c.Key, "/"); return ns }
func (c ClaimCharge) Name() string      { _, name, _ := strings.Cut(c.Key, "/"); return name }

// WithClaims returns pod charged for the claims it uses: Claims lists each, its usage is
// added to Usage (the pod's charge in a budget where none of them is charged yet), and
// ClaimsError says why a claim cannot be charged yet: it does not exist, or is still to
// be made from its template, or (for a gated pod) is being deleted. A gated pod with a
// ClaimsError waits; a template is never charged in place of its claim.
func WithClaims(pod Pod, claims []PodClaim, specs ClaimSpecs) Pod {
	if len(claims) == 0 {
		return pod
	}
	pod.Usage = maps.Clone(pod.Usage)
	pod.Claims, pod.ClaimsError = nil, ""
	for _, c := range claims {
		spec, uid, problem := claimOf(pod, c, specs)
		if problem != "" {
			if pod.ClaimsError == "" {
				pod.ClaimsError = problem
			}
			continue
		}
		key := pod.Namespace + "/" + c.ClaimName
		if slices.ContainsFunc(pod.Claims, func(o ClaimCharge) bool { return o.Key == key }) {
			continue // two entries of the pod name the same claim
		}
		usage := ClaimUsage(spec, specs.ExtendedResourceName)
		pod.Claims = append(pod.Claims, ClaimCharge{Key: key, UID: uid, Usage: usage})
		addTo(pod.Usage, usage)
	}
	pod.Uncountable, _ = amount.Uncountable(pod.Usage)
	return pod
}

// claimOf finds the claim an entry of the pod resolves to, or says why it cannot be
// charged yet.
func claimOf(pod Pod, c PodClaim, specs ClaimSpecs) (*resourceapi.ResourceClaimSpec, types.UID, string) {
	if c.ClaimName == "" {
		if _, ok := specs.Template(pod.Namespace, c.TemplateName); !ok {
			return nil, "", fmt.Sprintf("waiting for ResourceClaimTemplate %s/%s (resourceClaims %q) to exist", pod.Namespace, c.TemplateName, c.Name)
		}
		return nil, "", fmt.Sprintf("waiting for Kubernetes to make the ResourceClaim of resourceClaims %q from ResourceClaimTemplate %s/%s", c.Name, pod.Namespace, c.TemplateName)
	}
	spec, ok := specs.Claim(pod.Namespace, c.ClaimName)
	if !ok {
		return nil, "", fmt.Sprintf("waiting for ResourceClaim %s/%s (resourceClaims %q) to exist", pod.Namespace, c.ClaimName, c.Name)
	}
	uid, deleting := specs.ClaimIdentity(pod.Namespace, c.ClaimName)
	if deleting && pod.Gated {
		// kube-scheduler does not allocate a claim that is being deleted: admitted, the
		// pod could not start. It waits for a claim of that name to exist again.
		return nil, "", fmt.Sprintf("waiting for ResourceClaim %s/%s (resourceClaims %q), which is being deleted, to exist again", pod.Namespace, c.ClaimName, c.Name)
	}
	return spec, uid, ""
}

// sameClaims reports whether two pods' claims are the same claims (key and UID) with the
// same usage.
func sameClaims(a, b []ClaimCharge) bool {
	return slices.EqualFunc(a, b, func(x, y ClaimCharge) bool {
		return x.Key == y.Key && x.UID == y.UID && amount.EqualQuantities(x.Usage, y.Usage)
	})
}

// addTo adds src into dst, entry by entry: a pod's usage and its claims', before
// they are amounts.
func addTo(dst, src corev1.ResourceList) {
	for name, q := range src {
		cur := dst[name].DeepCopy()
		cur.Add(q)
		dst[name] = cur
	}
}
