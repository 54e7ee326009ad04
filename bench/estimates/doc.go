// Package estimates is `go run ./bench -estimates` (make bench-estimates): how right
// the manager's estimated starts (package estimate, served by the visibility API) are,
// against a naive baseline, on a real local control plane.
//
// A seeded workload (Plan) of Jobs of one pod each, of three kinds whose run times are
// drawn from known distributions (Kinds), is created over time into one namespace whose
// Budget admits slots pods of 1 CPU at once: the first 2×slots at once, the rest at the
// rate the budget admits on average, or earlier when fewer than slots pods wait, so the
// Budget stays full and pods queue throughout. kube-controller-manager's
// Job controller creates each pod with quotagate's gate from the Job's template; kwok
// runs it for its drawn time once it is Ready and marks it Succeeded; the manager, in
// this process with its default settings (an estimator pass at most every 5 s), learns
// from the pods that end, keyed by the Job's generated name, that is by kind.
//
// Every second the benchmark reads the Budget's pendingpods from the manager's
// visibility handler and keeps, for each pod, the first answer that carried an
// estimate (its estimate when created) and the first that had it at position 1 (at the
// head of the queue), each beside the naive baseline's estimate at that moment
// (Baseline: position × the mean run time of the pods ended so far ÷ slots). A pod's
// start is when a watch first showed it without the gate: its admission, which an
// estimate estimates. The report judges the pods created once every kind has Warm (10)
// pods ended: the median and 90th percentile of each estimate's absolute error, and
// the baseline's median error over the manager's, against the goal of 2.
package estimates
