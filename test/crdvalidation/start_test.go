package crdvalidation_test

import (
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// TestStartValidation: a Budget's and a ClusterBudget's spec.start on a real
// kube-apiserver: each bad rule is refused with the message docs/validation.md shows
// ("Start rules"), the good ones are accepted.
func TestStartValidation(t *testing.T) {
	api, _ := startAPIServer(t)

	bad := map[string]struct{ start, want string }{
		"empty": {`{}`,
			`spec.start: Invalid value: set notBefore, schedule with duration, or both`},
		"schedule without duration": {`{schedule: "0 22 * * *"}`,
			`spec.start: Invalid value: schedule and duration go together: pods start only within duration of each firing`},
		"timeZone without schedule": {`{notBefore: "2026-12-24T18:00:00+01:00", timeZone: Europe/Berlin}`,
			`spec.start: Invalid value: timeZone is for schedule: notBefore carries its own offset`},
		"four fields": {`{schedule: "0 22 * *", duration: 8h}`,
			`spec.start.schedule: Invalid value: "0 22 * *": schedule must be a cron expression of five fields separated by spaces: minute hour day-of-month month day-of-week (the time zone goes in timeZone)`},
		"zero duration": {`{schedule: "0 22 * * *", duration: 0s}`,
			`spec.start.duration: Invalid value: "0s": duration must be greater than zero`},
	}
	i := 0
	for name, tc := range bad {
		i++
		for _, kind := range []string{"Budget", "ClusterBudget"} {
			t.Run("refused/"+kind+"/"+name, func(t *testing.T) {
				obj := object(t, kind, fmt.Sprintf("start-%d", i), `{hard: {cpu: "4"}, start: `+tc.start+`}`)
				err := api.create(t.Context(), obj)
				if !apierrors.IsInvalid(err) {
					t.Fatalf("creating start %s: err = %v, want it refused as invalid", tc.start, err)
				}
				want := fmt.Sprintf("%s.quotagate.io %q is invalid: %s", kind, obj.GetName(), tc.want)
				if got := err.Error(); got != want {
					t.Errorf("creating start %s:\n got  %s\n want %s", tc.start, got, want)
				}
			})
		}
	}
	for name, start := range map[string]string{
		"at":      `{notBefore: "2026-12-24T18:00:00+01:00"}`,
		"nightly": `{schedule: "0 22 * * *", duration: 8h, timeZone: Europe/Berlin}`,
		"both":    `{notBefore: "2026-12-24T18:00:00Z", schedule: "0 22 * * 1-5", duration: 90m}`,
	} {
		t.Run("accepted/"+name, func(t *testing.T) {
			if err := api.create(t.Context(), object(t, "Budget", "ok-"+name, `{hard: {cpu: "4"}, start: `+start+`}`)); err != nil {
				t.Errorf("creating start %s: %v", start, err)
			}
		})
	}
}
