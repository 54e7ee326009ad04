package quota

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
)

// ReasonCode classifies why a pod waits or was admitted; it is stable, for event
// reasons and for deciding whether a reason changed. Reason.Message has the details.
type ReasonCode string

// Why a pod waits.
const (
	// CodeQueued: not evaluated yet (the next Admit will).
	CodeQueued ReasonCode = "Queued"
	// CodeInsufficient: a covering budget has no room for it now.
	CodeInsufficient ReasonCode = "InsufficientQuota"
	// CodeBudgetClosed: a covering budget is Closed or Closing, closed by its parent,
	// or cannot work (invalid spec, missing parent, parent cycle).
	CodeBudgetClosed ReasonCode = "BudgetClosed"
	// CodeBehindHead: a StrictFIFO budget must first admit a pod ahead of it.
	CodeBehindHead ReasonCode = "StrictFIFOOrder"
	// CodeNeverFits: it requests more than a covering budget's hard.
	CodeNeverFits ReasonCode = "RequestsExceedHard"
	// CodeMustSpecify: it leaves unset a value a covering budget tracks, which
	// ResourceQuota requires every container to set (UnsetResources).
	CodeMustSpecify ReasonCode = "MustSpecifyResources"
	// CodeGroupIncomplete: fewer members of its group exist than the group's size.
	CodeGroupIncomplete ReasonCode = "GroupIncomplete"
	// CodeGroupInvalid: its group-size annotation is missing or not a number >= 1.
	CodeGroupInvalid ReasonCode = "GroupInvalid"
	// CodeClaimPending: a ResourceClaim or ResourceClaimTemplate it uses does not exist
	// yet, so what it would charge is unknown (ClaimCharge).
	CodeClaimPending ReasonCode = "ClaimPending"
	// CodeUncountable: a value it requests is beyond what quotagate counts exactly
	// (amount.MaxUnits): it is never charged approximately, so it waits.
	CodeUncountable ReasonCode = "ValueOutOfRange"
	// CodeGroupBackoff: its group waits for members that back off after a failed ungate.
	CodeGroupBackoff ReasonCode = "GroupBackoff"
	// CodeGroupPartIncomplete: its CompositePodGroup's gang may be admitted, but not
	// the part of it the pod belongs to: fewer of that PodGroup's pods (or of that
	// CompositePodGroup's children) are ready than it needs, and none of it runs.
	CodeGroupPartIncomplete ReasonCode = "GroupPartIncomplete"
	// CodeBackoff: its ungate failed; it retries later.
	CodeBackoff ReasonCode = "Backoff"
	// CodeUncovered: no budget covers it, and uncovered pods are held.
	CodeUncovered ReasonCode = "Uncovered"
	// CodeNamespaceUnknown: the manager has not seen its namespace yet, so which
	// budgets cover it is not known.
	CodeNamespaceUnknown ReasonCode = "NamespaceUnknown"
	// CodeNoLendable: the budgets under a parent, some of which borrow from the others,
	// have no unused lendable quota left for it (familyExcess).
	CodeNoLendable ReasonCode = "NoLendableQuota"
	// CodeFairShare: it would borrow, and a budget under the same parent whose
	// borrowing is a smaller share of what the family lends goes first (families.yieldsTo).
	CodeFairShare ReasonCode = "FairSharing"
	// CodePreemptionPending: it does not fit, and pods would be evicted to make room for
	// it, once it has waited the preemption cooldown of its namespace
	// (preemptions.cooldownOf); it is evaluated again then. Inside the core it waits with
	// the reason it would have without the cooldown (InsufficientQuota or
	// NoLendableQuota), which the message gives first.
	CodePreemptionPending ReasonCode = "PreemptionPending"
	// CodeNoFlavor: its budget holds quota per flavor, and no flavor can take it (its
	// node selector asks for other labels, or no flavor holds quota for what it
	// requests; flavorIndex). A budget naming a Flavor that does not exist admits
	// nothing (FlavorNotFound): its pods wait with CodeBudgetClosed.
	CodeNoFlavor ReasonCode = "NoFlavor"
	// CodeStartLater: its start rule (quotagate.io/not-before or
	// quotagate.io/start-schedule) or a covering budget's (spec.start) does not let it
	// start yet; it is placed again when that changes (placer.startWait).
	CodeStartLater ReasonCode = "StartLater"
	// CodeStartInvalid: its start annotations do not parse; it waits until they are
	// fixed.
	CodeStartInvalid ReasonCode = "InvalidStartRule"
	// CodeDependencyPending: an object it waits for (quotagate.io/wait-for) is not
	// ready yet (dependencyPark).
	CodeDependencyPending ReasonCode = "WaitingForDependency"
	// CodeDependencyFailed: an object it waits for never will be ready as it is (a
	// failed Job, a Lost claim, a Deployment past its progress deadline).
	CodeDependencyFailed ReasonCode = "DependencyFailed"
	// CodeDependencyCycle: its workload waits, through the objects it names, for
	// itself.
	CodeDependencyCycle ReasonCode = "DependencyCycle"
	// CodeDependencyInvalid: its quotagate.io/wait-for annotation does not parse; it
	// waits until it is fixed.
	CodeDependencyInvalid ReasonCode = "InvalidDependency"
	// CodePodGroupPending: the Kubernetes PodGroup it names does not exist (yet), or
	// was not read yet: it is never admitted without its gang (podGroupPark).
	CodePodGroupPending ReasonCode = "PodGroupPending"
	// CodeHoursExhausted: a covering budget's hours (spec.usageLimits) do not hold what
	// it may use (its charge times its maximum runtime) beside what was used and is
	// reserved in the period (hourBooks.wait).
	CodeHoursExhausted ReasonCode = "UsageExhausted"
	// CodeNoMaxRuntime: a covering budget has hours, and the pod has no maximum
	// runtime (no activeDeadlineSeconds, no quotagate.io/max-runtime, no
	// defaultMaxRuntime), or its quotagate.io/max-runtime does not parse.
	CodeNoMaxRuntime ReasonCode = "NoMaxRuntime"
)

