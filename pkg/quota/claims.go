package quota

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
// of them ends. A pod made from a ResourceClaimTemplate is charged what the template
// asks while its claim does not exist yet; a gated pod whose claim or template is
// missing waits (ClaimsError).

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

// ClaimUsage is what one ResourceClaim (or the claim a template will make) charges.
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
	// ClaimName is spec.resourceClaimName, or the claim generated from the template as
	// status.resourceClaimStatuses names it ("" until then).
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
	// Template returns a ResourceClaimTemplate's spec.spec.
	Template(namespace, name string) (*resourceapi.ResourceClaimSpec, bool)
	// ExtendedResourceName returns a DeviceClass's spec.extendedResourceName, "" when
	// it has none or does not exist.
	ExtendedResourceName(class string) string
}

// ClaimCharge is one claim a pod uses and what it charges. Pods that share a claim
// carry the same Key, and a budget charges the claim once for all of them.
type ClaimCharge struct {
	// Key is "<namespace>/<claim name>", or "<namespace>/<pod uid>/<entry name>" for a
	// claim still to be made from a template (no other pod can use it yet).
	Key   string
	Usage corev1.ResourceList
}

// WithClaims returns pod charged for the claims it uses: Claims lists each, its usage
// is added to Usage (the pod's charge in a budget where none of them is charged yet),
// and ClaimsError says which claim or template does not exist yet (a gated pod waits
// for it). A claim that exists is read over its template; one the pod names that does
// not exist yet is charged from its template when it has one.
func WithClaims(pod Pod, claims []PodClaim, specs ClaimSpecs) Pod {
	if len(claims) == 0 {
		return pod
	}
	pod.Usage = maps.Clone(pod.Usage)
	pod.Claims, pod.ClaimsError = nil, ""
	for _, c := range claims {
		key := pod.Namespace + "/" + c.ClaimName
		spec, ok := (*resourceapi.ResourceClaimSpec)(nil), false
		if c.ClaimName != "" {
			spec, ok = specs.Claim(pod.Namespace, c.ClaimName)
		} else {
			key = pod.Namespace + "/" + string(pod.UID) + "/" + c.Name
		}
		if !ok && c.TemplateName != "" {
			spec, ok = specs.Template(pod.Namespace, c.TemplateName)
		}
		if !ok {
			if pod.ClaimsError == "" {
				pod.ClaimsError = missingClaim(pod.Namespace, c)
			}
			continue
		}
		if slices.ContainsFunc(pod.Claims, func(o ClaimCharge) bool { return o.Key == key }) {
			continue // two entries of the pod name the same claim
		}
		usage := ClaimUsage(spec, specs.ExtendedResourceName)
		pod.Claims = append(pod.Claims, ClaimCharge{Key: key, Usage: usage})
		addTo(pod.Usage, usage)
	}
	pod.Uncountable, _ = amount.Uncountable(pod.Usage)
	return pod
}

func missingClaim(namespace string, c PodClaim) string {
	if c.TemplateName != "" {
		return fmt.Sprintf("waiting for ResourceClaimTemplate %s/%s (resourceClaims %q) to exist", namespace, c.TemplateName, c.Name)
	}
	return fmt.Sprintf("waiting for ResourceClaim %s/%s (resourceClaims %q) to exist", namespace, c.ClaimName, c.Name)
}

// sameClaims reports whether two pods' claims have the same keys and usage.
func sameClaims(a, b []ClaimCharge) bool {
	return slices.EqualFunc(a, b, func(x, y ClaimCharge) bool { return x.Key == y.Key && equalLists(x.Usage, y.Usage) })
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
