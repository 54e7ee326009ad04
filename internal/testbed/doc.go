// Package testbed prepares a local control plane for tests and benchmarks that run
// quotagate's manager in-process: it installs the CRDs from config/crd/bases and the
// manager's identity as shipped (a ServiceAccount bound to the ClusterRole that
// controller-gen writes from the RBAC markers into config/rbac/role.yaml), so what the
// tests exercise is the real RBAC.
//
// It also holds the tests' one poll helper (Poll); the one pod builder is beside it in
// internal/testbed/podtest, a package of its own so that the core's in-package tests can
// use it without linking a control plane; so is the one recorder of events about pods,
// internal/testbed/eventtest.
package testbed
