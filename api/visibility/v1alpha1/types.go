package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of the visibility API.
const GroupName = "visibility.quotagate.io"

// GroupVersion is the group and version of every type in this package.
var GroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// Resource and subresource names, as RBAC rules name them.
const (
	ResourceBudgets        = "budgets"
	ResourceClusterBudgets = "clusterbudgets"
	SubresourcePendingPods = "pendingpods"
	KindPendingPodList     = "PendingPodList"
	// ResourcePendingPods is the namespaced resource that answers one gated pod's
	// PendingPodStatus by the pod's name.
	ResourcePendingPods  = "pendingpods"
	KindPendingPodStatus = "PendingPodStatus"
	// ResourcePodSimulations is the namespaced, create-only resource that answers a
	// what-if: where pods made from a template would wait, and when they would start.
	ResourcePodSimulations = "podsimulations"
	KindPodSimulation      = "PodSimulation"
)

// MaxSimulatedPods is the most pods one PodSimulation may ask about by default; the
// manager's --simulation-max-pods sets it.
const MaxSimulatedPods = 1000

// Paging defaults: a page is DefaultLimit pods unless the request asks for another
// size, and never more than MaxLimit.
const (
	DefaultLimit = 1000
	MaxLimit     = 10000
)

// Queue names, as the admission core calls them.
const (
	QueueActive       = "active"
	QueueBackoff      = "backoff"
	QueueInadmissible = "inadmissible"
	QueueParked       = "parked"
)

// PendingPodList is one page of a budget's gated pods in admission order.
//
// +kubebuilder:object:root=true
type PendingPodList struct {
	metav1.TypeMeta `json:",inline"`
	// ObjectMeta names the budget: its namespace (empty for a ClusterBudget) and name.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Kind of the budget: Budget or ClusterBudget.
	BudgetKind string `json:"budgetKind"`
	// State is the budget's effective state (Open, Closing or Closed), as its status shows it.
	State string `json:"state,omitempty"`
	// Strategy is the budget's queueing strategy.
	Strategy string `json:"strategy,omitempty"`
	// Total is how many pods the budget keeps gated, on every page.
	Total int64 `json:"total"`
	// Offset is how many pods in admission order come before this page.
	Offset int64 `json:"offset"`
	// Items are the pods of this page, position Offset+1 first.
	Items []PendingPod `json:"items"`
}

// PendingPod is one gated pod and why it waits.
type PendingPod struct {
	// Namespace and Name of the pod.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// UID of the pod.
	UID string `json:"uid,omitempty"`
	// Position is 1 for the next pod the budget admits.
	Position int64 `json:"position"`
	// Priority is the pod's priority, which orders the queue before creation time.
	Priority int32 `json:"priority"`
	// Group is the pod group the pod is admitted with, if any.
	Group string `json:"group,omitempty"`
	// Requests are what the pod charges the budget.
	Requests corev1.ResourceList `json:"requests,omitempty"`
	// CreationTimestamp is when the pod was created: it has waited since.
	CreationTimestamp metav1.Time `json:"creationTimestamp"`
	// WaitingSeconds is how long the pod has waited when the page was made.
	WaitingSeconds int64 `json:"waitingSeconds"`
	// Queue is the admission queue the pod is in: active, backoff, inadmissible or
	// parked.
	Queue string `json:"queue"`
	// RetryAt is when a pod in backoff is tried again.
	RetryAt *metav1.Time `json:"retryAt,omitempty"`
	// ReasonCode is the machine-readable reason the pod waits.
	ReasonCode string `json:"reasonCode"`
	// Reason is the sentence that explains why the pod waits.
	Reason string `json:"reason"`
	// EstimatedStart is when the manager estimates the pod starts; absent when the
	// manager's estimator is off or has not estimated the pod yet.
	EstimatedStart *EstimatedStart `json:"estimatedStart,omitempty"`
}

