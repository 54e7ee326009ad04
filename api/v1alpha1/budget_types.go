package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// QueueingStrategy says what happens to the pods behind a queue head that does not fit.
// +kubebuilder:validation:Enum=StrictFIFO;BestEffortFIFO
type QueueingStrategy string

const (
	// StrictFIFO: a head that does not fit blocks every pod behind it.
	StrictFIFO QueueingStrategy = "StrictFIFO"
	// BestEffortFIFO: pods behind a head that does not fit are admitted if they fit.
	BestEffortFIFO QueueingStrategy = "BestEffortFIFO"
)

// ReclaimPolicy says which pods a budget may evict to get back the quota it lent.
// +kubebuilder:validation:Enum=Any;LowerPriority;Never
type ReclaimPolicy string

const (
	// ReclaimAny takes lent quota back from any pod of a budget that borrows it.
	ReclaimAny ReclaimPolicy = "Any"
	// ReclaimLowerPriority takes it back only from pods of lower priority than the pod
	// that needs it.
	ReclaimLowerPriority ReclaimPolicy = "LowerPriority"
	// ReclaimNever never evicts: lent quota returns as the borrowing pods end.
	ReclaimNever ReclaimPolicy = "Never"
)

// WithinBudgetPolicy says whether a pod that does not fit may evict pods of its own
// budget.
// +kubebuilder:validation:Enum=Never;LowerPriority
type WithinBudgetPolicy string

const (
	// WithinBudgetNever never evicts a pod of the same budget.
	WithinBudgetNever WithinBudgetPolicy = "Never"
	// WithinBudgetLowerPriority evicts admitted pods of lower priority of the same
	// budget to make room.
	WithinBudgetLowerPriority WithinBudgetPolicy = "LowerPriority"
)

// Preemption says when quotagate evicts admitted pods to make room for a gated one.
// Eviction goes through the Eviction API, so PodDisruptionBudgets are honoured.
type Preemption struct {
	// Reclaim: which pods of the budgets that borrow under the same parent this budget
	// may evict when one of its pods needs its guaranteed share (hard) back. Any by
	// default; it matters only in a family where some budget has a borrowingLimit.
	// +optional
	// +kubebuilder:default=Any
	Reclaim ReclaimPolicy `json:"reclaim,omitempty"`

	// WithinBudget: LowerPriority lets a pod that does not fit evict admitted pods of
	// lower priority of this budget; Never (the default) does not.
	// +optional
	// +kubebuilder:default=Never
	WithinBudget WithinBudgetPolicy `json:"withinBudget,omitempty"`

	// BlockedTimeout: how long an eviction this budget's waiting pod needs may be
	// refused by the victim's PodDisruptionBudget, when no other victim would do,
	// before quotagate deletes the victim despite it (a Go duration: "90s", "10m").
	// Unset: wait for as long as the PodDisruptionBudget refuses, never force. It is
	// the choice of the budget whose pods wait: for a reclaim, the lender whose hard is
	// taken back (docs/budgets.md, "When a PodDisruptionBudget refuses").
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	BlockedTimeout *metav1.Duration `json:"blockedTimeout,omitempty"`
}

// FairSharing is a budget's weight when the budgets under one parent compete for what
// they may borrow: the one whose borrowing would be the smallest share of what the
// family lends, divided by its weight, goes first.
type FairSharing struct {
	// Weight: 2 borrows twice as much as a sibling of weight 1 before it yields to it;
	// 0 borrows only what no sibling of positive weight waits for. 1 when unset.
	// +optional
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity('0')) >= 0",message="weight must not be negative"
	Weight *resource.Quantity `json:"weight,omitempty"`

	// UsageHalfLife, on a parent, ranks the budgets under it also by what they used:
	// each one's share adds what its pods used, decayed with this half-life, as a share
	// of what the family would use lending all it lends for as long (docs/budgets.md,
	// "Fair sharing with memory"). A budget that ran the whole family's lendable quota
	// all night competes next morning as if it still borrowed most of it. Unset: shares
	// are of the current use alone.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$') || duration(self) >= duration('1m')",message="usageHalfLife must be at least 1m"
	UsageHalfLife *metav1.Duration `json:"usageHalfLife,omitempty"`
}

