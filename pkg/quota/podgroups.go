package quota

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// PodGroups (docs/start-control.md, "PodGroups"): a pod may name a Kubernetes PodGroup
// (scheduling.k8s.io, the Workload API) in spec.schedulingGroup.podGroupName.
// kube-scheduler places the pods of a PodGroup whose policy is a gang only once
// minCount of them can be placed together; quotagate admits them the same way: such
// a pod is a member of a core group (group) named after its PodGroup, of size
// minCount, whatever its quotagate.io/group label says. The manager, which watches
// PodGroups, gives the core each such pod with what it knows of its PodGroup
// (ResolvePodGroup); until then, and while the PodGroup does not exist, the pod waits
// (CodePodGroupPending), never admitted without the gang it belongs to.
//
// A PodGroup may have a parent CompositePodGroup (scheduling.k8s.io/v1alpha3, the
// CompositePodGroup feature gate), which may have a parent of its own, up to
// Kubernetes' depth of 4. A CompositePodGroup whose policy is a gang wants
// minGroupCount of its children scheduled together. The highest gang
// CompositePodGroup above a pod's PodGroup is then its core group, named
// CompositePodGroupPrefix+name, of size minGroupCount: it is complete once that many
// of its children are, a child PodGroup once minCount of its pods wait (1 for a
// PodGroup that is no gang), a child CompositePodGroup once minGroupCount of its own
// children are (1 for one that is no gang). Each pod carries the path to its PodGroup
// (Pod.GroupParts), and the group counts along it (groupPart). The
// first admission of the gang admits the pods of its complete children only; after
// that, a child is admitted once it is complete itself, as a started group's members
// are.

// PodGroupPrefix starts the core group name of a PodGroup's pods: "PodGroup/<name>".
// A label value cannot hold a "/", so no quotagate.io/group shares it.
const PodGroupPrefix = "PodGroup/"

// CompositePodGroupPrefix starts the core group name of a CompositePodGroup's gang.
const CompositePodGroupPrefix = "CompositePodGroup/"

// GroupPart is one step of a CompositePodGroup member's path (Pod.GroupParts).
type GroupPart struct {
	// Name is PodGroupPrefix or CompositePodGroupPrefix, then the object's name.
	Name string
	// Need is how many pods (a PodGroup) or complete children (a CompositePodGroup)
	// make the part complete; at least 1.
	Need int
}

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
	// Parents are the CompositePodGroups above it, its parent first (nil for a root
	// PodGroup).
	Parents []CompositePodGroupInfo
	// Problem, when set, says why its pods may not be admitted although it exists: its
	// parents cannot be read or are laid out as Kubernetes refuses (a cycle, a
	// hierarchy deeper than 4).
	Problem string
}

// CompositePodGroupInfo is what the manager knows of a CompositePodGroup.
type CompositePodGroupInfo struct {
	Name   string
	Exists bool
	// MinGroupCount is its gang policy's minGroupCount; 0 when its policy is not a gang.
	MinGroupCount int
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
	p.Group, p.GroupSize, p.GroupError, p.GroupParts = "", 0, "", nil
	if !info.Exists {
		p.PodGroup = &PodGroupRef{Name: name, Problem: fmt.Sprintf("waiting for PodGroup %s, which does not exist yet", name)}
		return p
	}
	if info.Problem != "" {
		p.PodGroup = &PodGroupRef{Name: name, Problem: fmt.Sprintf("PodGroup %s: %s", name, info.Problem)}
		return p
	}
	for _, c := range info.Parents {
		if !c.Exists {
			p.PodGroup = &PodGroupRef{Name: name, Problem: fmt.Sprintf("waiting for CompositePodGroup %s (above PodGroup %s), which does not exist yet", c.Name, name)}
			return p
		}
	}
	p.PodGroup = &PodGroupRef{Name: name}
	top := -1 // the highest gang above it
	for i, c := range info.Parents {
		if c.MinGroupCount > 0 {
			top = i
		}
	}
	if top < 0 {
		if info.MinCount > 0 {
			p.Group, p.GroupSize = ShareString(PodGroupPrefix+name), info.MinCount
		}
		return p
	}
	root := info.Parents[top]
	p.Group, p.GroupSize = ShareString(CompositePodGroupPrefix+root.Name), root.MinGroupCount
	p.GroupParts = make([]GroupPart, 0, top+1)
	for i := top - 1; i >= 0; i-- {
		c := info.Parents[i]
		p.GroupParts = append(p.GroupParts, GroupPart{Name: ShareString(CompositePodGroupPrefix + c.Name), Need: max(c.MinGroupCount, 1)})
	}
	p.GroupParts = append(p.GroupParts, GroupPart{Name: ShareString(PodGroupPrefix + name), Need: max(info.MinCount, 1)})
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
