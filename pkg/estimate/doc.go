// Package estimate answers "when will my pod start?": it learns how long pods hold
// their quota, expects when each running pod ends, and simulates the admission core
// forward in time to estimate when each gated pod is admitted.
//
//	l := estimate.NewLearner(0)                        // one per manager
//	l.Observe(pod, budgets, now)                      // a pod first seen Succeeded or Failed
//	e := l.Expect(pod, budgets)                       // any pod: how long it holds quota
//	starts := estimate.Simulate(estimate.World{...}, estimate.Options{Core: coreOpts})
//
// The manager (pkg/quota/controller, estimates.go) keeps one Learner fed from its pod
// informer, whose cache keeps each pod's Facts (FactsOf: the little Expect and Observe
// read, shared between pods with equal ones) instead of the pod; every
// --estimate-interval when something changed, it builds a World from its caches with a
// WorldBuilder, simulates it outside the core's lock, and serves the Starts through the
// visibility API (docs/visibility.md).
//
// # What an estimate is built from
//
// A pod's expected duration comes, in this order of trust (Expect), from its own
// deadline (spec.activeDeadlineSeconds from status.startTime: the kubelet ends it
// then at the latest), a duration its owner declares (the quotagate.io/expected-duration
// annotation, Go duration syntax; a bad value is ignored with a reason), or the
// durations of finished pods that look alike (Learner): those of the same workload,
// the owner kind and the owner name's stem (what is numbered or generated cut off:
// Jobs train-7 and train-8 are one workload) in the same namespace, else of the same
// namespace, else of the same budget, the first with at least MinSamples (3) pods; a
// wider circle's durations are widened (FallbackSpread) and their Basis says which. Succeeded and Failed pods both teach: both
// held their quota until they ended. A learned duration runs from when the pod took its
// quota (quotagate.io/admitted-at) to when its last container finished; it is a mean,
// a median and a range (the 10th to the 90th percentile of the key's last Window runs), with
// its sample count and basis beside it; for a running pod, of the runs that lasted
// longer than it has so far.
//
// Simulate feeds a fresh quota.AdmissionQueue, on a clock of its own, the budgets, the
// namespaces, the pods that hold quota and the gated pods, and advances it: it admits
// what the core admits (in the core's own order: priorities, FIFO or StrictFIFO,
// borrowing and fair sharing in families, groups all or nothing, preemptions, whose
// victims end at once), starts those pods, jumps to the next expected end (or the
// core's next wakeup: a lend hold's end, an hour budget's period end, step of decay or
// rolling day), ends that pod, and again, until every gated pod is admitted or nothing
// more can happen. An hour budget (spec.usageLimits) starts from its status.usage, and
// its pods use hours on the simulated clock, so a pod that waits with UsageExhausted
// starts when its period resets, enough has decayed, or a pod ahead ends early and
// gives back the rest of its reservation. It does so Options.Draws times
// (DefaultDraws: 19, or 9 above 2,000 pods), each time with every learned duration
// drawn (durations: from a bootstrap resample of the workload's runs, stretched and
// moved as unsure as few runs leave the workload's spread and mean (spreadFrom),
// smoothed, bandwidth, and, from a wider circle's runs, multiplied by a log-normal
// factor, FallbackSpread, one for the whole workload; a running pod the rest of its
// kind's runs longer than it has run, or, past them all, by Gott's rule, one draw for the
// whole workload); a pod's
// Median, Low and High are the 10th, 2nd and 18th of its 19 starts, so that the range
// holds a start drawn like them Coverage (80%) of the time, and each position of a
// queue has its own start. A deadline or a declared duration is that one in every
// draw; a world with no learned duration is simulated once. A pod that is not
// admitted (in the draw of its median) is Unknown, with why: a covering budget is closed, it never fits, it waits behind pods
// with no expected end (no history), something no pod's end brings (its group, a
// claim), or the simulation's bounds (Horizon, MaxSteps). Nothing in a Start names
// another pod, so a tenant learns no other namespace's pod names from it, nor its
// workloads: a Basis learned in another namespace says only that, and from how many runs.
//
// # Pods still to come
//
// A waiting pod's start depends on pods not created yet too: those of a higher priority
// go ahead of it, and in a family a member's new pods take back what another borrowed.
// Arrivals (one per manager, fed every pod first seen that carries the gate or went
// through it) learns each workload's creations per priority (ArrivalKey: the owner's
// stem, as Key's LevelOwner, and the priority): the last 32 moments (a second's
// creations are one, with their count) and the last pod as a template. Streams gives
// those still creating: at least MinArrivals moments, the last no more than
// arrivalQuiet (4) mean gaps ago. WorldBuilder.AddArrivals keeps those whose pods'
// durations the Learner knows (World.Arrivals). Each draw of Simulate draws each
// stream's rate (Gamma(gaps, span): a rate learned from few moments is uncertain),
// then creates its pods, gated, at exponential gaps, each moment as many as its recent
// moments' median, up to Stream.Until (as far ahead as its history reaches back, at most
// a day) and at most as many pods as the world has (at least 64); they run as their
// workload's learned runs say. A run stops creating them once none of the world's own
// pods has an end to come, and once the pods asked about that still wait wait for
// nothing an end brings (looked at every 16 moments created without a start): else a
// pod that never fits would be simulated up to those bounds in every draw. A draw-less
// run (Place) creates none.
//
// # What if
//
// Place and Suppose answer for pods that do not exist yet (the visibility API's
// podsimulations): added to the world's waiting pods, gated and created at Now, they
// are fed to a fresh core as Simulate feeds it, and Place returns what that core says
// of them after its decisions at Now (admitted at once, on which budgets and flavor,
// after how many preemptions; or their place in each covering budget's queue and the
// reason), Suppose that and their Starts. A what-if answers a tenant's request, so it
// is bounded as the request is: Options.Done stops it at its next step (the client went
// away, or its time is up), and Options.Pace, called at every step, lets the manager
// bound the share of a CPU it takes.
//
// # How wrong it can be
//
// An estimate is as good as the durations behind it: Start.Ends says how many pod ends
// the simulation went through before it started and Start.Samples the fewest finished
// pods behind any learned one among them, and Start.Basis what the least trusted of
// them was learned from. Its range holds the start as often as it claims when the
// runs learned are like the runs to come; it is early when pods run longer than their
// kind did, when pods not created yet arrive ahead of it more often than their
// workload's history says (a workload never seen before, a group, a preempted pod
// recreated), and when the scheduler, not the quota, is what holds a
// pod back. It is late when pods end before their deadline or their declared duration
// (a deadline is only an upper bound, yet a pod with one is simulated to run until
// it), or are deleted. Not simulated: the time
// from admission to status.startTime, backoffs of failed ungates, victims' grace
// periods. Under an hour budget's halfLife, the simulation looks at what fits in steps
// that grow with the simulated time (a sixteenth of it, where the core looks every ten
// minutes at most), so a start that waits for decay is up to a sixteenth of its wait
// late.
//
// # Memory
//
// A Learner keeps, per key, a ring of the last Window (32) durations, their cached
// quantiles, a sorted copy of them that simulations draw from and its fit, some 930
// bytes (850 measured before the fit's 80), and at most maxKeys keys (DefaultMaxKeys,
// 4096: some 3.8 MB), dropping the least recently recorded first. Arrivals keeps, per
// stream, 32 moments of 32 bytes, a template pod (a quota.Pod: 464 bytes, its maps
// shared with the informer's cache) and its Facts (160 bytes), some 1.9 KB with the
// key, list and map entries, and at most DefaultMaxKeys streams (some 7.6 MB), dropping
// the least recently created first. A simulation holds a fresh core of the world's pods (the
// core's own cost per pod) and one heap entry per pod; Simulate keeps every draw's
// outcome of every waiting pod until it reads their starts.
//
// # Cost
//
// Draws simulations of the world (19, or 9 above 2,000 pods; a what-if 9, each stopped
// once its pods started: Suppose), each a step per distinct moment a pod ends; each
// step costs what the core costs for those ends and an Admit. Measured with
// `go test ./pkg/estimate -run '^$' -bench 'BenchmarkSimulate|BenchmarkSuppose|BenchmarkEstimatePass/build\+simulate' -benchmem`,
// three times, the code before and after 2026-12-05's changes taking turns in one run
// (20 Budgets of 50 CPUs, full, 1,000 running pods), in CPU time per operation, on a
// shared 2-vCPU machine at a load of 6 to 8 (the wall time up to twice as long):
//
//	                                                 before                 after
//	Simulate, 1,000 gated pods (19 draws)            0.35, 0.37, 0.43 s     0.37, 0.33, 0.39 s    101 MB, 0.58M allocations
//	Simulate, 10,000 gated pods (9 draws)            4.8, 4.2, 5.5 s        3.0, 2.7, 3.5 s       498 MB, 2.3M allocations
//	Simulate, 400 gated pods in a borrowing family   30, 29, 36 s           26, 31, 30 s          3.8 GB, 46M allocations
//	Suppose, 1 pod behind 900 gated                  0.33, 0.31, 0.40 s     0.11, 0.13, 0.17 s    42 MB (97 before)
//	Suppose, 1 pod behind 400 in a borrowing family  29, 29, 33 s           5.9, 7.4, 8.0 s       0.96 GB (3.96 before)
//	one estimator pass at 10,000 gated pods          2.4, 2.0, 2.6 s        2.0, 2.9, 2.7 s       417 MB, 2.4M allocations
//
// A what-if (Suppose) costs a third to a fifth of what it did: 9 draws instead of 19,
// each stopped once its pods started. At 10,000 gated pods a wake (each simulated pod
// end is one) no longer looks up, for every pod it passes over, whether the budget woken
// is alive. The passes at 1,000 pods and in the family are the same draws as before.
//
// Before the draws (three runs: every duration at its center, low and high) the three
// Simulates took 0.06–0.07 s, 1.9–2.5 s and 5.4 s: a draw costs what a run did, and
// there are 19 or 9 instead of 3.
//
// Pods still to come cost what the pods they create cost: BenchmarkSimulate's
// arrivals world (the 1,000 gated pods', with a stream of pods of the higher priority
// in each of the 20 namespaces, one every 2 minutes) took 578–697 ms of CPU, 139 MB and
// 0.97M allocations an op, against 393–472 ms, 107 MB and 0.64M without the streams,
// three runs each on 2026-12-07 at a load of 0.02 to 0.4 (a draw creates at most as
// many pods as the world has).
//
// One pass of the manager's estimator (BenchmarkEstimatePass: the World built from cached
// pods with a WorldBuilder, then Simulate), 100 Budgets of 50 CPUs full of 5,000
// running pods of Jobs with learned durations, 10,000 gated pods (9 draws): building
// the World 43 MB in 54k allocations (before the draws, build and Simulate took 0.9 s
// of CPU, 168 MB).
//
// The draws run one after another: running the three runs of before at once made them
// slower on 2 cores (2.0–2.2 s of CPU against 1.7 s in turn, at 10,000).
//
// The core's wake of a budget's inadmissible pods on each pod end dominates the
// first two; in a borrowing family, the core's sums over the family's members for every
// pod evaluated (familyExcess), and every pod waiting on the family evaluated again at
// each end in it, make each step quadratic in the pods waiting on the family. So
// recompute estimates on a timer (tens of seconds at 10,000 gated pods), not on every
// event.
package estimate
