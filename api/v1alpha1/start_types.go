package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// StartRule says when gated pods may start: not before notBefore, and, with a
// schedule, only while one of its windows is open. A pod says the same with the
// quotagate.io/not-before and quotagate.io/start-schedule annotations.
// +kubebuilder:validation:XValidation:rule="has(self.notBefore) || has(self.schedule)",message="set notBefore, schedule with duration, or both"
// +kubebuilder:validation:XValidation:rule="has(self.schedule) == has(self.duration)",message="schedule and duration go together: pods start only within duration of each firing"
// +kubebuilder:validation:XValidation:rule="!has(self.timeZone) || has(self.schedule)",message="timeZone is for schedule: notBefore carries its own offset"
type StartRule struct {
	// NotBefore: no pod starts before this instant (RFC 3339, with its offset).
	// +optional
	NotBefore *metav1.Time `json:"notBefore,omitempty"`

	// Schedule opens a window for starts each time it fires: a cron expression of five
	// fields (minute, hour, day of month, month, day of week), read in timeZone. It
	// needs duration. Pods start only while a window is open; a pod still waiting for
	// quota when the window closes waits for the next.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^[^ ]+( +[^ ]+){4}$')",message="schedule must be a cron expression of five fields separated by spaces: minute hour day-of-month month day-of-week (the time zone goes in timeZone)"
	Schedule string `json:"schedule,omitempty"`

	// Duration is how long each window stays open, in Go's duration syntax ("8h",
	// "90m").
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$') || duration(self) > duration('0s')",message="duration must be greater than zero"
	Duration *metav1.Duration `json:"duration,omitempty"`

	// TimeZone is the IANA time zone the schedule is read in (UTC when unset).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	TimeZone string `json:"timeZone,omitempty"`
}