// BudgetState is the desired (spec) or effective (status) state of a budget.
type BudgetState string

const (
	// StateOpen admits pods that fit.
	StateOpen BudgetState = "Open"
	// StateClosing admits nothing; pods it admitted earlier are still running.
	StateClosing BudgetState = "Closing"
	// StateClosed admits nothing, and no pod it admitted is still running.
	StateClosed BudgetState = "Closed"
)

// PodConditionAdmitted is the condition the manager keeps on a gated pod that waits
// at the head of a budget's queue (or waited there): status False, the code of why it
// waits as its reason (InsufficientQuota, BudgetClosed, ...) and the sentence as its
// message, without the queue position. It is removed once the pod is admitted.
const PodConditionAdmitted corev1.PodConditionType = "quotagate.io/Admitted"

// Condition types and reasons written to budget status.
const (
	// ConditionReady is True when the budget is valid and admitting by its rules.
	ConditionReady = "Ready"

	ReasonActive         = "Active"
	ReasonClosed         = "Closed"
	ReasonClosedByParent = "ClosedByParent"
	ReasonParentNotFound = "ParentNotFound"
	ReasonParentCycle    = "ParentCycle"
	// ReasonFlavorNotFound: a Flavor of spec.flavors does not exist. The budget admits
	// nothing until it is created (or removed from spec.flavors).
	ReasonFlavorNotFound = "FlavorNotFound"
	ReasonInvalidSpec    = "InvalidSpec"
	// ReasonInvalidSelector: a selector does not parse (it got past an older CRD without
	// the validation rules). The budget admits nothing and holds every pod it might cover.
	ReasonInvalidSelector = "InvalidSelector"

	// ConditionPodsNeverFit is True when some gated pod requests more than hard allows,
	// or leaves unset a value hard tracks that ResourceQuota requires every container
	// to set (requests or limits of cpu or memory), so it can never be admitted while
	// hard stays as it is.
	ConditionPodsNeverFit = "PodsNeverFit"

	ReasonRequestsExceedHard = "RequestsExceedHard"
	// ReasonMustSpecifyResources: every pod the condition lists leaves unset a value
	// hard tracks (none requests more than hard).
	ReasonMustSpecifyResources = "MustSpecifyResources"
	ReasonAllPodsCanFit        = "AllPodsCanFit"
)

