package crdvalidation_test

import (
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestUsageLimitsValidation: a Budget's and a ClusterBudget's spec.usageLimits (hour
// budgets) on a real kube-apiserver: each bad value is refused with the message
// docs/validation.md shows ("Hour budgets"), the good ones are accepted; and a
// malformed status.usage, written as the manager writes it, is refused.
func TestUsageLimitsValidation(t *testing.T) {
	api, _ := startAPIServer(t)

	const durationPattern = `'^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$'`
	bad := map[string]struct{ usage, want string }{
		"none of period, rollingDays, halfLife": {`{hours: {cpu: "10"}}`,
			`spec.usageLimits: Invalid value: set exactly one of period (a calendar Day, Week or Month), rollingDays or halfLife`},
		"period and rollingDays": {`{hours: {cpu: "10"}, period: Month, rollingDays: 30}`,
			`spec.usageLimits: Invalid value: set exactly one of period (a calendar Day, Week or Month), rollingDays or halfLife`},
		"rollingDays and halfLife": {`{hours: {cpu: "10"}, rollingDays: 7, halfLife: 168h}`,
			`spec.usageLimits: Invalid value: set exactly one of period (a calendar Day, Week or Month), rollingDays or halfLife`},
		"timeZone with rollingDays": {`{hours: {cpu: "10"}, rollingDays: 7, timeZone: Europe/Berlin}`,
			`spec.usageLimits: Invalid value: timeZone is for period: rollingDays and halfLife do not follow the calendar`},
		"empty hours": {`{hours: {}, period: Month}`,
			`spec.usageLimits.hours: Invalid value: 0: spec.usageLimits.hours in body should have at least 1 properties`},
		"negative hours": {`{hours: {cpu: "-1"}, period: Month}`,
			`spec.usageLimits.hours: Invalid value: hours must not be negative`},
		"unsupported name in hours": {`{hours: {cpu: "10", services: "1"}, period: Month}`,
			`spec.usageLimits.hours: Invalid value: unsupported resource name in hours: services` + hardMessage},
		"defaultMaxRuntime longer than a Day": {`{hours: {cpu: "10"}, period: Day, defaultMaxRuntime: 25h}`,
			`spec.usageLimits: Invalid value: defaultMaxRuntime must not be longer than the period (24h for a Day, 168h for a Week, 672h for a Month)`},
		"defaultMaxRuntime longer than rollingDays": {`{hours: {cpu: "10"}, rollingDays: 1, defaultMaxRuntime: 48h}`,
			`spec.usageLimits: Invalid value: defaultMaxRuntime must not be longer than rollingDays`},
		"zero defaultMaxRuntime": {`{hours: {cpu: "10"}, period: Month, defaultMaxRuntime: 0s}`,
			`spec.usageLimits.defaultMaxRuntime: Invalid value: "0s": defaultMaxRuntime must be greater than zero`},
		"halfLife below 1m": {`{hours: {cpu: "10"}, halfLife: 30s}`,
			`spec.usageLimits.halfLife: Invalid value: "30s": halfLife must be at least 1m`},
		"defaultMaxRuntime not a Go duration": {`{hours: {cpu: "10"}, period: Month, defaultMaxRuntime: "2 hours"}`,
			`spec.usageLimits.defaultMaxRuntime: Invalid value: "2 hours": spec.usageLimits.defaultMaxRuntime in body should match ` + durationPattern},
		"halfLife not a Go duration": {`{hours: {cpu: "10"}, halfLife: "2 hours"}`,
			`spec.usageLimits.halfLife: Invalid value: "2 hours": spec.usageLimits.halfLife in body should match ` + durationPattern},
		"period Year": {`{hours: {cpu: "10"}, period: Year}`,
			`[spec.usageLimits.period: Unsupported value: "Year": supported values: "Day", "Week", "Month"` + celSkipped},
		"exhaustion Kill": {`{hours: {cpu: "10"}, period: Month, exhaustion: Kill}`,
			`[spec.usageLimits.exhaustion: Unsupported value: "Kill": supported values: "Hold", "Evict"` + celSkipped},
	}
	i := 0
	for name, tc := range bad {
		i++
		for _, kind := range []string{"Budget", "ClusterBudget"} {
			t.Run("refused/"+kind+"/"+name, func(t *testing.T) {
				obj := object(t, kind, fmt.Sprintf("usage-%d", i), `{hard: {cpu: "4"}, usageLimits: `+tc.usage+`}`)
				err := api.create(t.Context(), obj)
				if !apierrors.IsInvalid(err) {
					t.Fatalf("creating usageLimits %s: err = %v, want it refused as invalid", tc.usage, err)
				}
				want := fmt.Sprintf("%s.quotagate.io %q is invalid: %s", kind, obj.GetName(), tc.want)
				if got := err.Error(); got != want {
					t.Errorf("creating usageLimits %s:\n got  %s\n want %s", tc.usage, got, want)
				}
			})
		}
	}
	for name, usage := range map[string]string{
		"monthly-gpus": `{hours: {nvidia.com/gpu: "1000"}, period: Month, timeZone: Europe/Berlin, defaultMaxRuntime: 48h, exhaustion: Evict}`,
		"rolling-week": `{hours: {cpu: 100m}, rollingDays: 7}`,
		"decayed":      `{hours: {cpu: "10", memory: 64Gi}, halfLife: 168h, defaultMaxRuntime: 2h}`,
		"weekly":       `{hours: {cpu: "1"}, period: Week, defaultMaxRuntime: 168h}`,
		"one-day":      `{hours: {cpu: "1"}, rollingDays: 1, defaultMaxRuntime: 24h}`,
	} {
		for _, kind := range []string{"Budget", "ClusterBudget"} {
			t.Run("accepted/"+kind+"/"+name, func(t *testing.T) {
				if err := api.create(t.Context(), object(t, kind, "ok-"+name, `{hard: {cpu: "4"}, usageLimits: `+usage+`}`)); err != nil {
					t.Errorf("creating usageLimits %s: %v", usage, err)
				}
			})
		}
	}

	// status.usage as the manager writes it for rollingDays: a day that is not
	// YYYY-MM-DD is refused, the same status with a well-formed day is accepted.
	for _, kind := range []string{"Budget", "ClusterBudget"} {
		t.Run("status/"+kind, func(t *testing.T) {
			obj := object(t, kind, "usage-status", `{hard: {cpu: "4"}, usageLimits: {hours: {cpu: "100"}, rollingDays: 7}}`)
			if err := api.create(t.Context(), obj); err != nil {
				t.Fatal(err)
			}
			write := func(date string) error {
				cur, err := api.resource(obj).Get(t.Context(), obj.GetName(), metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				cur.Object["status"] = map[string]any{"usage": map[string]any{
					"period": "last 7 days", "periodStart": "2026-11-30T00:00:00Z", "asOf": "2026-12-06T12:00:00.000000Z",
					"used": map[string]any{"cpu": "12"}, "reserved": map[string]any{"cpu": "4"},
					"days": []any{map[string]any{"date": date, "used": map[string]any{"cpu": "12"}}},
				}}
				_, err = api.resource(obj).UpdateStatus(t.Context(), cur, metav1.UpdateOptions{})
				return err
			}
			err := write("2026-12-6")
			want := fmt.Sprintf(`%s.quotagate.io %q is invalid: status.usage.days[0].date: Invalid value: "2026-12-6": usage.days[0].date in body should match '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'`, kind, obj.GetName())
			if err == nil || err.Error() != want {
				t.Errorf("status.usage.days[0].date = 2026-12-6: err = %v, want %s", err, want)
			}
			if err := write("2026-12-06"); err != nil {
				t.Errorf("a status.usage the manager writes was refused: %v", err)
			}
		})
	}
}

// TestFairSharingMemoryValidation: spec.fairSharing.usageHalfLife below a minute, or
// not a Go duration, is refused; a day is accepted.
func TestFairSharingMemoryValidation(t *testing.T) {
	api, _ := startAPIServer(t)
	for name, tc := range map[string]struct{ halfLife, want string }{
		"below 1m":          {`30s`, `spec.fairSharing.usageHalfLife: Invalid value: "30s": usageHalfLife must be at least 1m`},
		"not a Go duration": {`"a day"`, `spec.fairSharing.usageHalfLife: Invalid value: "a day": spec.fairSharing.usageHalfLife in body should match '^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$'`},
	} {
		t.Run("refused/"+name, func(t *testing.T) {
			obj := object(t, "ClusterBudget", "memory-"+fmt.Sprint(len(name)), `{hard: {cpu: "4"}, fairSharing: {usageHalfLife: `+tc.halfLife+`}}`)
			err := api.create(t.Context(), obj)
			if !apierrors.IsInvalid(err) {
				t.Fatalf("err = %v, want it refused as invalid", err)
			}
			if want := fmt.Sprintf("ClusterBudget.quotagate.io %q is invalid: %s", obj.GetName(), tc.want); err.Error() != want {
				t.Errorf("\n got  %s\n want %s", err.Error(), want)
			}
		})
	}
	if err := api.create(t.Context(), object(t, "ClusterBudget", "memory-ok", `{hard: {cpu: "4"}, fairSharing: {usageHalfLife: 24h}}`)); err != nil {
		t.Errorf("usageHalfLife 24h: %v", err)
	}
}
