package quota

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// ResourceQuota's constraints (kube's podEvaluator.Constraints): when a quota tracks
// cpu or memory, as requests or limits, every container and init container (sidecars
// included) of a new pod must set that value, or the pod is refused with "must specify
// limits.cpu for: app; requests.cpu for: app". Kubernetes keeps the rule for these four
// names only (ephemeral-storage, hugepages and extended resources are not required),
// and skips it for a pod that sets pod-level resources. LimitRange defaults count: the
// API server applies them before any admission, so the pod the core sees has them.
//
// quotagate holds such a pod instead of refusing it (the webhook never reads budgets):
// a covering budget that tracks a value the pod leaves unset parks it with
// CodeMustSpecify, in that budget's PodsNeverFit condition, until the budget stops
// tracking the value or the pod is deleted. It is never admitted charged nothing for
// what the budget tracks.

// constrainedResources are ResourceQuota's names that every container must set when a
// quota tracks them, in the order its message lists them (sorted). The bare "cpu" and
// "memory" of hard mean requests.cpu and requests.memory here (NormalizeHard).
var constrainedResources = []corev1.ResourceName{
	limitsPrefix + corev1.ResourceCPU,
	limitsPrefix + corev1.ResourceMemory,
	requestsPrefix + corev1.ResourceCPU,
	requestsPrefix + corev1.ResourceMemory,
}

// UnsetResource is a value of constrainedResources that some containers of a pod leave
// unset.
type UnsetResource struct {
	Name corev1.ResourceName
	// Containers are the containers that leave it unset, sorted, joined by "," as
	// ResourceQuota's message joins them.
	Containers string
}

// UnsetResources returns, in constrainedResources' order, the values ResourceQuota
// would require of the pod that some of its containers leave unset: nil for a pod that
// sets them all, or that sets pod-level resources. A value set to zero is set.
func UnsetResources(pod *corev1.Pod) []UnsetResource {
	return shareUnset(unsetResources(pod))
}

// unsetResources is UnsetResources, shared with no other pod. It takes time in
// proportion to the pod's containers (and their log), however many there are.
func unsetResources(pod *corev1.Pod) []UnsetResource {
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		return nil
	}
	var out []UnsetResource
	for _, name := range constrainedResources {
		var missing []string
		for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
			for i := range list {
				if !setsResource(&list[i], name) {
					missing = append(missing, list[i].Name)
				}
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			out = append(out, UnsetResource{Name: name, Containers: strings.Join(slices.Compact(missing), ",")})
		}
	}
	return out
}

// setsResource reports whether a container sets name (requests.cpu, limits.memory, ...).
func setsResource(c *corev1.Container, name corev1.ResourceName) bool {
	list := c.Resources.Requests
	rest, isLimit := strings.CutPrefix(string(name), limitsPrefix)
	if isLimit {
		list = c.Resources.Limits
	} else {
		rest = strings.TrimPrefix(rest, requestsPrefix)
	}
	_, ok := list[corev1.ResourceName(rest)]
	return ok
}

// sharedUnsets holds the lists UnsetResources returns, one copy per distinct list:
// a namespace of BestEffort pods from one template has one. A list stored, or kept by
// its pod when the table is full, has its container names shared (ShareString); one
// found is the stored copy.
var sharedUnsets sharedTable[[]UnsetResource]

func shareUnset(l []UnsetResource) []UnsetResource {
	if len(l) == 0 {
		return nil
	}
	var buf [128]byte
	key := buf[:0]
	for _, u := range l {
		key = append(append(append(append(key, u.Name...), 0), u.Containers...), 0)
	}
	keep := func() []UnsetResource {
		for i := range l {
			l[i].Containers = ShareString(l[i].Containers)
		}
		return l
	}
	v, ok := sharedUnsets.get(key, keep)
	if !ok {
		return keep()
	}
	return v
}

// tracksUnset returns ResourceQuota's sentence for the values of unset that b tracks
// ("must specify limits.cpu for: app; requests.cpu for: app") and the first of them;
// ok is false when b tracks none.
func tracksUnset(b *budget, unset []UnsetResource) (sentence string, first corev1.ResourceName, ok bool) {
	var parts []string
	for _, u := range unset {
		if !limitsOnAny(b, u.Name) {
			continue
		}
		if first == "" {
			first = u.Name
		}
		parts = append(parts, string(u.Name)+" for: "+u.Containers)
	}
	if len(parts) == 0 {
		return "", "", false
	}
	return "must specify " + strings.Join(parts, "; "), first, true
}

// unsetPark returns why a pod that leaves unset what a covering budget tracks can never
// be admitted: the first such budget of cover, or nil. member names the pod in a
// group's reason (zero for a pod alone).
func unsetPark(unset []UnsetResource, cover []*budget, member PodRef) *waitInfo {
	if len(unset) == 0 {
		return nil
	}
	for _, b := range cover {
		if sentence, first, ok := tracksUnset(b, unset); ok {
			return &waitInfo{code: CodeMustSpecify, budget: b, resource: first, unset: sentence, ahead: member}
		}
	}
	return nil
}

// unsetMessage is the wait reason of a pod parked by unsetPark.
func unsetMessage(w *waitInfo) string {
	who := ""
	if w.ahead.Name != "" {
		who = "pod " + w.ahead.Name + " "
	}
	it := "it"
	if strings.Count(w.unset, " for: ") > 1 {
		it = "them"
	}
	return who + w.unset + " (" + w.budget.key.Describe() + " tracks " + it + "; as in ResourceQuota, every container must set what a budget tracks): " +
		"set " + it + ", or give the namespace a LimitRange with defaults, and recreate the pod"
}

// limitsOnAny reports whether b's hard limits r, on its own or on one of its flavors
// (r@flavor, spec.flavors): ResourceQuota's must-specify rule holds for either.
func limitsOnAny(b *budget, r corev1.ResourceName) bool {
	if b.ledger.Tracks(r) {
		return true
	}
	for _, names := range b.flavorNames { // empty without flavors
		if names[r] {
			return true
		}
	}
	return false
}

// tracksAnyUnset reports whether b tracks a value that one of the counted pods leaves
// unset (counts by name, as a group keeps them).
func tracksAnyUnset(b *budget, counts map[corev1.ResourceName]int) bool {
	for name, n := range counts {
		if n > 0 && limitsOnAny(b, name) {
			return true
		}
	}
	return false
}