// BudgetSpec is the common spec of Budget and ClusterBudget.
type BudgetSpec struct {
	// Hard is the limit per resource, with ResourceQuota's names and meanings
	// ("cpu" is "requests.cpu"; "pods" and "count/pods" count pods; DRA devices are
	// <class>.deviceclass.resource.k8s.io/devices, and requests.<extended name> for a
	// DeviceClass with spec.extendedResourceName, counted from pods' ResourceClaims).
	// Only resources named here are limited. Names that pods do not consume (services,
	// limits.nvidia.com/gpu, typos) are refused: a limit that cannot be accounted would
	// limit nothing.
	// +optional
	// +kubebuilder:validation:MaxProperties=24
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['pods', 'count/pods', 'cpu', 'memory', 'ephemeral-storage', 'requests.cpu', 'requests.memory', 'requests.ephemeral-storage', 'limits.cpu', 'limits.memory', 'limits.ephemeral-storage'] || k.matches('^(requests[.])?hugepages-[0-9]+([KMGTPE]i|[kMGTPE])?$') || k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*[.]deviceclass[.]resource[.]k8s[.]io/devices$') || k.matches('^requests[.]deviceclass[.]resource[.]kubernetes[.]io/[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$') || (k.matches('^(requests[.])?[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && !k.startsWith('limits.') && !k.matches('^(requests[.])?count/') && !k.contains('kubernetes.io/') && !k.matches('(^|[.])k8s[.]io/')))",messageExpression="'unsupported resource name in hard: ' + self.filter(k, !(k in ['pods', 'count/pods', 'cpu', 'memory', 'ephemeral-storage', 'requests.cpu', 'requests.memory', 'requests.ephemeral-storage', 'limits.cpu', 'limits.memory', 'limits.ephemeral-storage'] || k.matches('^(requests[.])?hugepages-[0-9]+([KMGTPE]i|[kMGTPE])?$') || k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*[.]deviceclass[.]resource[.]k8s[.]io/devices$') || k.matches('^requests[.]deviceclass[.]resource[.]kubernetes[.]io/[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$') || (k.matches('^(requests[.])?[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && !k.startsWith('limits.') && !k.matches('^(requests[.])?count/') && !k.contains('kubernetes.io/') && !k.matches('(^|[.])k8s[.]io/'))))[0] + ' (supported: cpu, memory, ephemeral-storage, their requests.* and limits.* forms, hugepages-<size> and requests.hugepages-<size>, extended resources as <domain>/<name> or requests.<domain>/<name> outside kubernetes.io and k8s.io, DRA devices as <class>.deviceclass.resource.k8s.io/devices or requests.deviceclass.resource.kubernetes.io/<class>, pods, count/pods)'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !string(self[k]).startsWith('-'))",message="hard quantities must not be negative"
	Hard corev1.ResourceList `json:"hard,omitempty"`

	// PodSelector narrows the budget to the pods it matches. Unset or empty: every pod.
	// The API server refuses operators other than In, NotIn, Exists and DoesNotExist, In
	// and NotIn without values, Exists and DoesNotExist with values, and keys and values
	// of impossible lengths; the manager's own parse catches the rest of the label
	// syntax (see docs/validation.md).
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="matchExpressions: operator must be In, NotIn, Exists or DoesNotExist"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, !(e.operator in ['In', 'NotIn']) || (has(e.values) && size(e.values) > 0))",message="matchExpressions: operators In and NotIn need at least one value"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, !(e.operator in ['Exists', 'DoesNotExist']) || !has(e.values) || size(e.values) == 0)",message="matchExpressions: operators Exists and DoesNotExist take no values"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, size(e.key) > 0 && size(e.key) <= 317)",message="matchExpressions: key must be a label key: 1 to 317 characters, an optional DNS subdomain prefix and '/', then a name of at most 63"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchLabels) || self.matchLabels.all(k, size(k) > 0 && size(k) <= 317 && size(self.matchLabels[k]) <= 63)",message="matchLabels: keys must be label keys (1 to 317 characters) and values label values (at most 63 characters)"
	PodSelector *metav1.LabelSelector `json:"podSelector,omitempty"`

	// BorrowingLimit lets this budget use more than hard, per resource, by borrowing
	// what the other budgets under the same parent do not use: at most this much more.
	// Names as in hard. Unset, or a resource it does not name: no borrowing. It has no
	// effect without a parent. A sibling that needs its lent capacity back may evict
	// this budget's pods beyond hard (preemption.reclaim; docs/budgets.md, "Borrowing").
	// +optional
	// +kubebuilder:validation:MaxProperties=24
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['pods', 'count/pods', 'cpu', 'memory', 'ephemeral-storage', 'requests.cpu', 'requests.memory', 'requests.ephemeral-storage', 'limits.cpu', 'limits.memory', 'limits.ephemeral-storage'] || k.matches('^(requests[.])?hugepages-[0-9]+([KMGTPE]i|[kMGTPE])?$') || k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*[.]deviceclass[.]resource[.]k8s[.]io/devices$') || k.matches('^requests[.]deviceclass[.]resource[.]kubernetes[.]io/[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$') || (k.matches('^(requests[.])?[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && !k.startsWith('limits.') && !k.matches('^(requests[.])?count/') && !k.contains('kubernetes.io/') && !k.matches('(^|[.])k8s[.]io/')))",messageExpression="'unsupported resource name in borrowingLimit: ' + self.filter(k, !(k in ['pods', 'count/pods', 'cpu', 'memory', 'ephemeral-storage', 'requests.cpu', 'requests.memory', 'requests.ephemeral-storage', 'limits.cpu', 'limits.memory', 'limits.ephemeral-storage'] || k.matches('^(requests[.])?hugepages-[0-9]+([KMGTPE]i|[kMGTPE])?$') || k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*[.]deviceclass[.]resource[.]k8s[.]io/devices$') || k.matches('^requests[.]deviceclass[.]resource[.]kubernetes[.]io/[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$') || (k.matches('^(requests[.])?[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && !k.startsWith('limits.') && !k.matches('^(requests[.])?count/') && !k.contains('kubernetes.io/') && !k.matches('(^|[.])k8s[.]io/'))))[0] + ' (supported: cpu, memory, ephemeral-storage, their requests.* and limits.* forms, hugepages-<size> and requests.hugepages-<size>, extended resources as <domain>/<name> or requests.<domain>/<name> outside kubernetes.io and k8s.io, DRA devices as <class>.deviceclass.resource.k8s.io/devices or requests.deviceclass.resource.kubernetes.io/<class>, pods, count/pods)'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !string(self[k]).startsWith('-'))",message="borrowingLimit quantities must not be negative"
	BorrowingLimit corev1.ResourceList `json:"borrowingLimit,omitempty"`

	// LendingLimit is how much of hard, per resource, the other budgets under the same
	// parent may borrow while this budget does not use it; the rest is kept for its own
	// pods. Names as in hard. Unset, or a resource it does not name: all of hard may be
	// lent (to budgets that have a borrowingLimit).
	// +optional
	// +kubebuilder:validation:MaxProperties=24
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['pods', 'count/pods', 'cpu', 'memory', 'ephemeral-storage', 'requests.cpu', 'requests.memory', 'requests.ephemeral-storage', 'limits.cpu', 'limits.memory', 'limits.ephemeral-storage'] || k.matches('^(requests[.])?hugepages-[0-9]+([KMGTPE]i|[kMGTPE])?$') || k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*[.]deviceclass[.]resource[.]k8s[.]io/devices$') || k.matches('^requests[.]deviceclass[.]resource[.]kubernetes[.]io/[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$') || (k.matches('^(requests[.])?[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && !k.startsWith('limits.') && !k.matches('^(requests[.])?count/') && !k.contains('kubernetes.io/') && !k.matches('(^|[.])k8s[.]io/')))",messageExpression="'unsupported resource name in lendingLimit: ' + self.filter(k, !(k in ['pods', 'count/pods', 'cpu', 'memory', 'ephemeral-storage', 'requests.cpu', 'requests.memory', 'requests.ephemeral-storage', 'limits.cpu', 'limits.memory', 'limits.ephemeral-storage'] || k.matches('^(requests[.])?hugepages-[0-9]+([KMGTPE]i|[kMGTPE])?$') || k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*[.]deviceclass[.]resource[.]k8s[.]io/devices$') || k.matches('^requests[.]deviceclass[.]resource[.]kubernetes[.]io/[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$') || (k.matches('^(requests[.])?[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && !k.startsWith('limits.') && !k.matches('^(requests[.])?count/') && !k.contains('kubernetes.io/') && !k.matches('(^|[.])k8s[.]io/'))))[0] + ' (supported: cpu, memory, ephemeral-storage, their requests.* and limits.* forms, hugepages-<size> and requests.hugepages-<size>, extended resources as <domain>/<name> or requests.<domain>/<name> outside kubernetes.io and k8s.io, DRA devices as <class>.deviceclass.resource.k8s.io/devices or requests.deviceclass.resource.kubernetes.io/<class>, pods, count/pods)'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !string(self[k]).startsWith('-'))",message="lendingLimit quantities must not be negative"
	LendingLimit corev1.ResourceList `json:"lendingLimit,omitempty"`

	// Flavors is the quota per flavor (a Flavor object each: a kind of node), in the
	// order pods try them. A pod that selects one flavor's node labels is charged to
	// that flavor; any other pod gets the first flavor, in this order, that has room,
	// and quotagate adds the flavor's node labels and tolerations to it as it removes
	// the gate. hard still caps the budget's total over all flavors (docs/budgets.md,
	// "Flavors").
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Flavors []FlavorQuota `json:"flavors,omitempty"`

	// FlavorFungibility says how a pod moves between the flavors. Unset: it takes the
	// next flavor when one is full, and the first it fits in by borrowing.
	// +optional
	FlavorFungibility *FlavorFungibility `json:"flavorFungibility,omitempty"`

	// Preemption says when quotagate evicts admitted pods to make room for this
	// budget's gated pods (docs/budgets.md, "Preemption"). Unset: it takes back
	// quota it lent (reclaim: Any), and never evicts its own pods.
	// +optional
	Preemption *Preemption `json:"preemption,omitempty"`

	// FairSharing weighs this budget against the others under the same parent when
	// they compete for quota to borrow (docs/budgets.md, "Fair sharing").
	// +optional
	FairSharing *FairSharing `json:"fairSharing,omitempty"`

	// Parent names a ClusterBudget that every pod admitted here must also fit in.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Parent string `json:"parent,omitempty"`

	// QueueingStrategy orders admission when the queue head does not fit.
	// +optional
	// +kubebuilder:default=BestEffortFIFO
	QueueingStrategy QueueingStrategy `json:"queueingStrategy,omitempty"`

	// State is the desired state: Open admits, Closed stops new admissions.
	// +optional
	// +kubebuilder:default=Open
	// +kubebuilder:validation:Enum=Open;Closed
	State BudgetState `json:"state,omitempty"`

	// Start holds every gated pod this budget covers (and, for a ClusterBudget, every
	// pod of the budgets under it) until a time, or to the windows of a schedule: they
	// wait behind the gate, uncharged, and are then admitted in their usual order
	// (docs/start-control.md).
	// +optional
	Start *StartRule `json:"start,omitempty"`

	// UsageLimits caps what the budget's pods use over time, in resource-hours per
	// period ("1,000 GPU-hours a month"), beside hard, which caps what they use at once
	// (docs/budgets.md, "Hour budgets").
	// +optional
	UsageLimits *UsageLimits `json:"usageLimits,omitempty"`
}

