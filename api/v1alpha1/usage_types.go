package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// UsagePeriod is the calendar period a budget's hours are counted in, in its time zone.
// +kubebuilder:validation:Enum=Day;Week;Month
type UsagePeriod string

const (
	// PeriodDay runs from midnight to midnight.
	PeriodDay UsagePeriod = "Day"
	// PeriodWeek runs from Monday 00:00 to the next Monday (ISO 8601 weeks).
	PeriodWeek UsagePeriod = "Week"
	// PeriodMonth runs from the first of a month, 00:00, to the first of the next.
	PeriodMonth UsagePeriod = "Month"
)

// UsageExhaustion says what happens to a pod that runs past the maximum runtime it was
// admitted with: the hours it reserved are used up.
// +kubebuilder:validation:Enum=Hold;Evict
type UsageExhaustion string

const (
	// ExhaustionHold lets the pod run on: what it uses beyond its reservation counts as
	// used, and new pods wait while the hours do not fit.
	ExhaustionHold UsageExhaustion = "Hold"
	// ExhaustionEvict evicts the pod, through the Eviction API, when it outruns its
	// maximum runtime.
	ExhaustionEvict UsageExhaustion = "Evict"
)

// MaxRuntimeAnnotation declares the longest a pod runs once admitted, in Go's duration
// syntax ("2h"), for the hour budgets that cover it (docs/budgets.md, "Hour budgets").
// A pod's activeDeadlineSeconds, when shorter, is used instead.
const MaxRuntimeAnnotation = "quotagate.io/max-runtime"

// UsageLimits caps what a budget's pods use over time, in resource-hours: a running
// pod uses its charged requests for each hour it runs. A pod is admitted only when what
// the budget's pods have used in the period, plus what its running pods may still use
// up to their maximum runtime, plus what this pod may use (its requests times its
// maximum runtime), fits in hours (docs/budgets.md, "Hour budgets").
//
// Hours are counted per calendar period (reset when it ends), over the last
// rollingDays days, or decayed with a half-life (never reset): set exactly one of
// period, rollingDays and halfLife.
// +kubebuilder:validation:XValidation:rule="[has(self.period), has(self.rollingDays), has(self.halfLife)].filter(x, x).size() == 1",message="set exactly one of period (a calendar Day, Week or Month), rollingDays or halfLife"
// +kubebuilder:validation:XValidation:rule="!has(self.timeZone) || has(self.period)",message="timeZone is for period: rollingDays and halfLife do not follow the calendar"
// +kubebuilder:validation:XValidation:rule="!has(self.defaultMaxRuntime) || !has(self.period) || !self.defaultMaxRuntime.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$') || duration(self.defaultMaxRuntime) <= duration(self.period == 'Day' ? '24h' : self.period == 'Week' ? '168h' : '672h')",message="defaultMaxRuntime must not be longer than the period (24h for a Day, 168h for a Week, 672h for a Month)"
// +kubebuilder:validation:XValidation:rule="!has(self.defaultMaxRuntime) || !has(self.rollingDays) || !self.defaultMaxRuntime.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$') || duration(self.defaultMaxRuntime).getMilliseconds() <= self.rollingDays * 86400000",message="defaultMaxRuntime must not be longer than rollingDays"
type UsageLimits struct {
	// Hours is, per resource, how many resource-hours the budget's pods may use in a
	// period: "nvidia.com/gpu: 1000" is 1,000 GPU-hours, "cpu: 100m" six CPU-minutes.
	// Names as in hard; a child's pods count in its parent's hours too.
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=24
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['pods', 'count/pods', 'cpu', 'memory', 'ephemeral-storage', 'requests.cpu', 'requests.memory', 'requests.ephemeral-storage', 'limits.cpu', 'limits.memory', 'limits.ephemeral-storage'] || k.matches('^(requests[.])?hugepages-[0-9]+([KMGTPE]i|[kMGTPE])?$') || k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*[.]deviceclass[.]resource[.]k8s[.]io/devices$') || k.matches('^requests[.]deviceclass[.]resource[.]kubernetes[.]io/[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$') || (k.matches('^(requests[.])?[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && !k.startsWith('limits.') && !k.matches('^(requests[.])?count/') && !k.contains('kubernetes.io/') && !k.matches('(^|[.])k8s[.]io/')))",messageExpression="'unsupported resource name in hours: ' + self.filter(k, !(k in ['pods', 'count/pods', 'cpu', 'memory', 'ephemeral-storage', 'requests.cpu', 'requests.memory', 'requests.ephemeral-storage', 'limits.cpu', 'limits.memory', 'limits.ephemeral-storage'] || k.matches('^(requests[.])?hugepages-[0-9]+([KMGTPE]i|[kMGTPE])?$') || k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*[.]deviceclass[.]resource[.]k8s[.]io/devices$') || k.matches('^requests[.]deviceclass[.]resource[.]kubernetes[.]io/[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$') || (k.matches('^(requests[.])?[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && !k.startsWith('limits.') && !k.matches('^(requests[.])?count/') && !k.contains('kubernetes.io/') && !k.matches('(^|[.])k8s[.]io/'))))[0] + ' (supported: cpu, memory, ephemeral-storage, their requests.* and limits.* forms, hugepages-<size> and requests.hugepages-<size>, extended resources as <domain>/<name> or requests.<domain>/<name> outside kubernetes.io and k8s.io, DRA devices as <class>.deviceclass.resource.k8s.io/devices or requests.deviceclass.resource.kubernetes.io/<class>, pods, count/pods)'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !string(self[k]).startsWith('-'))",message="hours must not be negative"
	Hours corev1.ResourceList `json:"hours"`

	// Period counts hours per calendar Day, Week or Month in timeZone; what was used
	// is forgotten when the period ends.
	// +optional
	Period UsagePeriod `json:"period,omitempty"`

	// RollingDays counts the hours used in the last rollingDays days.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=366
	RollingDays int32 `json:"rollingDays,omitempty"`

	// HalfLife decays what was used: an hour used halfLife ago counts half. Nothing is
	// reset.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$') || duration(self) >= duration('1m')",message="halfLife must be at least 1m"
	HalfLife *metav1.Duration `json:"halfLife,omitempty"`

	// TimeZone is the IANA time zone period is read in ("Europe/Berlin"); UTC when
	// unset. An unknown name makes the budget invalid (Ready False, InvalidSpec): it
	// admits nothing until the name is fixed.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	TimeZone string `json:"timeZone,omitempty"`

	// DefaultMaxRuntime is the maximum runtime of a pod that declares none (neither
	// activeDeadlineSeconds nor the quotagate.io/max-runtime annotation). A pod with
	// none of the three waits, with a reason that says so.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$') || duration(self) > duration('0s')",message="defaultMaxRuntime must be greater than zero"
	DefaultMaxRuntime *metav1.Duration `json:"defaultMaxRuntime,omitempty"`

	// Exhaustion says what happens to a pod that runs past its maximum runtime: Hold
	// (the default) lets it run and counts what it uses; Evict evicts it.
	// +optional
	Exhaustion UsageExhaustion `json:"exhaustion,omitempty"`
}

