package depend

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podTemplateHashLabel is the label a Deployment's ReplicaSet gives its pods; the
// ReplicaSet is named after the Deployment and the hash.
const podTemplateHashLabel = "pod-template-hash"

// OwnerOf returns the workload a pod belongs to, of the kinds a pod may wait for: the
// Job that controls it, or the Deployment whose ReplicaSet does (read from the
// ReplicaSet's name, the Deployment's name and the pod-template-hash). Only these can
// close a cycle: a pod waits for a workload whose pods wait for the first.
func OwnerOf(pod *corev1.Pod) (Dependency, bool) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return Dependency{}, false
	}
	switch ref.Kind {
	case "Job":
		if ref.APIVersion == "batch/v1" {
			return Dependency{Kind: Job, Name: ref.Name}, true
		}
	case "ReplicaSet":
		h := pod.Labels[podTemplateHashLabel]
		if base, ok := strings.CutSuffix(ref.Name, "-"+h); ok && h != "" && base != "" && ref.APIVersion == "apps/v1" {
			return Dependency{Kind: Deployment, Name: base}, true
		}
	}
	return Dependency{}, false
}

// Graph holds, per namespace, which workloads wait for which objects: an edge from a
// workload W to an object D for each pod of W that waits for D, counted, so that it
// goes with the last such pod. The zero value is not usable: use NewGraph.
type Graph struct {
	edges map[string]map[Dependency]map[Dependency]int
}

// NewGraph returns an empty Graph.
func NewGraph() *Graph { return &Graph{edges: map[string]map[Dependency]map[Dependency]int{}} }

// Add records that a pod of workload from, in namespace ns, waits for to.
func (g *Graph) Add(ns string, from Dependency, to []Dependency) {
	if len(to) == 0 {
		return
	}
	byFrom := g.edges[ns]
	if byFrom == nil {
		byFrom = map[Dependency]map[Dependency]int{}
		g.edges[ns] = byFrom
	}
	out := byFrom[from]
	if out == nil {
		out = map[Dependency]int{}
		byFrom[from] = out
	}
	for _, d := range to {
		out[d]++
	}
}

// Remove undoes an Add of the same arguments.
func (g *Graph) Remove(ns string, from Dependency, to []Dependency) {
	byFrom := g.edges[ns]
	out := byFrom[from]
	for _, d := range to {
		if out[d]--; out[d] <= 0 {
			delete(out, d)
		}
	}
	if len(out) == 0 {
		delete(byFrom, from)
	}
	if len(byFrom) == 0 {
		delete(g.edges, ns)
	}
}

// Cycle reports whether the objects from waits for lead back to it, and the workloads
// on the way in order: the first is one of from's own dependencies, the last waits for
// from (none when from waits for itself). Of several cycles it gives the first by
// name, so that the same graph always gives the same answer.
func (g *Graph) Cycle(ns string, from Dependency) ([]Dependency, bool) {
	byFrom := g.edges[ns]
	seen := map[Dependency]bool{}
	var path []Dependency
	var visit func(d Dependency) bool
	visit = func(d Dependency) bool {
		if d == from {
			return true
		}
		if seen[d] {
			return false
		}
		seen[d] = true
		path = append(path, d)
		for _, next := range sorted(byFrom[d]) {
			if visit(next) {
				return true
			}
		}
		path = path[:len(path)-1]
		return false
	}
	for _, first := range sorted(byFrom[from]) {
		if visit(first) {
			return path, true
		}
	}
	return nil, false
}

func sorted(m map[Dependency]int) []Dependency {
	out := slices.Collect(maps.Keys(m))
	slices.SortFunc(out, func(a, b Dependency) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// CycleMessage says why a pod of workload from never starts: the cycle Cycle found.
func CycleMessage(from Dependency, cycle []Dependency) string {
	if len(cycle) == 0 {
		return fmt.Sprintf("%s waits for itself: a dependency cycle, it can never start", from)
	}
	var b strings.Builder
	b.WriteString(from.String())
	for _, d := range cycle {
		fmt.Fprintf(&b, " waits for %s, which", d)
	}
	fmt.Fprintf(&b, " waits for %s: a dependency cycle, none of them can start", from)
	return b.String()
}
