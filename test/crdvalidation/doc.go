// Package crdvalidation holds only tests: the Budget, ClusterBudget and Flavor CRDs'
// validation (config/crd/bases) on a real kube-apiserver, and that the manager accounts
// exactly the names and selectors the API server accepts. They live here, in the root
// module, rather than beside the types in api/v1alpha1, because they need the local
// control plane and pkg/quota, which the api module must not depend on
// (docs/api-module.md).
package crdvalidation
