// Command bench measures quotagate on a real local control plane (test/localcluster).
// It runs one of four benchmarks, each a package of its own:
//
//	go run ./bench            bench/figures: seven figures, each beside its baseline;
//	                          docs/benchmarks.{md,json} (make bench)
//	go run ./bench -scale     bench/scale: up to 100,000 gated pods in 1,000 budgets;
//	                          docs/benchmarks-scale.{md,json} (make bench-scale)
//	go run ./bench -peers     bench/peers: quotagate beside Kueue and the bare client;
//	                          docs/benchmarks-peers.{md,json} (make bench-peers)
//	go run ./bench -estimates bench/estimates: estimated starts against a naive baseline;
//	                          docs/benchmarks-estimates.{md,json} (make bench-estimates)
//
// bench/report is what the four share to write and render their reports; with
// -render-only each renders its Markdown again from its JSON without measuring.
// -h lists the knobs.
package main
