// Package testbed prepares a local control plane for tests and benchmarks that run
// quotagate's manager in-process: it installs the CRDs from config/crd/bases and the
// manager's identity as shipped (a ServiceAccount bound to the ClusterRole that
// controller-gen writes from the RBAC markers into config/rbac/role.yaml), so what the
// tests exercise is the real RBAC.
package testbed
