// Package estimates is `go run ./bench -estimates` (make bench-estimates): how right
// the manager's estimated starts (package estimate, served by the visibility API) are,
// against a naive baseline and an oracle, on real local control planes.
//
// It replays three seeded workloads (Workloads), each on a fresh control plane: Jobs
// of one pod each, of kinds whose run times are drawn from known distributions, into
// budgets that admit pods of 1 CPU. "fifo" is three kinds at one priority into one
// Budget; "mix" the demo's two workloads of unequal length, the short one at a higher
// priority, arriving while the long one's pods wait; "family" two Budgets under a
// ClusterBudget that borrow from each other, with a workload never seen before
// appearing mid-run. The first 2×slots Jobs are created at once, the rest at the rate
// the budgets admit on average, or earlier when fewer than slots pods wait, so the
// budgets stay full and pods queue throughout. kube-controller-manager's Job controller
// creates each pod with quotagate's gate from the Job's template; kwok runs it for its
// drawn time once it is Ready and marks it Succeeded; the manager, in this process with
// its default settings (an estimator pass at most every 5 s), learns from the pods that
// end, keyed by the Job's generated name, that is by kind.
//
// Every second the benchmark reads each Budget's pendingpods from the manager's
// visibility handler and keeps, for each pod, the first answer that carried an
// estimate (its estimate when created) and the first that had it at position 1 (at the
// head of the queue), each beside the naive baseline's estimate at that moment
// (Baseline: position × the mean run time of the pods ended so far ÷ the budget's
// slots) and the oracle's (Oracle: the true distributions and the world as it stands,
// played through quotagate's own core). A pod's start is when a watch first showed it
// without the gate: its admission, which an estimate estimates. The report judges the
// pods created once every kind of the start has Warm (10) pods ended, against the
// issue's targets (OracleTarget, Coverage, BaselineTarget), and sets beside them the
// manager's own track record of the run (TrackRecord).
package estimates
