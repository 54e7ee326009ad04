// Package peers is `go run ./bench -peers` (make bench-peers): quotagate's manager,
// Kueue's manager (plain pods) and the bare client, each run as a process of its own on
// one local control plane, measured with the same pods (release throughput, reaction,
// create to ungate, memory), into docs/benchmarks-peers.md and
// docs/benchmarks-peers.json.
package peers
