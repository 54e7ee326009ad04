// Package hours is one budget's hour ledger (spec.usageLimits): what its pods have used
// over time, in resource-hours, and what the running ones may still use. It is pure:
// no API server and no clock of its own; the admission core (package quota) holds one
// Ledger per budget with usageLimits, under its lock, and tells it when a pod is charged
// (Start) and when its charge ends (End).
//
// A running pod uses, per resource the budget has hours for, its charge (what the
// budget charges it: its requests, as ResourceQuota counts them) for each hour it runs,
// from its admission until its charge ends. When it is admitted it reserves its charge
// times its maximum runtime (MaxRuntime); as it runs, what it reserved turns into what
// it used, so used + reserved stays what it was until the pod ends early (the rest of
// its reservation is given back) or outruns its maximum (what it uses beyond is used
// and was not reserved). A pod is admitted only when used + reserved + its own
// reservation fits in the budget's hours (Check), so the budget goes over its hours
// only by what pods use beyond their maximum runtime: nothing with activeDeadlineSeconds,
// which the kubelet enforces, and nothing under Exhaustion Evict beyond the time an
// eviction takes.
//
// Three ways to count:
//
//   - Period: a calendar Day, Week (ISO, from Monday) or Month in a time zone. Used is
//     what was used since the period began; at its end used starts again from zero,
//     while reservations of running pods stay (they count in the new period).
//   - RollingDays: what was used on the current UTC day and the N days before it,
//     counted per UTC day, so an hour is forgotten between N and N+1 days after it
//     was used.
//   - HalfLife: used decays continuously: an hour used a half-life ago counts half.
//     Reservations do not decay (a pod's reservation counts in full until it runs).
//
// Amounts are float64 resource-hours: 53 bits of precision, so a budget of a million
// GPU-hours is counted to the nanosecond-GPU, and a sum can neither wrap nor saturate.
// Inputs are finite and not negative (FromAPI and the core's charges see to it).
//
// What was used survives restarts through the budget's status: State is what the
// controller writes (status.usage), and Restore is given it back when a manager starts.
// State includes what running pods used up to its AsOf; a pod still running when the
// manager starts again counts from AsOf (or its admission, if later), so nothing a
// running pod used is lost or counted twice. What is lost is what pods that ended
// between the last write and the start of the next manager used after that write
// (docs/budgets.md, "Hour budgets").
package hours
