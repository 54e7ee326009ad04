package quota

import (
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// DRA-backed extended resources (KEP-5004, GA in Kubernetes 1.37): a container may ask
// devices as an extended resource that a DeviceClass backs, example.com/gpu where a
// class has spec.extendedResourceName example.com/gpu, or
// deviceclass.resource.kubernetes.io/<class>. kube-scheduler makes a ResourceClaim for
// those devices when it binds the pod, and ResourceQuota charges that claim then;
// quotagate charges the same devices when it admits the pod (WithExtendedDevices), as
// it charges a claim the pod names (ClaimCharge). The pod's containers cannot ask more
// once it runs (their requests of extended resources cannot be resized), and only an
// administrator changes DeviceClasses: the manager gives the pods that ask extended
// resources their views again when one does.

// DeviceClasses says which DeviceClass backs an extended resource (KEP-5004).
type DeviceClasses interface {
	// ExtendedResourceName returns a DeviceClass's spec.extendedResourceName, "" when
	// it has none or does not exist.
	ExtendedResourceName(class string) string
	// BackingClass returns the DeviceClass that backs an extended resource name, ""
	// when none does (BackingClasses says which).
	BackingClass(name corev1.ResourceName) string
}

// DeviceClassInfo is what BackingClasses needs of a DeviceClass.
type DeviceClassInfo struct {
	Name string
	// ExtendedResourceName is spec.extendedResourceName ("" for none).
	ExtendedResourceName string
	Created              time.Time
}

// BackingClasses maps each extended resource name that a DeviceClass backs to that
// class, as kube-scheduler and ResourceQuota find it
// (k8s.io/dynamic-resource-allocation/deviceclass/extendedresourcecache): every class
// backs its implicit name deviceclass.resource.kubernetes.io/<class>, and the name in its
// spec.extendedResourceName unless another class names it too; of several, the one
// created last backs it, the first by name when they were created at the same time.
func BackingClasses(classes []DeviceClassInfo) map[corev1.ResourceName]string {
	out := make(map[corev1.ResourceName]string, 2*len(classes))
	winner := map[corev1.ResourceName]DeviceClassInfo{}
	for _, c := range classes {
		out[corev1.ResourceName(resourceapi.ResourceDeviceClassPrefix+c.Name)] = c.Name
		if c.ExtendedResourceName == "" {
			continue
		}
		name := corev1.ResourceName(c.ExtendedResourceName)
		if w, ok := winner[name]; ok && (w.Created.After(c.Created) || w.Created.Equal(c.Created) && w.Name < c.Name) {
			continue
		}
		winner[name] = c
	}
	for name, c := range winner {
		out[name] = c.Name
	}
	return out
}

// ExtendedRequests returns what a pod requests, as kube-scheduler sums it
// (resourcehelper.PodRequests), of the names a DeviceClass may back: extended resources
// and deviceclass.resource.kubernetes.io/<class>. Nil when it requests none.
func ExtendedRequests(pod *corev1.Pod) corev1.ResourceList {
	// Most pods ask none: look before summing them (every pod event comes through here).
	if !asksExtended(pod.Spec.InitContainers) && !asksExtended(pod.Spec.Containers) {
		return nil
	}
	var out corev1.ResourceList
	for name, q := range resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}) {
		if q.IsZero() || !mayBeBacked(name) {
			continue
		}
		if out == nil {
			out = corev1.ResourceList{}
		}
		out[name] = q
	}
	return out
}

// asksExtended reports whether a container requests a name a DeviceClass may back.
func asksExtended(containers []corev1.Container) bool {
	for i := range containers {
		for name := range containers[i].Resources.Requests {
			if mayBeBacked(name) {
				return true
			}
		}
	}
	return false
}

// mayBeBacked reports whether a DeviceClass may back the resource name: an extended
// resource, or deviceclass.resource.kubernetes.io/<class>.
func mayBeBacked(name corev1.ResourceName) bool {
	return isExtendedResourceName(name) || strings.HasPrefix(string(name), resourceapi.ResourceDeviceClassPrefix)
}

// WithExtendedDevices returns pod charged for the devices that back its extended
// resources (requests, from ExtendedRequests), as ResourceQuota charges pod and claim
// once kube-scheduler has made the claim for them (pods.go and resource_claims.go of
// k8s.io/kubernetes/pkg/quota/v1/evaluator/core):
//
//   - the pod charges requests.<name> for each name it requests, the implicit
//     deviceclass.resource.kubernetes.io/<class> included, whether a class backs it or not;
//   - per DeviceClass that backs some of them, n devices (what the pod requests of the
//     names the class backs) are charged as <class>.deviceclass.resource.k8s.io/devices,
//     and requests.deviceclass.resource.kubernetes.io/<class> and requests.<the class's
//     extendedResourceName> are raised to n where the pod charged less.
//
// So example.com/gpu: 8 backed by class gpu charges requests.example.com/gpu,
// gpu.deviceclass.resource.k8s.io/devices and requests.deviceclass.resource.kubernetes.io/gpu
// 8 each. It must be given the pod before WithClaims: the claims' charge is their own.
func WithExtendedDevices(pod Pod, requests corev1.ResourceList, classes DeviceClasses) Pod {
	if len(requests) == 0 {
		return pod
	}
	pod.Usage = maps.Clone(pod.Usage)
	perClass := map[string]resource.Quantity{}
	for _, name := range slices.Sorted(maps.Keys(requests)) {
		q := requests[name]
		if strings.HasPrefix(string(name), resourceapi.ResourceDeviceClassPrefix) {
			// The pod evaluator charges the implicit name like any extended resource;
			// PodUsage leaves it out, as names in kubernetes.io are not extended ones.
			pod.Usage[requestsPrefix+name] = q
		}
		if class := classes.BackingClass(name); class != "" {
			n := perClass[class]
			n.Add(q)
			perClass[class] = n
		}
	}
	own := maps.Clone(pod.Usage)
	for _, class := range slices.Sorted(maps.Keys(perClass)) {
		n := perClass[class]
		addTo(pod.Usage, corev1.ResourceList{DeviceClassResource(class): n})
		names := []corev1.ResourceName{corev1.ResourceName(implicitExtendedPrefix + class)}
		if ext := classes.ExtendedResourceName(class); ext != "" {
			names = append(names, corev1.ResourceName(requestsPrefix+ext))
		}
		for _, name := range names {
			more := n.DeepCopy()
			more.Sub(own[name])
			if more.Sign() > 0 {
				addTo(pod.Usage, corev1.ResourceList{name: more})
			}
		}
	}
	return pod
}
