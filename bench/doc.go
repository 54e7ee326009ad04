// Command bench measures quotagate on a real local control plane (test/localcluster)
// and writes docs/benchmarks.md and docs/benchmarks.json.
//
// Every figure is measured beside its baseline in the same run: the rate at which the
// manager releases gated pods against a bare client that removes the same gates with the
// same JSON patch; the reaction to freed capacity against the same bare client reacting
// to the same watch event; pod create latency with the webhook against without it; the
// manager's heap with 0 and N gated pods; the admission core's own benchmarks; and pods
// Running on kwok nodes through kube-scheduler with either releaser.
//
// The manager and the webhook run in this process, with the manager's ServiceAccount
// and generated ClusterRole and the shipped webhook configuration, so profiles of this
// process are profiles of quotagate. Run it with `go run ./bench`; -h lists the knobs.
package main
