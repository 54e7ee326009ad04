// Package v1alpha1 holds the quotagate.io/v1alpha1 API: Budget, which limits the pods
// of one namespace; ClusterBudget, which limits pods across the namespaces its selector
// matches and is the parent that other budgets may name; and Flavor, a kind of node that
// budgets hold quota for.
//
// +kubebuilder:object:generate=true
// +groupName=quotagate.io
package v1alpha1