// UsageStatus is what a budget's pods have used of its hours. The manager writes it at
// least every --usage-write-interval while pods run, and reads it back when it starts:
// it is how what was used survives restarts (docs/budgets.md, "Hour budgets").
type UsageStatus struct {
	// Period names what is counted: "2026-12" (Month), "2026-W49" (Week),
	// "2026-12-06" (Day), "last 7 days" or "decayed, half-life 168h".
	Period string `json:"period"`

	// PeriodStart is when the period counted began (unset for halfLife).
	// +optional
	PeriodStart *metav1.Time `json:"periodStart,omitempty"`

	// ResetAt is when the period ends and what was used is forgotten (a calendar
	// period only).
	// +optional
	ResetAt *metav1.Time `json:"resetAt,omitempty"`

	// AsOf is when used was computed: it includes what running pods used up to then.
	AsOf metav1.MicroTime `json:"asOf"`

	// Used is, per resource of hours, the resource-hours used in the period (decayed,
	// for halfLife), by pods that ended and by running pods up to asOf.
	// +optional
	Used corev1.ResourceList `json:"used,omitempty"`

	// Reserved is, per resource of hours, what the running pods may still use up to
	// their maximum runtime. A pod is admitted when used + reserved + what it may use
	// fits in hours.
	// +optional
	Reserved corev1.ResourceList `json:"reserved,omitempty"`

	// Days holds, for rollingDays, the resource-hours used on each day (UTC) still in
	// the window, oldest first.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=367
	Days []UsageDay `json:"days,omitempty"`
}

// FairSharingStatus is, for a budget under a parent with fairSharing.usageHalfLife,
// what its pods used, decayed with that half-life, and what that adds to its share
// when the budgets under the parent compete (docs/budgets.md, "Fair sharing with
// memory"). The manager writes it at least every --usage-write-interval while the
// budget's pods run, and reads it back when it starts.
type FairSharingStatus struct {
	// AsOf is when used was computed.
	AsOf metav1.MicroTime `json:"asOf"`

	// Used is, per resource of the parent, the resource-hours the budget's pods used,
	// decayed with the parent's usageHalfLife, up to asOf.
	// +optional
	Used corev1.ResourceList `json:"used,omitempty"`

	// UsageShare is what used adds to the budget's share as of asOf, in thousandths:
	// used over the parent's lendable quota times usageHalfLife/ln 2, the largest over
	// the resources, divided by the budget's weight. 1000 is a budget of weight 1 that
	// used all the family lends for as long as the half-life remembers.
	UsageShare int64 `json:"usageShare"`
}

// UsageDay is what was used on one day of a rolling window.
type UsageDay struct {
	// Date is the day, as 2026-12-06 (UTC).
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`
	Date string `json:"date"`
	// Used is the resource-hours used that day.
	Used corev1.ResourceList `json:"used"`
}
