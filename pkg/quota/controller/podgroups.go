package controller

import (
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/quota/depend"
)

// PodGroups (docs/start-control.md, "PodGroups"): on a cluster that serves the
// Workload API (scheduling.k8s.io/v1beta1, the GenericWorkload feature gate), the
// manager watches PodGroups (not in CacheOptions: a cache's ByObject must be served)
// and keeps their gang policy in the dependency index:
// a pod that names one is resolved against it (quota.ResolvePodGroup) and given to the
// core again whenever it is created, changes its minCount or goes.
//
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=podgroups,verbs=get;list;watch

// podGroupKind keys PodGroups in the dependency index; no pod may name it in
// quotagate.io/wait-for (depend.Parse knows no such kind).
const podGroupKind depend.Kind = "PodGroup"

func podGroupKey(namespace, name string) dependencyKey {
	return dependencyKey{namespace, depend.Dependency{Kind: podGroupKind, Name: name}}
}

// podGroupInfo is what the core needs of a PodGroup.
func podGroupInfo(g *schedulingv1beta1.PodGroup) quota.PodGroupInfo {
	info := quota.PodGroupInfo{Exists: g.DeletionTimestamp == nil}
	if gang := g.Spec.SchedulingPolicy.Gang; gang != nil && gang.MinCount > 0 {
		info.MinCount = int(gang.MinCount)
	}
	return info
}

// onPodGroup applies an event of a PodGroup, then gives the core again its pods.
func (c *Controller) onPodGroup(g *schedulingv1beta1.PodGroup, deleted bool) {
	k := podGroupKey(g.Namespace, g.Name)
	info := podGroupInfo(g)
	x := c.dependencies
	x.mu.Lock()
	old, known := x.podGroups[k]
	switch {
	case (deleted || !info.Exists) && !known:
		x.mu.Unlock()
		return
	case deleted || !info.Exists:
		delete(x.podGroups, k)
	case known && old == info:
		x.mu.Unlock()
		return // nothing its pods are grouped by changed
	default:
		x.podGroups[k] = info
	}
	pods := x.podsOf(k, false)
	x.mu.Unlock()
	c.upsertPods(pods)
}

// servesPodGroups reports whether the API server serves scheduling.k8s.io/v1beta1
// PodGroups.
func servesPodGroups(mapper meta.RESTMapper) (bool, error) {
	return serves(mapper, schedulingv1beta1.SchemeGroupVersion.WithKind("PodGroup"))
}
