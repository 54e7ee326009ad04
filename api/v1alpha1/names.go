package v1alpha1

// Names that quotagate writes to and reads from pods and namespaces.
const (
	// SchedulingGate is the gate the webhook adds and the manager removes.
	SchedulingGate = "quotagate.io/budget"

	// EnabledLabel opts a namespace in: its new pods are gated.
	EnabledLabel = "quotagate.io/enabled"

	// AdmittedAtAnnotation records when the manager ungated a pod (RFC 3339).
	AdmittedAtAnnotation = "quotagate.io/admitted-at"
	// AdmittedByAnnotation lists the budgets a pod was charged to, comma-separated.
	AdmittedByAnnotation = "quotagate.io/admitted-by"
	// AdmittedLabelsAnnotation holds, as a JSON object, the labels the pod was admitted
	// with: which budgets cover an admitted pod is decided by those labels for as long
	// as it runs, whatever its labels become, so a manager that restarts reads them
	// back. Set with admitted-by.
	AdmittedLabelsAnnotation = "quotagate.io/admitted-labels"
	// BorrowingAnnotation lists, comma-separated, the budgets a pod was admitted beyond
	// the hard of, by borrowing what the budgets under the same parent did not use
	// (spec.borrowingLimit). Set with admitted-by; absent when it borrowed nothing.
	BorrowingAnnotation = "quotagate.io/borrowing"
	// FlavorAnnotation names the Flavor a pod was admitted on, whose node labels and
	// tolerations the same patch added. Set with admitted-by; absent when the pod got
	// no flavor. It is what the pod was given; its charge follows its nodeSelector.
	FlavorAnnotation = "quotagate.io/flavor"

	// GroupLabel names the group a pod belongs to; a group is admitted all together.
	GroupLabel = "quotagate.io/group"
	// GroupSizeAnnotation is how many members the group has.
	GroupSizeAnnotation = "quotagate.io/group-size"

	// ExpectedDurationAnnotation declares how long a pod runs once started, in Go's
	// duration syntax ("90m", "2h30m"). Estimates of when the quota it holds is free
	// again trust it after the pod's own activeDeadlineSeconds and before the durations
	// learned from finished pods (pkg/estimate); a value that does not parse, or is not
	// positive, is ignored with a reason.
	ExpectedDurationAnnotation = "quotagate.io/expected-duration"
)
