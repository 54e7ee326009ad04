package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
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

// Condition types and reasons written to budget status.
const (
	// ConditionReady is True when the budget is valid and admitting by its rules.
	ConditionReady = "Ready"

	ReasonActive         = "Active"
	ReasonClosed         = "Closed"
	ReasonClosedByParent = "ClosedByParent"
	ReasonParentNotFound = "ParentNotFound"
	ReasonParentCycle    = "ParentCycle"
	ReasonInvalidSpec    = "InvalidSpec"

	// ConditionPodsNeverFit is True when some gated pod requests more than hard allows,
	// so it can never be admitted while hard stays as it is.
	ConditionPodsNeverFit = "PodsNeverFit"

	ReasonRequestsExceedHard = "RequestsExceedHard"
	ReasonAllPodsCanFit      = "AllPodsCanFit"
)

// BudgetSpec is the common spec of Budget and ClusterBudget.
type BudgetSpec struct {
	// Hard is the limit per resource, with ResourceQuota's names and meanings
	// ("cpu" is "requests.cpu"; "pods" and "count/pods" count pods).
	// Only resources named here are limited.
	// +optional
	// +kubebuilder:validation:MaxProperties=24
	// +kubebuilder:validation:XValidation:rule="self.all(k, !string(self[k]).startsWith('-'))",message="hard quantities must not be negative"
	Hard corev1.ResourceList `json:"hard,omitempty"`

	// PodSelector narrows the budget to the pods it matches. Unset or empty: every pod.
	// +optional
	PodSelector *metav1.LabelSelector `json:"podSelector,omitempty"`

	// Parent names a ClusterBudget that every pod admitted here must also fit in.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
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
}

// BudgetStatus is the observed state of a Budget or ClusterBudget.
type BudgetStatus struct {
	// State is the effective state: Open, Closing or Closed.
	// +optional
	State BudgetState `json:"state,omitempty"`

	// Hard is the limit being enforced.
	// +optional
	Hard corev1.ResourceList `json:"hard,omitempty"`

	// Used is the sum of the requests of admitted, non-terminal pods (for a parent,
	// the pods of its whole subtree).
	// +optional
	Used corev1.ResourceList `json:"used,omitempty"`

	// Pending is the sum of the requests of pods still gated on this budget.
	// +optional
	Pending corev1.ResourceList `json:"pending,omitempty"`

	// AdmittedPods counts admitted, non-terminal pods charged to this budget.
	// +optional
	// +kubebuilder:default=0
	AdmittedPods int32 `json:"admittedPods"`

	// GatedPods counts pods still waiting on this budget.
	// +optional
	// +kubebuilder:default=0
	GatedPods int32 `json:"gatedPods"`

	// Conditions say whether the budget is working, and why not.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the generation this status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
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
type ClusterBudgetSpec struct {
	BudgetSpec `json:",inline"`

	// NamespaceSelector chooses the namespaces whose pods this budget covers directly.
	// Unset: it covers pods only through the budgets that name it as parent.
	// Empty ({}): every namespace.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
}

// ClusterBudget limits pods across namespaces, and is the parent other budgets name.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=cbdg,categories=quotagate
// +kubebuilder:validation:XValidation:rule="!has(self.spec.parent) || self.spec.parent != self.metadata.name",message="a ClusterBudget cannot name itself as parent"
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Admitted",type=integer,JSONPath=`.status.admittedPods`
// +kubebuilder:printcolumn:name="Gated",type=integer,JSONPath=`.status.gatedPods`
// +kubebuilder:printcolumn:name="Parent",type=string,JSONPath=`.spec.parent`,priority=1
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
