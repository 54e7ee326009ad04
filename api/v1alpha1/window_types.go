package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WindowEndPolicy says what happens to the pods running over the budget's hard when a
// window that raised it ends.
// +kubebuilder:validation:Enum=Hold;Reclaim
type WindowEndPolicy string

const (
	// WindowEndHold: running pods finish; new pods wait until used is within the hard
	// the budget has again.
	WindowEndHold WindowEndPolicy = "Hold"
	// WindowEndReclaim: at the window's end the budget evicts its running pods, the
	// lowest priority and the most recently admitted first, through the Eviction API
	// (PodDisruptionBudgets and the budget's blockedTimeout as for any preemption),
	// until used is within hard (docs/budgets.md, "When a window ends").
	WindowEndReclaim WindowEndPolicy = "Reclaim"
)

// Condition reasons of a window's Ready condition, and the events a window's start and
// end write on its budget.
const (
	// ReasonScheduled: the window is valid and its budget exists (Ready True).
	ReasonScheduled = "Scheduled"
	// ReasonUnknownTimeZone: spec.timeZone is not an IANA time zone the manager knows.
	ReasonUnknownTimeZone = "UnknownTimeZone"
	// ReasonInvalidSchedule: spec.schedule does not parse as a cron expression.
	ReasonInvalidSchedule = "InvalidSchedule"
	// ReasonScheduleNeverFires: spec.schedule names no instant in the next five years
	// (a 30th of February).
	ReasonScheduleNeverFires = "ScheduleNeverFires"
	// ReasonBudgetNotFound: spec.budgetName names no budget.
	ReasonBudgetNotFound = "BudgetNotFound"

	// EventWindowStarted and EventWindowEnded are written on the budget.
	EventWindowStarted = "WindowStarted"
	EventWindowEnded   = "WindowEnded"
)

