package quota

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// PodGroups (docs/start-control.md, "PodGroups"): a pod may name a Kubernetes PodGroup
// (scheduling.k8s.io, the Workload API) in spec.schedulingGroup.podGroupName.
// kube-scheduler places the pods of a PodGroup whose policy is a gang only once
// minCount of them can be placed together; quotagate admits them the same way: such
// a pod is a member of a core group (groups.go) named after its PodGroup, of size
// minCount, whatever its quotagate.io/group label says. The manager, which watches
// PodGroups, gives the core each such pod with what it knows of its PodGroup
// (ResolvePodGroup); until then, and while the PodGroup does not exist, the pod waits
// (CodePodGroupPending), never admitted without the gang it belongs to.

// PodGroupPrefix starts the core group name of a PodGroup's pods: "PodGroup/<name>".
// A label value cannot hold a "/", so no quotagate.io/group shares it.
const PodGroupPrefix = "PodGroup/"

// PodGroupRef is the PodGroup a pod names, and whether that holds it.
type PodGroupRef struct {
	Name string
	// Problem says why the pod may not be admitted because of its PodGroup ("" when it
	// may): it was not resolved yet, or the PodGroup does not exist.
	Problem string
}

// podGroupOf reads the PodGroup a pod names, held until it is resolved.
func podGroupOf(p *corev1.Pod) *PodGroupRef {
	g := p.Spec.SchedulingGroup
	if g == nil || g.PodGroupName == nil || *g.PodGroupName == "" {
		return nil
	}
	name := *g.PodGroupName
	return &PodGroupRef{Name: ShareString(name), Problem: fmt.Sprintf("waiting for PodGroup %s to be read", name)}
}

// PodGroupInfo is what the manager knows of a PodGroup.
type PodGroupInfo struct {
	// Exists: the PodGroup exists (and is not being deleted).
	Exists bool
	// MinCount is its gang policy's minCount; 0 when its policy is not a gang (its
	// pods are then admitted one by one).
	MinCount int
}

// ResolvePodGroup returns p with its group from its PodGroup: a gang's pods form the
// core group PodGroupPrefix+name of size minCount; a PodGroup of another policy groups
// nothing; a PodGroup that does not exist holds the pod. A pod that names none is
// returned as it is.
func ResolvePodGroup(p Pod, info PodGroupInfo) Pod {
	if p.PodGroup == nil {
		return p
	}
	name := p.PodGroup.Name
	p.Group, p.GroupSize, p.GroupError = "", 0, ""
	if !info.Exists {
		p.PodGroup = &PodGroupRef{Name: name, Problem: fmt.Sprintf("waiting for PodGroup %s, which does not exist yet", name)}
		return p
	}
	p.PodGroup = &PodGroupRef{Name: name}
	if info.MinCount > 0 {
		p.Group, p.GroupSize = ShareString(PodGroupPrefix+name), info.MinCount
	}
	return p
}

// podGroupPark is why a gated pod's PodGroup holds it, or nil.
func podGroupPark(p *podState) *waitInfo {
	if g := p.pod.PodGroup; g != nil && g.Problem != "" {
		return &waitInfo{code: CodePodGroupPending, detail: g.Problem}
	}
	return nil
}

// samePodGroup reports whether a and b hold a pod alike.
func samePodGroup(a, b *PodGroupRef) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