// Why a pod was admitted.
const (
	// CodeFits: it (with its group) fits in every budget that covers it.
	CodeFits ReasonCode = "Fits"
	// CodeNoBudget: no budget covers it; uncovered pods are admitted at once.
	CodeNoBudget ReasonCode = "NoBudget"
	// CodeNamespaceNotEnabled: its namespace is not opted in (any more): released.
	CodeNamespaceNotEnabled ReasonCode = "NamespaceNotEnabled"
)

// Reason is why a pod waits or was admitted. Message is the one canonical sentence for
// it, shared by events, the kubectl plugin and /debug/queues.
type Reason struct {
	Code    ReasonCode `json:"code"`
	Message string     `json:"message"`
}

// waitInfo is what the core remembers about why a pod waits; WaitReason turns it into
// a message with the numbers of the moment.
type waitInfo struct {
	code      ReasonCode
	budget    *budget
	resource  corev1.ResourceName
	requested amount.Amount
	ahead     PodRef
	have      int
	want      int
	// family: CodeNeverFits because the budgets under budget lend less than it needs.
	family bool
	// unset: CodeMustSpecify's "must specify ..." (ahead names the group member).
	unset string
	// detail: CodeNoFlavor's sentence (flavorIndex).
	detail string
	// anyFlavor: it waits for room on any of several flavors, so an event in any
	// budget that covers it may let it in (wakeable retries it).
	anyFlavor bool
	// flavor is the flavor it waits on ("" for none), and reach the flavors it would be
	// charged on there: what it claims of its family, and counts as when pods wait for
	// room being made, is on them (podState.waitUsage).
	flavor string
	reach  []string
	// preempt: pods would be evicted to make room for it, once it has waited its
	// preemption cooldown (preemptions.cooldownOf); reported as CodePreemptionPending.
	preempt preemptPending
}

// parks reports whether the reason keeps a pod parked (out of the queues).
func (w *waitInfo) parks() bool {
	switch w.code {
	case CodeNeverFits, CodeMustSpecify, CodeGroupIncomplete, CodeGroupInvalid, CodeUncovered, CodeClaimPending, CodeUncountable, CodeNamespaceUnknown,
		CodeStartLater, CodeStartInvalid, CodeDependencyPending, CodeDependencyFailed, CodeDependencyCycle, CodeDependencyInvalid,
		CodePodGroupPending, CodeGroupPartIncomplete:
		return true
	}
	return false
}

// reported is the code a wait is reported with: its own, or PreemptionPending while
// pods would be evicted for it once its cooldown ends.
func (w *waitInfo) reported() ReasonCode {
	if !w.preempt.at.IsZero() && (w.code == CodeInsufficient || w.code == CodeNoLendable) {
		return CodePreemptionPending
	}
	return w.code
}