// BudgetWindowSpec is a change to a budget for a time: an absolute [start, end), or each
// time a cron schedule fires, for duration, in timeZone. While the window is open the
// budget is enforced with the fields this window sets in place of its written ones; the
// Budget object itself is never written, so the Budget kept in git does not drift.
//
// Among the windows of one budget that are open at once, the higher priority wins, and
// between equal priorities the name that sorts first; each field (and each resource of
// hard, add, borrowingLimit and lendingLimit) is taken from the winner among the windows
// that set it (docs/budgets.md, "Windows").
// +kubebuilder:validation:XValidation:rule="has(self.schedule) != (has(self.start) || has(self.end))",message="set either start and end (an absolute window) or schedule with duration (a repeating window), not both and not neither"
// +kubebuilder:validation:XValidation:rule="has(self.start) == has(self.end)",message="start and end go together: an absolute window needs both"
// +kubebuilder:validation:XValidation:rule="!has(self.start) || !has(self.end) || self.end > self.start",message="end must be after start"
// +kubebuilder:validation:XValidation:rule="has(self.schedule) == has(self.duration)",message="schedule and duration go together: a repeating window is open for duration each time schedule fires"
// +kubebuilder:validation:XValidation:rule="!has(self.timeZone) || has(self.schedule)",message="timeZone is for schedule: start and end carry their own offset"
// +kubebuilder:validation:XValidation:rule="!(has(self.hard) && has(self.add))",message="set hard (the limit while open) or add (added to the written hard), not both"
// +kubebuilder:validation:XValidation:rule="has(self.hard) || has(self.add) || has(self.state) || has(self.borrowingLimit) || has(self.lendingLimit)",message="a window must set at least one of hard, add, state, borrowingLimit or lendingLimit"
type BudgetWindowSpec struct {
	// BudgetName names the budget this window changes: a Budget of the window's
	// namespace for a BudgetWindow, a ClusterBudget for a ClusterBudgetWindow.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	BudgetName string `json:"budgetName"`

	// Start opens an absolute window (RFC 3339, with its offset); it needs end.
	// +optional
	Start *metav1.Time `json:"start,omitempty"`

	// End closes an absolute window: the window is open from start up to, not
	// including, end.
	// +optional
	End *metav1.Time `json:"end,omitempty"`

	// Schedule opens a repeating window: a cron expression of five fields (minute, hour,
	// day of month, month, day of week), read in timeZone. It needs duration.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^[^ ]+( +[^ ]+){4}$')",message="schedule must be a cron expression of five fields separated by spaces: minute hour day-of-month month day-of-week (the time zone goes in timeZone)"
	Schedule string `json:"schedule,omitempty"`

	// Duration is how long a repeating window stays open each time schedule fires (a
	// Go duration: "8h", "90m"). If it fires again while open, the window stays open
	// until duration after the last firing.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$') || duration(self) > duration('0s')",message="duration must be greater than zero"
	Duration *metav1.Duration `json:"duration,omitempty"`

	// TimeZone is the IANA time zone schedule is read in ("Europe/Berlin"). UTC when
	// unset. An unknown name is reported on the window's Ready condition
	// (UnknownTimeZone) and the window never opens.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	TimeZone string `json:"timeZone,omitempty"`

	// Hard, while the window is open, is the limit of each resource it names, in place
	// of the budget's written one; a resource the budget does not limit becomes limited.
	// Names as in the budget's hard.
	// +optional
	// +kubebuilder:validation:MaxProperties=24
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['pods', 'count/pods', 'cpu', 'memory', 'ephemeral-storage', 'requests.cpu', 'requests.memory', 'requests.ephemeral-storage', 'limits.cpu', 'limits.memory', 'limits.ephemeral-storage'] || k.matches('^(requests[.])?hugepages-[0-9]+([KMGTPE]i|[kMGTPE])?$') || k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*[.]deviceclass[.]resource[.]k8s[.]io/devices$') || k.matches('^requests[.]deviceclass[.]resource[.]kubernetes[.]io/[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$') || (k.matches('^(requests[.])?[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && !k.startsWith('limits.') && !k.matches('^(requests[.])?count/') && !k.contains('kubernetes.io/') && !k.matches('(^|[.])k8s[.]io/')))",messageExpression="'unsupported resource name in hard: ' + self.filter(k, !(k in ['pods', 'count/pods', 'cpu', 'memory', 'ephemeral-storage', 'requests.cpu', 'requests.memory', 'requests.ephemeral-storage', 'limits.cpu', 'limits.memory', 'limits.ephemeral-storage'] || k.matches('^(requests[.])?hugepages-[0-9]+([KMGTPE]i|[kMGTPE])?$') || k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*[.]deviceclass[.]resource[.]k8s[.]io/devices$') || k.matches('^requests[.]deviceclass[.]resource[.]kubernetes[.]io/[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$') || (k.matches('^(requests[.])?[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && !k.startsWith('limits.') && !k.matches('^(requests[.])?count/') && !k.contains('kubernetes.io/') && !k.matches('(^|[.])k8s[.]io/'))))[0] + ' (supported: cpu, memory, ephemeral-storage, their requests.* and limits.* forms, hugepages-<size> and requests.hugepages-<size>, extended resources as <domain>/<name> or requests.<domain>/<name> outside kubernetes.io and k8s.io, DRA devices as <class>.deviceclass.resource.k8s.io/devices or requests.deviceclass.resource.kubernetes.io/<class>, pods, count/pods)'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, type(self[k]) == string ? !self[k].startsWith('-') : self[k] >= 0)",message="hard quantities must not be negative"
	Hard corev1.ResourceList `json:"hard,omitempty"`

	// Add, while the window is open, is added to the budget's written hard for each
	// resource it names. A resource the budget does not limit stays unlimited.
	// +optional
	// +kubebuilder:validation:MaxProperties=24
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['pods', 'count/pods', 'cpu', 'memory', 'ephemeral-storage', 'requests.cpu', 'requests.memory', 'requests.ephemeral-storage', 'limits.cpu', 'limits.memory', 'limits.ephemeral-storage'] || k.matches('^(requests[.])?hugepages-[0-9]+([KMGTPE]i|[kMGTPE])?$') || k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*[.]deviceclass[.]resource[.]k8s[.]io/devices$') || k.matches('^requests[.]deviceclass[.]resource[.]kubernetes[.]io/[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$') || (k.matches('^(requests[.])?[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && !k.startsWith('limits.') && !k.matches('^(requests[.])?count/') && !k.contains('kubernetes.io/') && !k.matches('(^|[.])k8s[.]io/')))",messageExpression="'unsupported resource name in add: ' + self.filter(k, !(k in ['pods', 'count/pods', 'cpu', 'memory', 'ephemeral-storage', 'requests.cpu', 'requests.memory', 'requests.ephemeral-storage', 'limits.cpu', 'limits.memory', 'limits.ephemeral-storage'] || k.matches('^(requests[.])?hugepages-[0-9]+([KMGTPE]i|[kMGTPE])?$') || k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*[.]deviceclass[.]resource[.]k8s[.]io/devices$') || k.matches('^requests[.]deviceclass[.]resource[.]kubernetes[.]io/[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$') || (k.matches('^(requests[.])?[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && !k.startsWith('limits.') && !k.matches('^(requests[.])?count/') && !k.contains('kubernetes.io/') && !k.matches('(^|[.])k8s[.]io/'))))[0] + ' (supported: cpu, memory, ephemeral-storage, their requests.* and limits.* forms, hugepages-<size> and requests.hugepages-<size>, extended resources as <domain>/<name> or requests.<domain>/<name> outside kubernetes.io and k8s.io, DRA devices as <class>.deviceclass.resource.k8s.io/devices or requests.deviceclass.resource.kubernetes.io/<class>, pods, count/pods)'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, type(self[k]) == string ? !self[k].startsWith('-') : self[k] >= 0)",message="add quantities must not be negative"
	Add corev1.ResourceList `json:"add,omitempty"`

	// State, while the window is open, is the budget's desired state: Closed stops new
	// admissions (a budget open only at night is Closed by a window in the day), Open
	// admits.
	// +optional
	// +kubebuilder:validation:Enum=Open;Closed
	State BudgetState `json:"state,omitempty"`

	// BorrowingLimit, while the window is open, replaces the budget's borrowingLimit for
	// each resource it names.
	// +optional
	// +kubebuilder:validation:MaxProperties=24
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['pods', 'count/pods', 'cpu', 'memory', 'ephemeral-storage', 'requests.cpu', 'requests.memory', 'requests.ephemeral-storage', 'limits.cpu', 'limits.memory', 'limits.ephemeral-storage'] || k.matches('^(requests[.])?hugepages-[0-9]+([KMGTPE]i|[kMGTPE])?$') || k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*[.]deviceclass[.]resource[.]k8s[.]io/devices$') || k.matches('^requests[.]deviceclass[.]resource[.]kubernetes[.]io/[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$') || (k.matches('^(requests[.])?[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && !k.startsWith('limits.') && !k.matches('^(requests[.])?count/') && !k.contains('kubernetes.io/') && !k.matches('(^|[.])k8s[.]io/')))",messageExpression="'unsupported resource name in borrowingLimit: ' + self.filter(k, !(k in ['pods', 'count/pods', 'cpu', 'memory', 'ephemeral-storage', 'requests.cpu', 'requests.memory', 'requests.ephemeral-storage', 'limits.cpu', 'limits.memory', 'limits.ephemeral-storage'] || k.matches('^(requests[.])?hugepages-[0-9]+([KMGTPE]i|[kMGTPE])?$') || k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*[.]deviceclass[.]resource[.]k8s[.]io/devices$') || k.matches('^requests[.]deviceclass[.]resource[.]kubernetes[.]io/[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$') || (k.matches('^(requests[.])?[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && !k.startsWith('limits.') && !k.matches('^(requests[.])?count/') && !k.contains('kubernetes.io/') && !k.matches('(^|[.])k8s[.]io/'))))[0] + ' (supported: cpu, memory, ephemeral-storage, their requests.* and limits.* forms, hugepages-<size> and requests.hugepages-<size>, extended resources as <domain>/<name> or requests.<domain>/<name> outside kubernetes.io and k8s.io, DRA devices as <class>.deviceclass.resource.k8s.io/devices or requests.deviceclass.resource.kubernetes.io/<class>, pods, count/pods)'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, type(self[k]) == string ? !self[k].startsWith('-') : self[k] >= 0)",message="borrowingLimit quantities must not be negative"
	BorrowingLimit corev1.ResourceList `json:"borrowingLimit,omitempty"`

	// LendingLimit, while the window is open, replaces the budget's lendingLimit for
	// each resource it names.
	// +optional
	// +kubebuilder:validation:MaxProperties=24
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['pods', 'count/pods', 'cpu', 'memory', 'ephemeral-storage', 'requests.cpu', 'requests.memory', 'requests.ephemeral-storage', 'limits.cpu', 'limits.memory', 'limits.ephemeral-storage'] || k.matches('^(requests[.])?hugepages-[0-9]+([KMGTPE]i|[kMGTPE])?$') || k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*[.]deviceclass[.]resource[.]k8s[.]io/devices$') || k.matches('^requests[.]deviceclass[.]resource[.]kubernetes[.]io/[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$') || (k.matches('^(requests[.])?[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && !k.startsWith('limits.') && !k.matches('^(requests[.])?count/') && !k.contains('kubernetes.io/') && !k.matches('(^|[.])k8s[.]io/')))",messageExpression="'unsupported resource name in lendingLimit: ' + self.filter(k, !(k in ['pods', 'count/pods', 'cpu', 'memory', 'ephemeral-storage', 'requests.cpu', 'requests.memory', 'requests.ephemeral-storage', 'limits.cpu', 'limits.memory', 'limits.ephemeral-storage'] || k.matches('^(requests[.])?hugepages-[0-9]+([KMGTPE]i|[kMGTPE])?$') || k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*[.]deviceclass[.]resource[.]k8s[.]io/devices$') || k.matches('^requests[.]deviceclass[.]resource[.]kubernetes[.]io/[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$') || (k.matches('^(requests[.])?[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && !k.startsWith('limits.') && !k.matches('^(requests[.])?count/') && !k.contains('kubernetes.io/') && !k.matches('(^|[.])k8s[.]io/'))))[0] + ' (supported: cpu, memory, ephemeral-storage, their requests.* and limits.* forms, hugepages-<size> and requests.hugepages-<size>, extended resources as <domain>/<name> or requests.<domain>/<name> outside kubernetes.io and k8s.io, DRA devices as <class>.deviceclass.resource.k8s.io/devices or requests.deviceclass.resource.kubernetes.io/<class>, pods, count/pods)'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, type(self[k]) == string ? !self[k].startsWith('-') : self[k] >= 0)",message="lendingLimit quantities must not be negative"
	LendingLimit corev1.ResourceList `json:"lendingLimit,omitempty"`

	// Priority decides between windows of the same budget that are open at once: the
	// higher wins; between equal priorities, the name that sorts first. 0 when unset.
	// +optional
	Priority int32 `json:"priority,omitempty"`

	// EndPolicy says what happens at the window's end to pods running over the hard
	// the budget has again: Hold (the default) lets them finish and keeps new pods
	// waiting until used is within hard; Reclaim evicts them, the lowest priority and
	// the most recently admitted first, until used is within hard. Deleting an open
	// window ends it with Hold.
	// +optional
	// +kubebuilder:default=Hold
	EndPolicy WindowEndPolicy `json:"endPolicy,omitempty"`
}

