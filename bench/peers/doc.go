// Package peers is `go run ./bench -peers` (make bench-peers): quotagate's manager,
// Kueue's manager (plain pods) and the bare client, each run as a process of its own on
// one local control plane, measured with the same pods (release throughput, reaction,
// create to ungate, memory), and with Kueue's own scheduler performance scenario
// (sched*.go: its config read from Kueue's module, run as plain pods on both managers
// and replayed by an ideal admitter), into docs/benchmarks-peers.md and
// bench/peers/benchmarks-peers.json.
package peers
