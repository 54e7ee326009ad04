package quota

import (
	"fmt"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota/depend"
)

// Dependencies (docs/start-control.md): a gated pod may name objects of its own
// namespace that it waits for (quotagate.io/wait-for). NewPod reads the names and holds
// the pod until they are known to be ready; the manager, which watches those objects,
// gives the core the pod's view again with its verdict (ResolveDependencies) whenever
// one of them, or a cycle between workloads, changes. Until then the pod is parked,
// uncharged, with why.

// PodDependencies is what a pod waits for, and whether it still does.
type PodDependencies struct {
	// Names are the objects, parsed (depend.Parse); none when the annotation does not
	// parse.
	Names []depend.Dependency
	// Wait is why they hold the pod, "" once all are ready: CodeDependencyPending,
	// CodeDependencyFailed, CodeDependencyCycle or CodeDependencyInvalid. Message says
	// which object and how.
	Wait    ReasonCode
	Message string
}

// Holds reports whether the dependencies keep a gated pod from starting.
func (d *PodDependencies) Holds() bool { return d != nil && d.Wait != "" }

// sameDependencyWait reports whether a and b hold a pod for the same reason.
func sameDependencyWait(a, b *PodDependencies) bool {
	if !a.Holds() || !b.Holds() {
		return a.Holds() == b.Holds()
	}
	return a.Wait == b.Wait && a.Message == b.Message
}

// parseDependencies reads a pod's quotagate.io/wait-for annotation: its objects, held
// until they are checked, or why the value does not parse (held until it is fixed).
func parseDependencies(value string) *PodDependencies {
	names, err := depend.Parse(value)
	if err != nil {
		return &PodDependencies{Wait: CodeDependencyInvalid, Message: fmt.Sprintf("%s: %v", v1alpha1.WaitForAnnotation, err)}
	}
	return &PodDependencies{Names: names, Wait: CodeDependencyPending, Message: "waiting for its dependencies to be checked"}
}

// ResolveDependencies returns p with the verdict on its dependencies: status gives each
// object's state, and cycle, when not "", says that p's workload waits for itself
// through them (depend.Graph.Cycle). A Failed object is reported before a Pending one:
// it needs someone to act. A pod that names none, or whose annotation does not parse,
// is returned as it is.
func ResolveDependencies(p Pod, status func(depend.Dependency) depend.Status, cycle string) Pod {
	d := p.Dependencies
	if d == nil || d.Wait == CodeDependencyInvalid {
		return p
	}
	out := &PodDependencies{Names: d.Names}
	if cycle != "" {
		out.Wait, out.Message = CodeDependencyCycle, cycle
		p.Dependencies = out
		return p
	}
	p.Dependencies = out
	for _, n := range d.Names {
		switch s := status(n); {
		case s.State == depend.Failed:
			out.Wait, out.Message = CodeDependencyFailed, s.Message
			return p
		case s.State == depend.Pending && out.Wait == "":
			out.Wait, out.Message = CodeDependencyPending, s.Message
		}
	}
	return p
}

// memberDependencyWait returns why a gated member of g may not start because of what
// it waits for (the first by UID), or nil: the group starts all together or not at all.
func memberDependencyWait(g *group) *waitInfo {
	var out *waitInfo
	for _, r := range g.waiting.Items() {
		d := r.pod.pod.Dependencies
		if !d.Holds() {
			continue
		}
		if out == nil || r.pod.pod.UID < out.ahead.UID {
			out = &waitInfo{code: d.Wait, detail: d.Message, ahead: r.pod.pod.PodRef}
		}
	}
	return out
}

// dependencyPark is why a gated pod's dependencies hold it, or nil.
func dependencyPark(p *podState) *waitInfo {
	if d := p.pod.Dependencies; d.Holds() {
		return &waitInfo{code: d.Wait, detail: d.Message}
	}
	return nil
}
