package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FlavorSpec is a kind of node: the labels its nodes carry, and the taints they carry
// as the tolerations a pod needs to run there.
type FlavorSpec struct {
	// NodeLabels are the labels that make a node of this flavor. quotagate adds them to
	// a pod's spec.nodeSelector when it admits the pod on this flavor, in the patch that
	// removes the gate. 1 to 8 labels. The API server checks the lengths of keys and
	// values, as in podSelector's matchLabels; their syntax would cost more CEL than a
	// CRD may spend on keys of unbounded length. Immutable: running pods carry them, and
	// a restarted manager finds a pod's flavor by them.
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=8
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) > 0 && size(k) <= 317 && size(self[k]) <= 63)",message="nodeLabels: keys must be label keys (1 to 317 characters) and values label values (at most 63 characters)"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="nodeLabels are immutable: pods admitted on this flavor carry them; create a Flavor with the new labels and name it in the budgets instead"
	NodeLabels map[string]string `json:"nodeLabels"`

	// Tolerations are added to a pod with the labels: the taints this flavor's nodes
	// carry. At most 8. Changing them applies to the pods admitted afterwards.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(t, !has(t.operator) || t.operator in ['Exists', 'Equal'])",message="tolerations: operator must be Exists or Equal"
	// +kubebuilder:validation:XValidation:rule="self.all(t, !has(t.effect) || t.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="tolerations: effect must be NoSchedule, PreferNoSchedule or NoExecute"
	// +kubebuilder:validation:XValidation:rule="self.all(t, (has(t.key) && t.key != '') || (has(t.operator) && t.operator == 'Exists'))",message="tolerations: an empty key needs operator Exists"
	// +kubebuilder:validation:XValidation:rule="self.all(t, !has(t.operator) || t.operator != 'Exists' || !has(t.value) || t.value == '')",message="tolerations: operator Exists takes no value"
	// +kubebuilder:validation:XValidation:rule="self.all(t, !has(t.tolerationSeconds) || (has(t.effect) && t.effect == 'NoExecute'))",message="tolerations: tolerationSeconds needs effect NoExecute"
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
}

// Flavor is a kind of node that budgets hold quota for (spec.flavors): a GPU model, spot
// or on-demand, a node pool. quotagate admits a pod on one of its budgets' flavors and
// adds the flavor's node labels and tolerations to the pod as it removes the gate.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=flv,categories=quotagate
// +kubebuilder:printcolumn:name="Labels",type=string,JSONPath=`.spec.nodeLabels`
// +kubebuilder:printcolumn:name="Nested",type=string,JSONPath=`.status.conditions[?(@.type=="Nested")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Flavor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec FlavorSpec `json:"spec"`
	// +optional
	Status FlavorObjectStatus `json:"status,omitempty"`
}

// FlavorObjectStatus is what quotagate's manager reports of a Flavor (FlavorStatus is
// what a budget holds and uses of one).
type FlavorObjectStatus struct {
	// Conditions: Nested is True when the nodes of this Flavor and of another may be the
	// same nodes because one's labels contain the other's (gpu: {pool: gpu} and
	// gpu-spot: {pool: gpu, spot: "true"}): a pod that can run on the narrower one is
	// charged on both, and a pod on the wider one is charged on the narrower one too
	// unless its taints keep the pod off. Give the wider Flavor a label the narrower's
	// nodes do not have (spot: "false"), or the narrower one a taint.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// FlavorNested is the Flavor condition that says it is nested with others.
const FlavorNested = "Nested"

// Reasons of the Nested condition.
const (
	ReasonContainsFlavors = "ContainsFlavors"
	ReasonNestedIn        = "NestedIn"
	ReasonNotNested       = "NotNested"
)

// FlavorList is a list of Flavors.
//
// +kubebuilder:object:root=true
type FlavorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Flavor `json:"items"`
}

// FlavorWhenFull says what a pod does when the first flavor it may use is full.
// +kubebuilder:validation:Enum=TryNextFlavor;WaitForPreferred
type FlavorWhenFull string

// FlavorWhenCanBorrow says whether a pod stops at the first flavor it fits in by
// borrowing.
// +kubebuilder:validation:Enum=Borrow;TryNextFlavor
type FlavorWhenCanBorrow string

// FlavorWhenCanPreempt says whether a pod stops at the first flavor where preempting
// would make room for it.
// +kubebuilder:validation:Enum=Preempt;TryNextFlavor
type FlavorWhenCanPreempt string

// FlavorTryNext is a value of whenFull, whenCanBorrow and whenCanPreempt, so it is
// untyped: move on to the next flavor of the budget's spec.flavors.
const FlavorTryNext = "TryNextFlavor"

const (
	// FlavorWaitForPreferred (whenFull): wait for the first flavor the pod may use
	// rather than take a later one.
	FlavorWaitForPreferred FlavorWhenFull = "WaitForPreferred"
	// FlavorBorrow (whenCanBorrow): take the first flavor the pod fits in, by
	// borrowing if it must.
	FlavorBorrow FlavorWhenCanBorrow = "Borrow"
	// FlavorPreempt (whenCanPreempt): stop at the first flavor where the pod fits, or
	// where preempting would make room for it, and preempt there.
	FlavorPreempt FlavorWhenCanPreempt = "Preempt"
)

