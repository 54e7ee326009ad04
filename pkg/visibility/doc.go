// Package visibility serves visibility.quotagate.io/v1alpha1, the read-only view of a
// budget's gated pods, from the manager through kube-apiserver's aggregation layer.
//
// kube-apiserver authenticates the user and proxies the request here with the user's
// name and groups in front-proxy headers; this server trusts those headers only from
// the front-proxy client certificate named in kube-system's
// extension-apiserver-authentication ConfigMap, or authenticates a bearer token with a
// TokenReview, and asks kube-apiserver whether the user may get the resource with a
// SubjectAccessReview. So a pendingpods request is authorized by ordinary RBAC rules on
// budgets/pendingpods and clusterbudgets/pendingpods in this group, namespaced as the
// budget is (k8s.io/apiserver's delegated authentication and authorization).
//
// The API is not backed by storage: every page is computed from the admission core's
// read side (quota.Reads.Page), which orders the budget's pods and copies only the
// page. Only the leader's queues are evaluated, so a standby replica does not answer
// from its own core: it forwards the request, under its own identity, to the address
// the leader publishes in a Lease (leader.go). The request reaching the leader is
// authorized again, as the manager's ServiceAccount, which the chart allows to read
// every queue.
//
// One resource is not read but created: podsimulations (simulations.go), the what-if
// of pods not created yet, answered from a fresh core the manager feeds its estimator's
// world (Simulator). Besides the generic server's authorization of create
// podsimulations, simulationAccess (access.go) checks with a SubjectAccessReview that
// the user may create pods in the namespace, before a standby forwards; the leader
// takes a forwarded simulation only from a sender that may create
// podsimulations/forwarded, which only the manager's ClusterRole grants. A tenant with
// edit may ask for simulations, so each request is bounded (SimulationLimits): its body,
// its pods and their containers (413 and 422 beyond, the limit named), its time, and
// the simulations running at once, one per namespace (429 with Retry-After beyond,
// never a queue behind another tenant's); a simulation stops when its client goes away.
package visibility