// BudgetStatus is the observed state of a Budget or ClusterBudget.
type BudgetStatus struct {
	// State is the effective state: Open, Closing or Closed.
	// +optional
	// +kubebuilder:validation:Enum=Open;Closing;Closed
	State BudgetState `json:"state,omitempty"`

	// Hard is the limit being enforced.
	// +optional
	Hard corev1.ResourceList `json:"hard,omitempty"`

	// Used is the sum of the requests of admitted, non-terminal pods (for a parent,
	// the pods of its whole subtree).
	// +optional
	Used corev1.ResourceList `json:"used,omitempty"`

	// Borrowed is what this budget uses beyond hard, per resource, by borrowing from
	// the budgets under the same parent (see spec.borrowingLimit).
	// +optional
	Borrowed corev1.ResourceList `json:"borrowed,omitempty"`

	// Lent is the part of hard, per resource, that budgets under the same parent use
	// by borrowing while this budget does not: what they borrow is attributed to the
	// lenders in proportion to what each leaves unused of what it lends.
	// +optional
	Lent corev1.ResourceList `json:"lent,omitempty"`

	// Pending is the sum of the requests of pods still gated on this budget.
	// +optional
	Pending corev1.ResourceList `json:"pending,omitempty"`

	// AdmittedPods counts admitted, non-terminal pods charged to this budget.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	AdmittedPods int32 `json:"admittedPods"`

	// GatedPods counts pods still waiting on this budget.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	GatedPods int32 `json:"gatedPods"`

	// Flavors is what the budget holds and uses per flavor, in the order of
	// spec.flavors.
	// +optional
	// +listType=map
	// +listMapKey=name
	Flavors []FlavorStatus `json:"flavors,omitempty"`

	// Conditions say whether the budget is working, and why not.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the generation this status was computed from.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// ActiveWindows names the windows (BudgetWindows, or ClusterBudgetWindows for a
	// ClusterBudget) open now, the one that wins first; while one is open, hard and
	// state above are the ones it sets (docs/budgets.md, "Windows").
	// +optional
	// +listType=atomic
	ActiveWindows []string `json:"activeWindows,omitempty"`

	// NextWindowChange is when a window of this budget next opens or closes.
	// +optional
	NextWindowChange *metav1.Time `json:"nextWindowChange,omitempty"`

	// ReclaimingAfterWindow names the window with endPolicy Reclaim whose end the
	// budget is still evicting back to its hard from; unset once it is within. A
	// manager that starts while it is set resumes the reclaim (docs/budgets.md, "When a
	// window ends").
	// +optional
	ReclaimingAfterWindow string `json:"reclaimingAfterWindow,omitempty"`

	// Usage is what the budget's pods have used of spec.usageLimits.hours.
	// +optional
	Usage *UsageStatus `json:"usage,omitempty"`

	// FairSharing is, when the budget's parent sets fairSharing.usageHalfLife, what
	// its pods used, decayed, and the share that adds.
	// +optional
	FairSharing *FairSharingStatus `json:"fairSharing,omitempty"`
}