// FlavorFungibility is how a pod moves between its budget's flavors.
type FlavorFungibility struct {
	// WhenFull: TryNextFlavor (the default) gives a pod the next flavor of
	// spec.flavors when one is full; WaitForPreferred keeps it waiting for the first
	// flavor it may use.
	// +optional
	// +kubebuilder:default=TryNextFlavor
	WhenFull FlavorWhenFull `json:"whenFull,omitempty"`

	// WhenCanBorrow: Borrow (the default) stops at the first flavor where the pod fits,
	// by borrowing if it must; TryNextFlavor prefers a later flavor where it fits
	// without borrowing, and borrows only when none does.
	// +optional
	// +kubebuilder:default=Borrow
	WhenCanBorrow FlavorWhenCanBorrow `json:"whenCanBorrow,omitempty"`

	// WhenCanPreempt: TryNextFlavor (the default) gives a pod a later flavor where it
	// fits before preempting anybody, and preempts, when it fits in none, on the first
	// flavor where that makes room; Preempt stops at the first flavor where the pod
	// fits or preempting makes room, and preempts there rather than take a later one.
	// Which pods may be preempted is the budgets' spec.preemption (reclaim, withinBudget).
	// +optional
	// +kubebuilder:default=TryNextFlavor
	WhenCanPreempt FlavorWhenCanPreempt `json:"whenCanPreempt,omitempty"`
}

