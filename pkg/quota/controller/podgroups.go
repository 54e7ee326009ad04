package controller

import (
	"fmt"

	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
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
// core again whenever it is created, changes its minCount or goes. Where the API server
// serves CompositePodGroups too (scheduling.k8s.io/v1alpha3, the CompositePodGroup
// feature gate), the manager watches them the same way: a pod is resolved against the
// CompositePodGroups above its PodGroup, and given again when one of them changes.
// Where it does not, a PodGroup that names a parent holds its pods (the parent never
// exists for the manager).
//
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=podgroups;compositepodgroups,verbs=get;list;watch

// podGroupKind keys PodGroups in the dependency index, compositeKind
// CompositePodGroups; no pod may name either in quotagate.io/wait-for (depend.Parse
// knows no such kind).
const (
	podGroupKind  depend.Kind = "PodGroup"
	compositeKind depend.Kind = "CompositePodGroup"
)

// maxCompositeDepth is how many CompositePodGroups may stand above a PodGroup: a
// workload's hierarchy is at most 4 deep (kube-scheduler calls a deeper one invalid).
const maxCompositeDepth = 3

func podGroupKey(namespace, name string) dependencyKey {
	return dependencyKey{namespace, depend.Dependency{Kind: podGroupKind, Name: name}}
}

func compositeKey(namespace, name string) dependencyKey {
	return dependencyKey{namespace, depend.Dependency{Kind: compositeKind, Name: name}}
}

// groupRec is what the index keeps of a PodGroup or CompositePodGroup that exists:
// its gang's minCount or minGroupCount (0 for no gang) and its parent ("" for none).
type groupRec struct {
	min    int
	parent string
}

func parentName(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// podGroupRec is what the index keeps of a PodGroup.
func podGroupRec(g *schedulingv1beta1.PodGroup) groupRec {
	r := groupRec{parent: parentName(g.Spec.ParentCompositePodGroupName)}
	if gang := g.Spec.SchedulingPolicy.Gang; gang != nil && gang.MinCount > 0 {
		r.min = int(gang.MinCount)
	}
	return r
}

// compositeRec is what the index keeps of a CompositePodGroup.
func compositeRec(g *schedulingv1alpha3.CompositePodGroup) groupRec {
	r := groupRec{parent: parentName(g.Spec.ParentCompositePodGroupName)}
	if gang := g.Spec.SchedulingPolicy.Gang; gang != nil && gang.MinGroupCount > 0 {
		r.min = int(gang.MinGroupCount)
	}
	return r
}

// podGroupInfo is what the core needs of PodGroup name of namespace: whether it
// exists, its gang, and the CompositePodGroups above it. mu must be held.
func (x *dependencyIndex) podGroupInfo(namespace, name string) quota.PodGroupInfo {
	r, ok := x.podGroups[podGroupKey(namespace, name)]
	if !ok {
		return quota.PodGroupInfo{}
	}
	info := quota.PodGroupInfo{Exists: true, MinCount: r.min}
	seen := map[string]bool{}
	for parent := r.parent; parent != ""; {
		if seen[parent] {
			info.Problem = fmt.Sprintf("the CompositePodGroups above it form a cycle through %s", parent)
			return info
		}
		if len(info.Parents) == maxCompositeDepth {
			info.Problem = fmt.Sprintf("more than %d CompositePodGroups stand above it, deeper than Kubernetes allows", maxCompositeDepth)
			return info
		}
		seen[parent] = true
		c, ok := x.composites[compositeKey(namespace, parent)]
		info.Parents = append(info.Parents, quota.CompositePodGroupInfo{Name: parent, Exists: ok, MinGroupCount: c.min})
		if !ok {
			break
		}
		parent = c.parent
	}
	return info
}

// onPodGroup applies an event of a PodGroup, then gives the core again its pods.
func (c *Controller) onPodGroup(g *schedulingv1beta1.PodGroup, deleted bool) {
	k := podGroupKey(g.Namespace, g.Name)
	x := c.dependencies
	x.mu.Lock()
	if !x.setGroup(x.podGroups, k, podGroupRec(g), deleted || g.DeletionTimestamp != nil) {
		x.mu.Unlock()
		return
	}
	pods := x.podsOf(k, false)
	x.mu.Unlock()
	c.upsertPods(pods)
}

// onCompositePodGroup applies an event of a CompositePodGroup, then gives the core
// again the pods of every PodGroup below it.
func (c *Controller) onCompositePodGroup(g *schedulingv1alpha3.CompositePodGroup, deleted bool) {
	x := c.dependencies
	x.mu.Lock()
	if !x.setGroup(x.composites, compositeKey(g.Namespace, g.Name), compositeRec(g), deleted || g.DeletionTimestamp != nil) {
		x.mu.Unlock()
		return
	}
	var pods []string
	for k := range x.podGroups {
		if k.namespace != g.Namespace {
			continue
		}
		for _, p := range x.podGroupInfo(k.namespace, k.Name).Parents {
			if p.Name == g.Name {
				pods = append(pods, x.podsOf(k, false)...)
				break
			}
		}
	}
	x.mu.Unlock()
	c.upsertPods(pods)
}

// setGroup records in m that the object k is r, or is gone, and reports whether
// that changes what its pods are grouped by. mu must be held.
func (x *dependencyIndex) setGroup(m map[dependencyKey]groupRec, k dependencyKey, r groupRec, gone bool) bool {
	old, known := m[k]
	switch {
	case gone && !known:
		return false
	case gone:
		delete(m, k)
	case known && old == r:
		return false
	default:
		m[k] = r
	}
	return true
}

// servesPodGroups reports whether the API server serves scheduling.k8s.io/v1beta1
// PodGroups.
func servesPodGroups(mapper meta.RESTMapper) (bool, error) {
	return serves(mapper, schedulingv1beta1.SchemeGroupVersion.WithKind("PodGroup"))
}

// servesComposites reports whether the API server serves scheduling.k8s.io/v1alpha3
// CompositePodGroups (the CompositePodGroup feature gate, alpha in 1.37).
func servesComposites(mapper meta.RESTMapper) (bool, error) {
	return serves(mapper, schedulingv1alpha3.SchemeGroupVersion.WithKind("CompositePodGroup"))
}
