// Package scale is `go run ./bench -scale` (make bench-scale): the growth curve of
// quotagate's manager with up to 100,000 gated pods in 1,000 budgets, one fresh local
// control plane per size, into docs/benchmarks-scale.md and bench/scale/benchmarks-scale.json.
package scale
