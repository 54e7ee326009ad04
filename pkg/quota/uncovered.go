package quota

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/quotagate/quotagate/pkg/quota/internal/topology"
)

// uncoveredNamed bounds how many budgets the reason of an uncovered pod names.
const uncoveredNamed = 3

// uncoveredHint says, for a pod no budget covers, which budgets nearly do and why each
// does not select it: the Budgets of its namespace and the ClusterBudgets that select
// its namespace, with the first requirement of each podSelector the pod's labels miss
// ("Budget team-a/team selects app=train, the pod has app=trian"); at most
// uncoveredNamed of them, then how many more. A tenant reads only the budgets of its
// own namespace and ClusterBudgets here, never another namespace's Budgets. "" when
// there is none.
func uncoveredHint(t *topology.Topology[*budget], p *Pod) string {
	near := t.BudgetsOf(p.Namespace)
	nsLabels, _ := t.NamespaceLabels(p.Namespace)
	for _, b := range t.Selecting() {
		if b.spec.NamespaceSelector.Matches(nsLabels) {
			near = append(near, b)
		}
	}
	var parts []string
	for _, b := range near {
		if len(parts) == uncoveredNamed {
			parts = append(parts, fmt.Sprintf("and %d more", len(near)-uncoveredNamed))
			break
		}
		parts = append(parts, b.key.Describe()+" "+missedRequirement(b.spec.PodSelector, p.Labels))
	}
	return strings.Join(parts, "; ")
}

// missedRequirement says which requirement of sel the labels miss, and what the pod
// has instead: "selects app=train, the pod has app=trian".
func missedRequirement(sel labels.Selector, podLabels map[string]string) string {
	if sel == nil {
		return "selects every pod"
	}
	reqs, _ := sel.Requirements()
	for _, r := range reqs {
		if r.Matches(labels.Set(podLabels)) {
			continue
		}
		v, has := podLabels[r.Key()]
		switch {
		case r.Operator() == selection.DoesNotExist:
			return fmt.Sprintf("selects %s, the pod has %s=%s", r.String(), r.Key(), v)
		case !has:
			return fmt.Sprintf("selects %s, the pod has no label %s", r.String(), r.Key())
		default:
			return fmt.Sprintf("selects %s, the pod has %s=%s", r.String(), r.Key(), v)
		}
	}
	return "selects " + sel.String()
}