// EstimatedStart is a gated pod's estimated start (docs/visibility.md): the manager
// runs its admission core forward in simulated time, ending each pod that holds quota
// at its expected end (a deadline, a declared duration, or the durations of finished
// pods like it), until the pod is admitted. Either Median, Low and High are set, or
// Unknown and Message say why the start cannot be estimated. It names no other pod.
type EstimatedStart struct {
	// Median is the middle of the pod's starts over the simulation's draws of every
	// learned duration.
	Median *metav1.Time `json:"median,omitempty"`
	// Low and High are the 10th and 90th percentiles of those starts: a range meant to
	// hold the real start 80% of the time.
	Low  *metav1.Time `json:"low,omitempty"`
	High *metav1.Time `json:"high,omitempty"`
	// Ends is how many pods the simulation ended before the pod started (in every
	// budget: at most this many ends are waited for). The more ends, the less sure.
	Ends int64 `json:"ends,omitempty"`
	// Samples is the fewest finished pods behind a learned duration among those ends
	// (0 when none was learned: deadlines and declared durations only).
	Samples int64 `json:"samples,omitempty"`
	// Basis says what the least trusted learned duration among those ends comes from:
	// "durations of 12 runs of Job team-a/train", or, for a workload with too few runs of its own,
	// the wider circle it fell back to ("no run of Job demo/etl yet; durations of 30 runs
	// of pods in namespace demo"). Empty when none was learned.
	Basis string `json:"basis,omitempty"`
	// Unknown is why the start cannot be estimated: NoHistory, BudgetClosed,
	// NeverFits, Blocked or Capped; empty when it is estimated.
	Unknown string `json:"unknown,omitempty"`
	// Message explains Unknown in a sentence.
	Message string `json:"message,omitempty"`
}

// PendingPodStatus is where one gated pod waits and why: its place in the queue of
// every budget that holds it, or, for a pod no budget covers, that the manager holds
// it. It is about the pod, so a tenant who may see the pod's status sees its place in
// a ClusterBudget's queue too, but no other pod of that queue.
//
// +kubebuilder:object:root=true
type PendingPodStatus struct {
	metav1.TypeMeta `json:",inline"`
	// ObjectMeta names the pod: namespace, name, uid and creationTimestamp.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Priority is the pod's priority, which orders the queues before creation time.
	Priority int32 `json:"priority"`
	// Group is the pod group the pod is admitted with, if any.
	Group string `json:"group,omitempty"`
	// Requests are what the pod charges the budgets.
	Requests corev1.ResourceList `json:"requests,omitempty"`
	// WaitingSeconds is how long the pod has waited when the answer was made.
	WaitingSeconds int64 `json:"waitingSeconds"`
	// RetryAt is when a pod in backoff is tried again.
	RetryAt *metav1.Time `json:"retryAt,omitempty"`
	// ReasonCode is the machine-readable reason the pod waits.
	ReasonCode string `json:"reasonCode"`
	// Reason is the sentence that explains why the pod waits, as its Waiting event.
	Reason string `json:"reason"`
	// EstimatedStart is when the manager estimates the pod starts; absent when the
	// manager's estimator is off or has not estimated the pod yet.
	EstimatedStart *EstimatedStart `json:"estimatedStart,omitempty"`
	// EstimateRecord is how the estimates of the pods admitted from the first budget of
	// Budgets fared; absent when the estimator is off or has judged none there yet.
	EstimateRecord *EstimateRecord `json:"estimateRecord,omitempty"`
	// Held is true for a pod no budget covers that the manager holds (uncovered pods
	// are held, or a group member waits for its group); Budgets is empty then.
	Held bool `json:"held,omitempty"`
	// Budgets are the pod's places in the queues of the budgets that hold it, in the
	// order the manager evaluates them (Budgets, then ClusterBudgets, then parents).
	Budgets []BudgetPlace `json:"budgets"`
}