// BudgetWindowStatus is what the manager reports of a window.
type BudgetWindowStatus struct {
	// Open is true while the window is open and changes its budget.
	// +optional
	Open bool `json:"open"`

	// NextChange is when the window next opens or closes; unset when it never will.
	// +optional
	NextChange *metav1.Time `json:"nextChange,omitempty"`

	// Conditions: Ready is True (Scheduled) when the window is valid and its budget
	// exists; False with UnknownTimeZone, InvalidSchedule, ScheduleNeverFires or
	// BudgetNotFound otherwise, and the window then changes nothing.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the generation this status was computed from.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// BudgetWindow changes a Budget of its namespace for a time (docs/budgets.md, "Windows").
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bwin,categories=quotagate
// +kubebuilder:printcolumn:name="Budget",type=string,JSONPath=`.spec.budgetName`
// +kubebuilder:printcolumn:name="Open",type=boolean,JSONPath=`.status.open`
// +kubebuilder:printcolumn:name="Next",type=date,JSONPath=`.status.nextChange`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BudgetWindow struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BudgetWindowSpec   `json:"spec"`
	Status BudgetWindowStatus `json:"status,omitempty"`
}

// BudgetWindowList is a list of BudgetWindows.
//
// +kubebuilder:object:root=true
type BudgetWindowList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BudgetWindow `json:"items"`
}

// ClusterBudgetWindow changes a ClusterBudget for a time, as a BudgetWindow does a
// Budget.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=cbwin,categories=quotagate
// +kubebuilder:printcolumn:name="Budget",type=string,JSONPath=`.spec.budgetName`
// +kubebuilder:printcolumn:name="Open",type=boolean,JSONPath=`.status.open`
// +kubebuilder:printcolumn:name="Next",type=date,JSONPath=`.status.nextChange`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterBudgetWindow struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BudgetWindowSpec   `json:"spec"`
	Status BudgetWindowStatus `json:"status,omitempty"`
}

// ClusterBudgetWindowList is a list of ClusterBudgetWindows.
//
// +kubebuilder:object:root=true
type ClusterBudgetWindowList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterBudgetWindow `json:"items"`
}
