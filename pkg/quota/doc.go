// Package quota is quotagate's admission core: pure accounting and admission queues.
//
// It knows nothing about the API server. The reconcilers in pkg/quota/controller feed
// it what the informers see (pods, budgets, namespaces) and act on what it decides:
//
//	q := quota.NewAdmissionQueue(quota.WithClock(clk), quota.WithObserver(metrics))
//	r := q.Reader()                                // its read side (reader.go)
//	q.SetNamespace("team-a", ns.Labels)
//	q.UpsertBudget(quota.BudgetFromAPI(budget))   // or ClusterBudgetFromAPI
//	q.UpsertPod(quota.NewPod(pod, gate, clk.Now())) // DeletePod(uid) on delete
//	for _, a := range q.Admit() {                  // each already reserved ("assumed")
//		rv, err := patch(a.Pod)                    // fenced on rv: test it, test + remove the gate
//		q.Done(a.Pod.UID, resultOf(err), rv)       // Ungated, Gone, Unknown (the charge stays) or NotSent
//	}                                              // until a view settles it (attempts.go)
//	if t, ok := q.NextWakeup(); ok { requeueAt(t) } // backoffs, cooldowns, grace periods, flush
//	for _, k := range q.DirtyStatuses() { st, _ := r.Status(k); writeStatus(k, st) }
//	for _, p := range q.Preemptions() {            // victims to evict (preempt.go)
//		for q.PreemptionNeeded(p.Victim.UID) && evict(p.Victim) != nil { backOff() }
//		// a PDB's refusal: if retry, _ := q.EvictionBlocked(uid); !retry { stop }
//	}
//	r.WaitCode(uid) / r.WaitReason(uid)            // why a pod waits, for events
//	r.Snapshot()                                   // every queue, for /debug/queues
//
// The parts, each with its own state, composed by AdmissionQueue, which owns the one
// lock and the API: each exported method locks and hands the event to the part it
// concerns (a pod or namespace event to the placer, Admit and Done to the admitter, a
// budget event to the topology and then the placer). Each part is a named field, never
// embedded (budget.ledger, budget.queues, budget.family, and on AdmissionQueue the
// topology, pods, agenda, charges, families, preemptions, placer, admitter, flavors
// and reads); a part is handed the parts it calls when it is built, and only its own files
// select the fields of its type: everyone else calls its methods (parts_test.go checks
// it, in make verify and make test).
//
//   - ledger (package ledger, pkg/quota/internal/ledger; budget.ledger is a
//     ledger.Ledger of *podState): one budget's accounts: hard, its ceiling (hard plus
//     borrowingLimit) and what it lends, used (reservations included), pending, the pods
//     and claims charged; Charge, Release, Excess, NeverFits, Borrowed, and one
//     resource's Account (Of: Hard, Ceiling, Lendable, Used, Free). The accounts are
//     amounts (package amount): exact 128-bit counts of nano-units per resource. The
//     compiler keeps it a leaf: it knows a pod only as what it is handed back (Charged).
//   - queues (queue.go, wake.go): one budget's active, backoff, inadmissible and parked
//     heaps, in admission order (order.Key.Compare); move, strictHead, inOrder; wakeable
//     picks the inadmissible pods an event in the budget may let in.
//   - topology (package topology, pkg/quota/internal/topology; AdmissionQueue.topology
//     is a topology.Topology of *budget, and budget.place its topology.Place): the
//     budgets, namespaces and selectors; which budgets cover a pod (Coverage, through
//     coverage in budget.go); parents, children, ancestors, problems and states
//     (Resolve). A budget event resolves only the budgets it touches (the budget, and
//     for a ClusterBudget the budgets under it); one that changes nothing Resolve reads
//     (topology.Inputs: the manager's own status write coming back, or hard alone)
//     resolves none, so its cost does not grow with the number of budgets. The compiler
//     keeps it a leaf: it knows a budget only as topology.Node.
//   - families (families.go, borrowing.go, fairshare.go, hold.go, lendclaims.go): the budgets under
//     one parent, which may borrow what the others leave idle (borrowingLimit) and keep
//     part of hard (lendingLimit). It owns, on each budget (budget.family, nil until
//     needed), the pods waiting on the family for lendable quota, those that yielded by
//     fair sharing, the lend holds and whether a pod was parked as never fitting in the
//     family; and which budgets hold. admits says whether a unit fits in the family
//     (familyExcess, with what the lenders claim: their waiting pods, remembered for
//     an admission pass, and their holds) and whether it yields to a sibling (fair
//     sharing, yieldsTo); failed, admitted,
//     freed, useHolds, expire, familyNeverFits and lent do the rest. The core asks it
//     only for a unit with a borrowing family (inBorrowingFamily, budget.go), once per
//     step, so a pod in a budget without one never enters these files; it asks the
//     rest of the core only what familyCore names.
//   - preemptions (preemptions.go, preempt.go, preemptcooldown.go, victims.go,
//     victimorder.go, reclaimfloor.go, blocked.go, overhard.go): the victims chosen
//     and for whom, the evictions accepted and not yet seen terminating, those a
//     PodDisruptionBudget refused, the decisions not yet handed out, each namespace's
//     preemption cooldown with the preemptors it judges for its backoff, and the
//     budgets to bring back within their hard after a window ended with endPolicy
//     Reclaim (reclaimOverHard, at the end of each admission pass). decide chooses which
//     running pods must go so that a unit fits (reclaim of lent quota, or lower
//     priority within a budget) without moving anything: hide and show take charges
//     out of the ledgers and put them back; a unit that has not waited its cooldown
//     gets nobody, and is told until when. victimCandidates filters what may go,
//     compareVictims orders it (a pure comparator). It asks the rest of the core only
//     what preemptionCore names.
//   - groups (groups.go): the index of groups (join, leave), each
//     group's gated members and what they would charge (sync), readiness, and one
//     decision for the whole group (the admitter takes it: evaluateGroup).
//   - agenda (agenda.go, wake.go): what the next Admit looks at: the budgets whose
//     active heads need evaluating (dirty, best head first), the budgets whose status
//     may have changed, the gated pods held outside every budget; it moves a pod's
//     entries between its budgets' queues (attach, detach, move) and wakes the
//     inadmissible pods an event in a budget may let in (wake, recheckWakes, flush;
//     after an admission, wakeAdmitted leaves the pods waiting for lendable quota alone).
//   - charges (charges.go): what each admitted or running pod is charged to (charge,
//     release, recharge, coverAdmitted), the pods within their grace period, and whether
//     the family part holds freed quota.
//   - pods (podIndex, podstate.go): every pod the core knows, by UID and namespace; a
//     pod's record (podState, below) says itself when it was forgotten.
//   - placer (placer.go, park.go, groups_settle.go, starts.go): where each pod waits.
//     A pod event (add, update, forget), a namespace's labels or a budget's coverage
//     come here; a gated pod is queued in every budget that covers it, parked with why, held,
//     or admitted at once when no quota decision is needed; a group's members are placed
//     together. Its start side (starts.go) parks a pod that its own start rule or a
//     covering budget's does not let start yet (CodeStartLater), keeps for each such pod
//     when its rules next change, and places it again then (AdmissionQueue.runTimers).
//     A pod whose dependencies (dependencies.go) hold it is parked with why until the
//     controller gives it again with all of them ready.
//   - admitter (admit.go, attempts.go, timers.go): the decisions. Admit evaluates the
//     dirty budgets' heads in order: a unit (a pod or a group) is blocked, waits for
//     capacity (asking the family part, and the preemption part when it does not fit),
//     or is admitted (charged, handed out). It owns the decisions not yet returned, the
//     backoffs, the timers that evaluate a unit again when its preemption cooldown
//     ends, the ungate attempts' outcomes (Done), the periodic flush, and the count
//     of its passes (passes), which the family part's claims memo reads. Its
//     flavor side (flavor_choice.go) chooses the flavor a unit is admitted on, in its
//     flavored budget's order and under its fungibility, and takes the Flavor events.
//   - flavors (flavorIndex, flavors.go): the Flavor objects, which flavors a gated pod
//     may be put on (choices), and which one a running pod's node selector selects. A
//     budget's per-flavor quota is accounted as resources of their own, r@flavor beside
//     r, so the ledger, the family and the preemption parts need no flavor logic; a pod
//     on a flavor (podState.flavor) counts its usage on it too.
//   - hourBooks (hourbooks.go): the budgets' hours (spec.usageLimits), one hours.Ledger
//     per budget that has them, kept in the part keyed by budget. The charges part
//     tells it when a charge starts and ends (start, end); the admitter asks whether a
//     unit's hours fit before it asks about capacity (wait: CodeHoursExhausted,
//     CodeNoMaxRuntime), runs its timers (a period's end, a step of decay, a pod at its
//     maximum runtime) and, under Exhaustion Evict, hands the pods that outran their
//     maximum to the preemption part (overrun.go, PreemptMaxRuntime). Its memories
//     (memory.go) are fair sharing's memory, on the same charges, clock and status
//     writes: what each budget under a parent with usageHalfLife used, decayed.
//   - reads (reader.go, status.go, snapshot.go, page.go, podplaces.go, reasons.go,
//     reasontext.go, heads.go): the read side, Reads, which AdmissionQueue hands out (Reader): a
//     budget's status, every queue in admission order (Snapshot) or one page of one
//     (Page), where and why a gated pod waits (PodWait, PodWaitByName, WaitReason,
//     WaitCode, WaitReasons), and which waiting pods are among the first of their
//     queues (AtHead). It changes nothing, and each of its exported methods takes the
//     core's one lock. quota.Reader is the part of it the views that only read take
//     (the visibility API, /debug/queues); the controller uses the rest for its events
//     and status writes. It finds budgets through the topology's methods, pods
//     through the pod index, held pods through the agenda.
//
// AdmissionQueue itself (engine.go) holds the parts; it answers the family and
// preemption parts' questions (familyCore, preemptionCore) by asking the part that
// knows. The parts hold each other one way only, in the order engine.go builds them:
// the placer holds the admitter, never the reverse; what the admitter hands back to be
// placed again (a pod whose ungate was given back, or whose backoff ended) the
// composer gives the placer (AdmissionQueue.Done, AdmissionQueue.runTimers).
// TestNoCycleBetweenParts fails on a cycle.
//
// A pod's record (podState) is shared: what the pod is (its view, order, group, the
// budgets that cover it, its amounts) and where it waits (phase, wait, parked,
// inBackoff). The placer writes what the pod is, the charges part its coverage when a
// charge moves, and the group index its group. Where it waits changes only through the
// record's own transitions (podState.run, assume, backOff, endBackoff, waitFor,
// coolDown, park, hold): the placer and the admitter call them, and they keep what
// holds across the four fields (a pod admitted waits for nothing, is neither parked
// nor backing off). TestRecordWriters names the files that write each field. What a part knows of a pod is a type of its own on
// the record, which only that part's files write: podCharge (charges: where it is
// charged, how much, its pins and charge labels), podAttempt (admitter: why and when it
// was admitted, its ungate attempts, backoff and cooldown), podEntries (agenda: its
// entries in the queues), podPreemption (preemptions). podparts.go declares them, with
// the methods the other parts read them by. hack/podevent/podevent.sh prints the path of one pod event through these files;
// its test fails when a pod event or a budget event in a namespace with one plain
// Budget enters a file of the family, preemption, group or flavor parts.
//
// Accounting follows ResourceQuota (usage.go): pod usage is computed with
// k8s.io/component-helpers/resource and keyed by ResourceQuota's names. Inside the
// core it is kept as amounts (package amount), converted once from a pod's usage and a
// budget's hard and back only for statuses and messages: exact counts of nano-units,
// Quantity's own precision, so that fractional quantities (memory "100m") sum as
// ResourceQuota sums them, in 128 bits, so that no sum saturates or wraps. A value
// beyond Quantity's documented range (amount.MaxUnits) is not counted: a gated pod that
// carries one waits (CodeUncountable), and a hard that holds one is an invalid spec. An
// admitted pod's charge is fixed when it is made (charges.go). The queues
// follow kube-scheduler's scheduling queue (queue.go explains them and how a pod moves
// between them); groups are in groups.go. Decisions are taken only inside Admit, so
// that a batch of informer events is applied before anything is decided. Every
// exported method of AdmissionQueue and of its Reads is safe for concurrent use: one
// mutex guards them.
//
// # Layers
//
// The core is these packages, the highest first. A package imports only packages of
// the layers below its own, never one of its own layer or above, so that a leaf never
// depends on what decides (hack/layers checks it with `go list`, in make verify):
//
//	pkg/quota/controller      the reconcilers: the informers' events in, decisions out
//	pkg/quota/controller/internal/estimator   the estimator and the what-if: simulations of the queues on cores of their own
//	pkg/quota                 the composer, AdmissionQueue, and its parts (above)
//	pkg/quota/hours pkg/quota/internal/ledger   one budget's resource-hours: used, reserved, periods and decay (on the indexed heap); one budget's accounts: hard, ceiling, lendable, used, pending, the pods and claims charged (in exact amounts)
//	pkg/quota/internal/amount pkg/quota/internal/heap pkg/quota/internal/order pkg/quota/internal/topology pkg/quota/window pkg/quota/depend pkg/quota/controller/internal/pacing   the leaves: exact amounts, the indexed heap, the admission order, the topology of budgets, windows (a budget's spec at an instant), dependencies (what a pod waits for, and whether it is ready), the CPU the manager's simulations take beside admission
//
// # Where a change goes
//
// docs/architecture.md ("Where each change goes") has the whole map, with the test to
// extend for each, and the estimates' row. In short (Topology and Ledger are generic:
// their methods are declared on Topology[B] and Ledger[P]):
//
//   - a new resource kind: the names a Budget accepts (api/v1alpha1, accountable.go),
//     PodUsage, NormalizeHard and quotaName (usage.go); devices in ClaimUsage (claims.go)
//     and WithExtendedDevices (extended.go).
//   - a new queue order: package order (order.Of, order.Key.Compare); comparePods
//     (queue.go) breaks ties by UID.
//   - a quota that changes with time: BudgetFromAPI (budget_spec.go), the ledger's hard
//     (ledger.Ledger.SetLimits), and a timer in AdmissionQueue.runTimers and
//     AdmissionQueue.NextWakeup (timers.go); a window (BudgetWindow) is computed by package
//     window and fed to AdmissionQueue.UpsertBudget (budget_events.go) by the
//     controller's budgetWindows (windows.go), so the core only sees a new spec.
//   - a quota in resource-hours: package hours (the ledger: periods, decay,
//     reservations) and hourBooks (hourbooks.go), which the charges and the admitter
//     call; the spec comes in through BudgetFromAPI (Budget.Hours, HoursRestore).
//   - fairness with decayed usage: families.yieldsTo and budget.shareWith (fairshare.go)
//     add memories.share (memory.go, kept by hourBooks), what a budget used, decayed
//     with its parent's Budget.UsageHalfLife, in an hours.Ledger per budget, shown and
//     kept across restarts as status.fairSharing (memories.state,
//     Budget.MemoryRestore); TestRandomizedFairSharingMemory is its model.
//   - a new preemption policy: preemptions.decide and preemptionKind (preempt.go),
//     victimCandidates (victims.go), compareVictims (victimorder.go).
//   - a new flavor rule: flavorIndex.choices (flavors.go), admitter.flavorFor
//     (flavor_choice.go).
//   - a new status field: BudgetStatus and Reads.Status (status.go), then the
//     controller's applyStatus and the API's BudgetStatus.
//   - a new rule for when a pod may start: parseStart and placer.startWait
//     (starts.go); the rule itself is window.Start (package window).
//   - a new kind of object a pod may wait for: depend.Parse and a status function in
//     package depend, the controller's informer and onDependencyObject
//     (controller/dependencies_watch.go); the core only sees a pod's verdict
//     (ResolveDependencies, dependencies.go).
//   - a new rule for how budgets hang together, or for when a budget stops admitting (a
//     problem, a state): topology.Topology.Resolve (internal/topology, resolve.go), the
//     spec it reads, topology.Inputs (place.go) and budget.Inputs (budget.go).
//   - a new reason a pod waits: a ReasonCode (reasoncodes.go; parks, if it parks the
//     pod), its sentences in Reads.waitMessage and its cause in Reads.WaitCause
//     (reasons.go), set where the decision is taken.
package quota