// Budget limits the pods of its own namespace. Pods over it are queued, not refused.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bdg;budgets,categories=quotagate
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Admitted",type=integer,JSONPath=`.status.admittedPods`
// +kubebuilder:printcolumn:name="Gated",type=integer,JSONPath=`.status.gatedPods`
// +kubebuilder:printcolumn:name="Parent",type=string,JSONPath=`.spec.parent`,priority=1
// +kubebuilder:printcolumn:name="Borrowed",type=string,JSONPath=`.status.borrowed`,priority=1
// +kubebuilder:printcolumn:name="Lent",type=string,JSONPath=`.status.lent`,priority=1
// +kubebuilder:printcolumn:name="Windows",type=string,JSONPath=`.status.activeWindows`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Budget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BudgetSpec   `json:"spec,omitempty"`
	Status BudgetStatus `json:"status,omitempty"`
}

// BudgetList is a list of Budgets.
//
// +kubebuilder:object:root=true
type BudgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Budget `json:"items"`
}

// ClusterBudgetSpec is the spec of a ClusterBudget.
// +kubebuilder:validation:XValidation:rule="!has(self.podSelector) || has(self.namespaceSelector)",message="podSelector needs namespaceSelector: it narrows the pods of the selected namespaces, and a ClusterBudget without namespaceSelector covers exactly the pods of the budgets that name it as parent"
type ClusterBudgetSpec struct {
	BudgetSpec `json:",inline"`

	// NamespaceSelector chooses the namespaces whose pods this budget covers directly.
	// Unset: it covers pods only through the budgets that name it as parent.
	// Empty ({}): every namespace. Validated like podSelector.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="matchExpressions: operator must be In, NotIn, Exists or DoesNotExist"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, !(e.operator in ['In', 'NotIn']) || (has(e.values) && size(e.values) > 0))",message="matchExpressions: operators In and NotIn need at least one value"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, !(e.operator in ['Exists', 'DoesNotExist']) || !has(e.values) || size(e.values) == 0)",message="matchExpressions: operators Exists and DoesNotExist take no values"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, size(e.key) > 0 && size(e.key) <= 317)",message="matchExpressions: key must be a label key: 1 to 317 characters, an optional DNS subdomain prefix and '/', then a name of at most 63"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchLabels) || self.matchLabels.all(k, size(k) > 0 && size(k) <= 317 && size(self.matchLabels[k]) <= 63)",message="matchLabels: keys must be label keys (1 to 317 characters) and values label values (at most 63 characters)"
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
}

// ClusterBudget limits pods across namespaces, and is the parent other budgets name.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=cbdg,categories=quotagate
// +kubebuilder:validation:XValidation:rule="!has(self.spec) || !has(self.spec.parent) || self.spec.parent != self.metadata.name",message="a ClusterBudget cannot name itself as parent"
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Admitted",type=integer,JSONPath=`.status.admittedPods`
// +kubebuilder:printcolumn:name="Gated",type=integer,JSONPath=`.status.gatedPods`
// +kubebuilder:printcolumn:name="Parent",type=string,JSONPath=`.spec.parent`,priority=1
// +kubebuilder:printcolumn:name="Borrowed",type=string,JSONPath=`.status.borrowed`,priority=1
// +kubebuilder:printcolumn:name="Lent",type=string,JSONPath=`.status.lent`,priority=1
// +kubebuilder:printcolumn:name="Windows",type=string,JSONPath=`.status.activeWindows`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterBudget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterBudgetSpec `json:"spec,omitempty"`
	Status BudgetStatus      `json:"status,omitempty"`
}

// ClusterBudgetList is a list of ClusterBudgets.
//
// +kubebuilder:object:root=true
type ClusterBudgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterBudget `json:"items"`
}