// FlavorQuota is a budget's quota on one flavor: what the pods it admits on that flavor
// may use. Names and quantities are as in the budget's hard, borrowingLimit and
// lendingLimit.
//
// The rules on the names are the budget's (AccountableNameCEL). The rule on negative
// quantities tests the string or the number without string(): the API server estimates
// string() of a quantity at the size of a whole request, and the spec.hard rule, times 16
// flavors, would exceed its budget for CEL.
type FlavorQuota struct {
	// Name is a Flavor's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// Hard is the limit per resource of the pods admitted on this flavor. Only resources
	// named here are limited on it; the budget's own hard still caps its total over all
	// flavors.
	// +optional
	// +kubebuilder:validation:MaxProperties=24
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['pods', 'count/pods', 'cpu', 'memory', 'ephemeral-storage', 'requests.cpu', 'requests.memory', 'requests.ephemeral-storage', 'limits.cpu', 'limits.memory', 'limits.ephemeral-storage'] || k.matches('^(requests[.])?hugepages-[0-9]+([KMGTPE]i|[kMGTPE])?$') || k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*[.]deviceclass[.]resource[.]k8s[.]io/devices$') || k.matches('^requests[.]deviceclass[.]resource[.]kubernetes[.]io/[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$') || (k.matches('^(requests[.])?[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && !k.startsWith('limits.') && !k.matches('^(requests[.])?count/') && !k.contains('kubernetes.io/') && !k.matches('(^|[.])k8s[.]io/')))",messageExpression="'unsupported resource name in hard: ' + self.filter(k, !(k in ['pods', 'count/pods', 'cpu', 'memory', 'ephemeral-storage', 'requests.cpu', 'requests.memory', 'requests.ephemeral-storage', 'limits.cpu', 'limits.memory', 'limits.ephemeral-storage'] || k.matches('^(requests[.])?hugepages-[0-9]+([KMGTPE]i|[kMGTPE])?$') || k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*[.]deviceclass[.]resource[.]k8s[.]io/devices$') || k.matches('^requests[.]deviceclass[.]resource[.]kubernetes[.]io/[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$') || (k.matches('^(requests[.])?[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && !k.startsWith('limits.') && !k.matches('^(requests[.])?count/') && !k.contains('kubernetes.io/') && !k.matches('(^|[.])k8s[.]io/'))))[0] + ' (supported: cpu, memory, ephemeral-storage, their requests.* and limits.* forms, hugepages-<size> and requests.hugepages-<size>, extended resources as <domain>/<name> or requests.<domain>/<name> outside kubernetes.io and k8s.io, DRA devices as <class>.deviceclass.resource.k8s.io/devices or requests.deviceclass.resource.kubernetes.io/<class>, pods, count/pods)'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, type(self[k]) == string ? !self[k].startsWith('-') : self[k] >= 0)",message="hard quantities must not be negative"
	Hard corev1.ResourceList `json:"hard,omitempty"`

	// BorrowingLimit is how much more than this flavor's hard the budget may use on it
	// by borrowing, as spec.borrowingLimit is for the budget's hard.
	// +optional
	// +kubebuilder:validation:MaxProperties=24
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['pods', 'count/pods', 'cpu', 'memory', 'ephemeral-storage', 'requests.cpu', 'requests.memory', 'requests.ephemeral-storage', 'limits.cpu', 'limits.memory', 'limits.ephemeral-storage'] || k.matches('^(requests[.])?hugepages-[0-9]+([KMGTPE]i|[kMGTPE])?$') || k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*[.]deviceclass[.]resource[.]k8s[.]io/devices$') || k.matches('^requests[.]deviceclass[.]resource[.]kubernetes[.]io/[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$') || (k.matches('^(requests[.])?[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && !k.startsWith('limits.') && !k.matches('^(requests[.])?count/') && !k.contains('kubernetes.io/') && !k.matches('(^|[.])k8s[.]io/')))",messageExpression="'unsupported resource name in borrowingLimit: ' + self.filter(k, !(k in ['pods', 'count/pods', 'cpu', 'memory', 'ephemeral-storage', 'requests.cpu', 'requests.memory', 'requests.ephemeral-storage', 'limits.cpu', 'limits.memory', 'limits.ephemeral-storage'] || k.matches('^(requests[.])?hugepages-[0-9]+([KMGTPE]i|[kMGTPE])?$') || k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*[.]deviceclass[.]resource[.]k8s[.]io/devices$') || k.matches('^requests[.]deviceclass[.]resource[.]kubernetes[.]io/[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$') || (k.matches('^(requests[.])?[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && !k.startsWith('limits.') && !k.matches('^(requests[.])?count/') && !k.contains('kubernetes.io/') && !k.matches('(^|[.])k8s[.]io/'))))[0] + ' (supported: cpu, memory, ephemeral-storage, their requests.* and limits.* forms, hugepages-<size> and requests.hugepages-<size>, extended resources as <domain>/<name> or requests.<domain>/<name> outside kubernetes.io and k8s.io, DRA devices as <class>.deviceclass.resource.k8s.io/devices or requests.deviceclass.resource.kubernetes.io/<class>, pods, count/pods)'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, type(self[k]) == string ? !self[k].startsWith('-') : self[k] >= 0)",message="borrowingLimit quantities must not be negative"
	BorrowingLimit corev1.ResourceList `json:"borrowingLimit,omitempty"`

	// LendingLimit is how much of this flavor's hard the other budgets under the same
	// parent may borrow, as spec.lendingLimit is for the budget's hard.
	// +optional
	// +kubebuilder:validation:MaxProperties=24
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['pods', 'count/pods', 'cpu', 'memory', 'ephemeral-storage', 'requests.cpu', 'requests.memory', 'requests.ephemeral-storage', 'limits.cpu', 'limits.memory', 'limits.ephemeral-storage'] || k.matches('^(requests[.])?hugepages-[0-9]+([KMGTPE]i|[kMGTPE])?$') || k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*[.]deviceclass[.]resource[.]k8s[.]io/devices$') || k.matches('^requests[.]deviceclass[.]resource[.]kubernetes[.]io/[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$') || (k.matches('^(requests[.])?[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && !k.startsWith('limits.') && !k.matches('^(requests[.])?count/') && !k.contains('kubernetes.io/') && !k.matches('(^|[.])k8s[.]io/')))",messageExpression="'unsupported resource name in lendingLimit: ' + self.filter(k, !(k in ['pods', 'count/pods', 'cpu', 'memory', 'ephemeral-storage', 'requests.cpu', 'requests.memory', 'requests.ephemeral-storage', 'limits.cpu', 'limits.memory', 'limits.ephemeral-storage'] || k.matches('^(requests[.])?hugepages-[0-9]+([KMGTPE]i|[kMGTPE])?$') || k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*[.]deviceclass[.]resource[.]k8s[.]io/devices$') || k.matches('^requests[.]deviceclass[.]resource[.]kubernetes[.]io/[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$') || (k.matches('^(requests[.])?[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && !k.startsWith('limits.') && !k.matches('^(requests[.])?count/') && !k.contains('kubernetes.io/') && !k.matches('(^|[.])k8s[.]io/'))))[0] + ' (supported: cpu, memory, ephemeral-storage, their requests.* and limits.* forms, hugepages-<size> and requests.hugepages-<size>, extended resources as <domain>/<name> or requests.<domain>/<name> outside kubernetes.io and k8s.io, DRA devices as <class>.deviceclass.resource.k8s.io/devices or requests.deviceclass.resource.kubernetes.io/<class>, pods, count/pods)'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, type(self[k]) == string ? !self[k].startsWith('-') : self[k] >= 0)",message="lendingLimit quantities must not be negative"
	LendingLimit corev1.ResourceList `json:"lendingLimit,omitempty"`
}

// FlavorStatus is what a budget holds and uses of one flavor.
type FlavorStatus struct {
	// Name is the flavor's name.
	Name string `json:"name"`

	// Hard is the limit being enforced on this flavor.
	// +optional
	Hard corev1.ResourceList `json:"hard,omitempty"`

	// Used is the sum of the requests of the admitted, non-terminal pods on this flavor.
	// +optional
	Used corev1.ResourceList `json:"used,omitempty"`

	// Borrowed is what the budget uses of this flavor beyond its hard, by borrowing.
	// +optional
	Borrowed corev1.ResourceList `json:"borrowed,omitempty"`

	// Lent is the part of this flavor's hard that budgets under the same parent borrow.
	// +optional
	Lent corev1.ResourceList `json:"lent,omitempty"`
}
