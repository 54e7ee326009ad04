package v1alpha1

// Names that quotagate writes to and reads from pods, namespaces and ResourceClaims.
// Every name with the quotagate.io/ prefix is either one only the manager writes, listed
// in ManagerWritten, or one a user writes, listed in UserWritten (names_test.go checks
// that each is in exactly one).
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
	// AdmittedMaxRuntimeAnnotation records the quotagate.io/max-runtime a pod was
	// admitted with: the hours it reserved (usageLimits) are fixed then, and a manager
	// that starts later reads this one, which only the manager writes, not the pod's own
	// annotation, which its owner may change.
	AdmittedMaxRuntimeAnnotation = "quotagate.io/admitted-max-runtime"

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

	// NotBeforeAnnotation holds a gated pod until an instant (RFC 3339, with its
	// offset): it waits behind the gate, uncharged, and is then admitted in its usual
	// order. StartScheduleAnnotation, StartDurationAnnotation and
	// StartTimeZoneAnnotation let it start only inside the windows of a schedule: a
	// cron expression of five fields, how long each window is open (Go's duration
	// syntax), and the IANA zone the schedule is read in (UTC when absent). A value that
	// does not parse holds the pod with a reason (docs/start-control.md).
	NotBeforeAnnotation     = "quotagate.io/not-before"
	StartScheduleAnnotation = "quotagate.io/start-schedule"
	StartDurationAnnotation = "quotagate.io/start-duration"
	StartTimeZoneAnnotation = "quotagate.io/start-time-zone"

	// WaitForAnnotation names objects of the pod's own namespace that it waits for
	// before it may start, comma-separated kind/name: a Job that must have completed
	// (job/NAME), a PersistentVolumeClaim that must be Bound (persistentvolumeclaim/NAME
	// or pvc/NAME), a Deployment that must be Available (deployment/NAME), a Secret or
	// ConfigMap that must exist (secret/NAME, configmap/NAME; Secrets only where the
	// manager watches them). The pod waits behind the gate, uncharged, until all are
	// (docs/start-control.md).
	WaitForAnnotation = "quotagate.io/wait-for"

	// ChargedFinalizer pins a ResourceClaim that an admitted pod is charged for: the
	// manager adds it, fenced on the claim's UID, before it removes the pod's gate, and
	// removes it once no pod that may run with the claim uses it. While it is there, a
	// claim deleted by its owner stays (terminating, which kube-scheduler never
	// allocates), and no other claim can take its name, so a pod cannot run with devices
	// it was not charged for.
	ChargedFinalizer = "quotagate.io/charged"
)

// KeyKind is where on an object a name of ManagerWritten or UserWritten goes.
type KeyKind string

const (
	KeyAnnotation KeyKind = "annotation"
	KeyLabel      KeyKind = "label"
	KeyFinalizer  KeyKind = "finalizer"
	// KeyGate is a pod scheduling gate.
	KeyGate KeyKind = "schedulingGate"
)

// Key is a label, annotation, finalizer or scheduling gate name, and its kind.
//
// +kubebuilder:object:generate=false
type Key struct {
	Name string
	Kind KeyKind
}

// ManagerWritten are the quotagate.io/ names only the manager writes, on pods and on
// ResourceClaims: the record of an admission, which the manager and the tools read
// back, and the pin of a charged claim. The gate guard (config/policy/gate_guard.yaml,
// the chart's gate-guard.yaml) refuses anyone else a request that adds, changes or
// removes one of them, at CREATE and at UPDATE; the tests compare its lists with this
// one. The gate itself is guarded there too, by its own rule: anyone may add it, only
// the manager may remove it.
var ManagerWritten = []Key{
	{AdmittedAtAnnotation, KeyAnnotation},
	{AdmittedByAnnotation, KeyAnnotation},
	{AdmittedLabelsAnnotation, KeyAnnotation},
	{BorrowingAnnotation, KeyAnnotation},
	{FlavorAnnotation, KeyAnnotation},
	{AdmittedMaxRuntimeAnnotation, KeyAnnotation},
	{ChargedFinalizer, KeyFinalizer},
}

// UserWritten are the quotagate.io/ names that users write and the manager reads: the
// gate (the admission step adds it, and anyone may), the opt-in label (an
// administrator's, on namespaces), a group's label and size, a pod's declared
// duration, when it may start, and what it waits for.
var UserWritten = []Key{
	{SchedulingGate, KeyGate},
	{EnabledLabel, KeyLabel},
	{GroupLabel, KeyLabel},
	{GroupSizeAnnotation, KeyAnnotation},
	{ExpectedDurationAnnotation, KeyAnnotation},
	{NotBeforeAnnotation, KeyAnnotation},
	{StartScheduleAnnotation, KeyAnnotation},
	{StartDurationAnnotation, KeyAnnotation},
	{StartTimeZoneAnnotation, KeyAnnotation},
	{WaitForAnnotation, KeyAnnotation},
}

// ManagerWrittenNames returns the names of ManagerWritten of kind k, in its order.
func ManagerWrittenNames(k KeyKind) []string {
	var out []string
	for _, key := range ManagerWritten {
		if key.Kind == k {
			out = append(out, key.Name)
		}
	}
	return out
}
