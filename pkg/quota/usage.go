package quota

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
)

// ResourceCountPods is ResourceQuota's object-count name for pods; it counts like "pods".
const ResourceCountPods corev1.ResourceName = "count/pods"

const (
	requestsPrefix  = corev1.DefaultResourceRequestsPrefix // "requests."
	limitsPrefix    = "limits."
	hugePagesPrefix = corev1.ResourceHugePagesPrefix // "hugepages-"
)

// computeResources are the native resources that have both a requests.* and a limits.*
// quota name, and whose bare name means requests.* in hard.
var computeResources = []corev1.ResourceName{
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
}

// PodUsage returns what a pod consumes, keyed by ResourceQuota's names:
// requests.{cpu,memory,ephemeral-storage}, limits.{cpu,memory,ephemeral-storage},
// requests.hugepages-*, requests.<extended> (extended resources have only requests in
// quota terms), and pods = count/pods = 1. Requests and limits come from
// k8s.io/component-helpers/resource, so init containers, sidecars, pod overhead and
// pod-level resources count as Kubernetes counts them. A resource the pod does not
// request is absent (it counts as zero).
//
// After an in-place resize, each container is charged the larger of its spec and what
// its status says the kubelet allocated and applied, as ResourceQuota's pod evaluator
// charges it (UseStatusResources, with InPlacePodVerticalScaling GA): a resize down
// frees nothing until the kubelet has applied it, and a resize the kubelet finds
// Infeasible is charged what runs. Pod-level resources count from the spec, as there.
func PodUsage(pod *corev1.Pod) corev1.ResourceList {
	opts := resourcehelper.PodResourcesOptions{UseStatusResources: true}
	requests := resourcehelper.PodRequests(pod, opts)
	limits := resourcehelper.PodLimits(pod, opts)

	usage := corev1.ResourceList{
		corev1.ResourcePods: *resource.NewQuantity(1, resource.DecimalSI),
		ResourceCountPods:   *resource.NewQuantity(1, resource.DecimalSI),
	}
	for name, q := range requests {
		switch {
		case slices.Contains(computeResources, name),
			strings.HasPrefix(string(name), hugePagesPrefix),
			isExtendedResourceName(name):
			usage[requestsPrefix+name] = q
		}
	}
	for _, name := range computeResources {
		if q, ok := limits[name]; ok {
			usage[limitsPrefix+name] = q
		}
	}
	return usage
}

// NormalizeHard rewrites a budget's hard list to the names PodUsage uses: "cpu",
// "memory" and "ephemeral-storage" become requests.*, a bare hugepages-* or extended
// name (nvidia.com/gpu) becomes requests.*. When a limit is given under two names
// ("cpu" and "requests.cpu"), the smaller wins, as both would apply in ResourceQuota.
// Names that do not limit pods (services, limits.nvidia.com/gpu, typos), negative
// quantities and quantities beyond what the core counts exactly (amount.MaxUnits) make
// it return an error that names them, along with the entries that were valid.
func NormalizeHard(hard corev1.ResourceList) (corev1.ResourceList, error) {
	out := make(corev1.ResourceList, len(hard))
	var unsupported, negative, huge []string
	for name, q := range hard {
		qn, ok := quotaName(name)
		if !ok {
			unsupported = append(unsupported, string(name))
			continue
		}
		if q.Sign() < 0 {
			negative = append(negative, string(name))
			continue
		}
		if !amount.Countable(q) {
			huge = append(huge, string(name))
			continue
		}
		if prev, seen := out[qn]; seen && prev.Cmp(q) <= 0 {
			continue
		}
		out[qn] = q.DeepCopy()
	}
	var problems []string
	if len(unsupported) > 0 {
		slices.Sort(unsupported)
		problems = append(problems, fmt.Sprintf("unsupported resource names in hard: %s (supported: cpu, memory, ephemeral-storage, their requests.* and limits.* forms, requests.hugepages-*, extended resources as requests.<name>, <class>.deviceclass.resource.k8s.io/devices, requests.deviceclass.resource.kubernetes.io/<class>, pods, count/pods)", strings.Join(unsupported, ", ")))
	}
	if len(negative) > 0 {
		slices.Sort(negative)
		problems = append(problems, fmt.Sprintf("negative quantities in hard: %s", strings.Join(negative, ", ")))
	}
	if len(huge) > 0 {
		slices.Sort(huge)
		problems = append(problems, fmt.Sprintf("quantities in hard beyond what quotagate counts exactly (at most %d units): %s", amount.MaxUnits, strings.Join(huge, ", ")))
	}
	if len(problems) > 0 {
		return out, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return out, nil
}

// quotaName maps a name written in hard to the name PodUsage uses, if pods consume it.
func quotaName(name corev1.ResourceName) (corev1.ResourceName, bool) {
	s := string(name)
	switch {
	case name == corev1.ResourcePods || name == ResourceCountPods, isDeviceQuotaName(name):
		return name, true
	case slices.Contains(computeResources, name):
		return requestsPrefix + name, true
	case strings.HasPrefix(s, limitsPrefix):
		return name, slices.Contains(computeResources, corev1.ResourceName(strings.TrimPrefix(s, limitsPrefix)))
	case strings.HasPrefix(s, requestsPrefix):
		rest := corev1.ResourceName(strings.TrimPrefix(s, requestsPrefix))
		ok := slices.Contains(computeResources, rest) || isHugePagesName(rest) || isExtendedResourceName(rest)
		return name, ok
	case isHugePagesName(name), isExtendedResourceName(name):
		return requestsPrefix + name, true
	}
	return "", false
}

// isHugePagesName reports whether name is hugepages-<size>, with a size that parses as a
// positive quantity, as the pods that request it must have it.
func isHugePagesName(name corev1.ResourceName) bool {
	size, ok := strings.CutPrefix(string(name), hugePagesPrefix)
	if !ok {
		return false
	}
	q, err := resource.ParseQuantity(size)
	return err == nil && q.Sign() > 0
}

// isExtendedResourceName follows Kubernetes' helper of the same name: a domain-prefixed
// name outside kubernetes.io whose requests.* form is a valid qualified name. Unlike
// that helper it also refuses ResourceQuota's names that only look like one, which pods
// do not consume as extended resources: object counts (count/services) and names in
// k8s.io (gold.storageclass.storage.k8s.io/requests.storage, DRA's devices).
func isExtendedResourceName(name corev1.ResourceName) bool {
	s := string(name)
	if !strings.Contains(s, "/") || strings.Contains(s, corev1.ResourceDefaultNamespacePrefix) || strings.HasPrefix(s, requestsPrefix) {
		return false
	}
	if domain, _, _ := strings.Cut(s, "/"); domain == "count" || domain == "k8s.io" || strings.HasSuffix(domain, ".k8s.io") {
		return false
	}
	return len(validation.IsQualifiedName(requestsPrefix+s)) == 0
}
