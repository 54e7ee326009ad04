package app

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/visibility"
)

// snapshotView indexes a snapshot by budget and by pod.
type snapshotView struct {
	raw      quota.Snapshot
	byBudget map[quota.BudgetKey]quota.BudgetQueue
	byPod    map[types.UID][]podPlace
	held     map[types.UID]quota.QueuedPod
	// starts are the manager's estimated starts of the pods, by UID; empty when its
	// estimator is off or the manager predates them.
	starts map[types.UID]*visv1.EstimatedStart
}

// podPlace is a pod's place in one budget's queue.
type podPlace struct {
	Budget quota.BudgetKey `json:"budget"`
	// Position is 1-based; Of is how many pods wait in that budget.
	Position int         `json:"position"`
	Of       int         `json:"of"`
	Queue    quota.Queue `json:"queue"`
	entry    quota.QueuedPod
}

func newSnapshotView(qs visibility.QueuesSnapshot) *snapshotView {
	s := qs.Snapshot
	v := &snapshotView{
		raw:      s,
		starts:   qs.EstimatedStarts,
		byBudget: map[quota.BudgetKey]quota.BudgetQueue{},
		byPod:    map[types.UID][]podPlace{},
		held:     map[types.UID]quota.QueuedPod{},
	}
	for _, b := range s.Budgets {
		v.byBudget[b.Budget] = b
		for _, p := range b.Pods {
			v.byPod[p.Pod.UID] = append(v.byPod[p.Pod.UID], podPlace{Budget: b.Budget, Position: p.Position, Of: len(b.Pods), Queue: p.Queue, entry: p})
		}
	}
	for _, places := range v.byPod {
		slices.SortFunc(places, func(a, b podPlace) int { return a.Budget.Compare(b.Budget) })
	}
	for _, p := range s.Held {
		v.held[p.Pod.UID] = p
	}
	return v
}

// parseBudgetRef reads a budget as the commands take it: "clusterbudget/NAME" (or
// cbdg/NAME), "budget/NAME" (or bdg/NAME) in the current namespace, "NS/NAME", or
// "NAME" in the current namespace.
func parseBudgetRef(arg, namespace string) (quota.BudgetKey, error) {
	if arg == "" {
		return quota.BudgetKey{}, fmt.Errorf("a budget name is required")
	}
	prefix, name, found := strings.Cut(arg, "/")
	if !found {
		return quota.BudgetKey{Namespace: namespace, Name: arg}, nil
	}
	if name == "" || strings.Contains(name, "/") {
		return quota.BudgetKey{}, fmt.Errorf("budget %q: want NAME, NAMESPACE/NAME, budget/NAME or clusterbudget/NAME", arg)
	}
	switch {
	case isClusterBudgetPrefix(prefix):
		return quota.BudgetKey{Name: name}, nil
	case isBudgetPrefix(prefix):
		return quota.BudgetKey{Namespace: namespace, Name: name}, nil
	}
	return quota.BudgetKey{Namespace: prefix, Name: name}, nil
}

// isClusterBudgetPrefix reports whether s names the ClusterBudget kind in a BUDGET
// argument (clusterbudget/NAME).
func isClusterBudgetPrefix(s string) bool {
	switch strings.ToLower(s) {
	case "clusterbudget", "clusterbudgets", "cbdg", "clusterbudget.quotagate.io", "clusterbudgets.quotagate.io":
		return true
	}
	return false
}

// isBudgetPrefix reports whether s names the Budget kind in a BUDGET argument
// (budget/NAME).
func isBudgetPrefix(s string) bool {
	switch strings.ToLower(s) {
	case "budget", "budgets", "bdg", "budget.quotagate.io", "budgets.quotagate.io":
		return true
	}
	return false
}
