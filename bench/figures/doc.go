// Package figures is `go run ./bench` (make bench): it measures quotagate on a real
// local control plane (test/localcluster) and writes docs/benchmarks.md and
// bench/figures/benchmarks.json.
//
// Every figure is measured beside its baseline in the same run: the rate at which the
// manager releases gated pods against a bare client that removes the same gates with the
// same JSON patch; the reaction to freed capacity against the same bare client reacting
// to the same watch event; pod create latency with the webhook against without it; the
// manager's heap with 0 and N gated pods; the admission core's own benchmarks; and pods
// Running on kwok nodes through kube-scheduler with either releaser. The release and the
// reaction are also measured with the Budget's quota split over Flavors (flavors.go),
// beside the plain Budget: what choosing a flavor and adding its labels costs. Figure 8
// (estimates.go) measures the reaction and create → ungate with the manager's estimates
// on and off, arms alternating on fresh control planes: what estimating costs admission.
//
// The manager and the webhook run in this process, with the manager's ServiceAccount
// and generated ClusterRole and the shipped webhook configuration, so profiles of this
// process are profiles of quotagate.
//
// Env, the world the figures are measured in (the control plane, the identities, the
// manager in this process, pod watches, the bare client, CPU and memory meters), and the
// release, reaction and create-to-ungate measurements are exported: bench/peers and
// bench/scale measure with them.
package figures