// EstimateRecord is a budget's track record of estimated starts, kept by the leader
// since it started (not across restarts or leader changes): of the last Pods (at most
// 200) admitted with a known first estimate, the median absolute error of their first
// estimates and how many were admitted within their first estimate's range.
type EstimateRecord struct {
	// BudgetKind, Namespace (empty for a ClusterBudget) and Name of the budget.
	BudgetKind string `json:"budgetKind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	// Pods is how many admissions the record holds.
	Pods int64 `json:"pods"`
	// MedianErrorSeconds is the median of |first estimate's median − admission|.
	MedianErrorSeconds float64 `json:"medianErrorSeconds"`
	// WithinRange is how many of the Pods were admitted within their first estimate's
	// range (low to high), which claims to hold 80%.
	WithinRange int64 `json:"withinRange"`
	// Since is when the record began: when this manager became the leader or started.
	Since metav1.Time `json:"since"`
}

// BudgetPlace is a pod's place in one budget's queue.
type BudgetPlace struct {
	// BudgetKind is Budget or ClusterBudget.
	BudgetKind string `json:"budgetKind"`
	// Namespace (empty for a ClusterBudget) and Name of the budget.
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Position is 1 when the budget admits this pod next.
	Position int64 `json:"position"`
	// Total is how many pods the budget keeps gated.
	Total int64 `json:"total"`
	// Queue is the admission queue the pod is in in this budget: active, backoff,
	// inadmissible or parked.
	Queue string `json:"queue"`
}

// PodSimulation asks, without creating anything, what would happen to Count pods made
// from Template if they were created now in the object's namespace: which budgets
// would cover them, the place each would take in each budget's queue and why it would
// wait (or that it would be admitted at once, and on which flavor), and when each is
// estimated to start. It is created (POST) only: the answer is the object with its
// status filled in, and nothing is stored. The status names no other pod.
//
// +kubebuilder:object:root=true
type PodSimulation struct {
	metav1.TypeMeta `json:",inline"`
	// ObjectMeta: the namespace the pods would be created in (the request's); in the
	// answer, creationTimestamp is when they are supposed created (the estimates'
	// "now").
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PodSimulationSpec   `json:"spec"`
	Status PodSimulationStatus `json:"status,omitempty"`
}

// PodSimulationSpec is the pods a PodSimulation asks about.
type PodSimulationSpec struct {
	// Template is the pods' metadata and spec: a Pod's, or a workload's
	// spec.template. Its labels, annotations (quotagate.io/expected-duration among
	// them), priority or priorityClassName, requests and ownerReferences (the owner
	// whose finished pods' durations are learned) are read as the manager reads a
	// created pod's.
	Template corev1.PodTemplateSpec `json:"template"`
	// Count is how many such pods (a workload's replicas, a Job's parallelism); 0
	// means 1; at most the manager's --simulation-max-pods (MaxSimulatedPods by
	// default), and its containers times Count at most --simulation-max-containers.
	Count int32 `json:"count,omitempty"`
}

// PodSimulationStatus is the answer: one entry per simulated pod, in the order they
// would be created.
type PodSimulationStatus struct {
	// Pods are the simulated pods.
	Pods []SimulatedPod `json:"pods"`
}

// SimulatedPod is what the manager's admission core says of one simulated pod at once,
// and its estimated start.
type SimulatedPod struct {
	// Name is the simulated pod's name: the template's generateName or name and its
	// index, or simulated-N.
	Name string `json:"name"`
	// Priority is the pod's priority (its priorityClassName resolved as the API server
	// would, or the cluster's default).
	Priority int32 `json:"priority"`
	// Requests are what the pod would charge its budgets.
	Requests corev1.ResourceList `json:"requests,omitempty"`
	// Admitted is true when the core would admit the pod at once; Flavor is the
	// flavor it would run on (empty when its budgets have none), and Preempts how many
	// pods would be preempted first to make room.
	Admitted bool   `json:"admitted"`
	Flavor   string `json:"flavor,omitempty"`
	Preempts int64  `json:"preempts,omitempty"`
	// Held is true for a pod no budget covers that the manager would hold.
	Held bool `json:"held,omitempty"`
	// ReasonCode and Reason say why it would wait, or why it is admitted (Fits).
	ReasonCode string `json:"reasonCode,omitempty"`
	Reason     string `json:"reason,omitempty"`
	// Budgets are the budgets that would cover the pod: when admitted, those charged
	// (Position and Queue unset); when it would wait, its place in each one's queue,
	// Total counting the simulated pods too.
	Budgets []BudgetPlace `json:"budgets"`
	// EstimatedStart is when the pod is estimated to start; Unknown and Message say
	// why not (EstimatorOff when the manager's estimator is off).
	EstimatedStart *EstimatedStart `json:"estimatedStart,omitempty"`
}

// PendingPodsOptions are the query parameters of a pendingpods request.
//
// +kubebuilder:object:root=true
type PendingPodsOptions struct {
	metav1.TypeMeta `json:",inline"`
	// Limit is the most pods a page holds; 0 means DefaultLimit.
	Limit int64 `json:"limit,omitempty"`
	// Offset is how many pods in admission order to skip.
	Offset int64 `json:"offset,omitempty"`
}

var (
	// SchemeBuilder registers this package's types with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this package's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &PendingPodList{}, &PendingPodStatus{}, &PendingPodsOptions{}, &PodSimulation{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
