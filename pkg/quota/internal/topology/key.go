package topology

import "cmp"

// Key identifies a Budget (Namespace set) or a ClusterBudget (Namespace ""). The core
// names it quota.BudgetKey.
type Key struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// IsCluster reports whether the key names a ClusterBudget.
func (k Key) IsCluster() bool { return k.Namespace == "" }

// Kind returns "Budget" or "ClusterBudget".
func (k Key) Kind() string {
	if k.IsCluster() {
		return "ClusterBudget"
	}
	return "Budget"
}

// String returns namespace/name for a Budget and name for a ClusterBudget.
func (k Key) String() string {
	if k.IsCluster() {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}

// Describe returns the kind and name, as messages show it: "Budget team-a/team-a".
func (k Key) Describe() string { return k.Kind() + " " + k.String() }

// Compare orders budget keys as users read them: Budgets by namespace and name, then
// ClusterBudgets by name. Every list of budgets the core or the plugin returns is in
// this order.
func (k Key) Compare(o Key) int {
	if k.IsCluster() != o.IsCluster() {
		if k.IsCluster() {
			return 1
		}
		return -1
	}
	return cmp.Or(cmp.Compare(k.Namespace, o.Namespace), cmp.Compare(k.Name, o.Name))
}
