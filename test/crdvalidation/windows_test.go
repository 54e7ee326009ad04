package crdvalidation_test

import (
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestWindowValidation: BudgetWindow and ClusterBudgetWindow on a real kube-apiserver:
// each bad spec is refused with the message docs/validation.md shows ("Windows"), the
// good ones are accepted.
func TestWindowValidation(t *testing.T) {
	api, cfg := startAPIServer(t)

	const abs = `budgetName: b, start: "2026-12-07T08:00:00+01:00", end: "2026-12-12T00:00:00+01:00"`
	const sched = `budgetName: b, schedule: "0 22 * * *", duration: 8h`
	bad := map[string]struct{ spec, want string }{
		"both forms": {`{` + abs + `, schedule: "0 22 * * *", duration: 8h, hard: {cpu: "4"}}`,
			`spec: Invalid value: set either start and end (an absolute window) or schedule with duration (a repeating window), not both and not neither`},
		"neither form": {`{budgetName: b, hard: {cpu: "4"}}`,
			`spec: Invalid value: set either start and end (an absolute window) or schedule with duration (a repeating window), not both and not neither`},
		"start without end": {`{budgetName: b, start: "2026-12-07T08:00:00Z", hard: {cpu: "4"}}`,
			`spec: Invalid value: start and end go together: an absolute window needs both`},
		"end before start": {`{budgetName: b, start: "2026-12-07T08:00:00Z", end: "2026-12-07T07:00:00Z", hard: {cpu: "4"}}`,
			`spec: Invalid value: end must be after start`},
		"schedule without duration": {`{budgetName: b, schedule: "0 22 * * *", hard: {cpu: "4"}}`,
			`spec: Invalid value: schedule and duration go together: a repeating window is open for duration each time schedule fires`},
		"timeZone with start and end": {`{` + abs + `, timeZone: Europe/Berlin, hard: {cpu: "4"}}`,
			`spec: Invalid value: timeZone is for schedule: start and end carry their own offset`},
		"hard and add": {`{` + abs + `, hard: {cpu: "4"}, add: {cpu: "4"}}`,
			`spec: Invalid value: set hard (the limit while open) or add (added to the written hard), not both`},
		"sets nothing": {`{` + abs + `}`,
			`spec: Invalid value: a window must set at least one of hard, add, state, borrowingLimit or lendingLimit`},
		"a descriptor": {`{budgetName: b, schedule: "@daily", duration: 8h, hard: {cpu: "4"}}`,
			`spec.schedule: Invalid value: "@daily": schedule must be a cron expression of five fields separated by spaces: minute hour day-of-month month day-of-week (the time zone goes in timeZone)`},
		"a zone prefix": {`{budgetName: b, schedule: "CRON_TZ=UTC 0 22 * * *", duration: 8h, hard: {cpu: "4"}}`,
			`spec.schedule: Invalid value: "CRON_TZ=UTC 0 22 * * *": schedule must be a cron expression of five fields separated by spaces: minute hour day-of-month month day-of-week (the time zone goes in timeZone)`},
		"zero duration": {`{budgetName: b, schedule: "0 22 * * *", duration: 0s, hard: {cpu: "4"}}`,
			`spec.duration: Invalid value: "0s": duration must be greater than zero`},
		"a day is not a Go duration": {`{budgetName: b, schedule: "0 22 * * *", duration: 1d, hard: {cpu: "4"}}`,
			`spec.duration: Invalid value: "1d": spec.duration in body should match '^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$'`},
		"an unknown endPolicy": {`{` + sched + `, hard: {cpu: "4"}, endPolicy: Evict}`,
			`[spec.endPolicy: Unsupported value: "Evict": supported values: "Hold", "Reclaim"` + celSkipped},
		"negative add": {`{` + sched + `, add: {cpu: "-1"}}`,
			`spec.add: Invalid value: add quantities must not be negative`},
	}
	i := 0
	for name, tc := range bad {
		i++
		for _, kind := range []string{"BudgetWindow", "ClusterBudgetWindow"} {
			t.Run("refused/"+kind+"/"+name, func(t *testing.T) {
				obj := object(t, kind, fmt.Sprintf("bad-%d", i), tc.spec)
				err := api.create(t.Context(), obj)
				if !apierrors.IsInvalid(err) {
					t.Fatalf("creating %s: err = %v, want it refused as invalid", tc.spec, err)
				}
				want := fmt.Sprintf("%s.quotagate.io %q is invalid: %s", kind, obj.GetName(), tc.want)
				if got := err.Error(); got != want {
					t.Errorf("creating %s:\n got  %s\n want %s", tc.spec, got, want)
				}
			})
		}
	}
	// A budget's status as the manager writes it with windows: the open ones, and the
	// one whose end it still reclaims from; kubectl get -o wide shows the open ones.
	t.Run("budget status", func(t *testing.T) {
		b := api.resource(object(t, "Budget", "", ""))
		if err := api.create(t.Context(), object(t, "Budget", "windowed", `{hard: {cpu: "4"}}`)); err != nil {
			t.Fatal(err)
		}
		cur, err := b.Get(t.Context(), "windowed", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Object["status"] = map[string]any{"state": "Open", "activeWindows": []any{"deadline", "nightly"},
			"nextWindowChange": "2026-12-12T00:00:00Z", "reclaimingAfterWindow": "weekend"}
		if _, err := b.UpdateStatus(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("a status with windows, as the manager writes it, was refused: %v", err)
		}
		cur, err = b.Get(t.Context(), "windowed", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got, _, _ := unstructured.NestedString(cur.Object, "status", "reclaimingAfterWindow"); got != "weekend" {
			t.Errorf("status.reclaimingAfterWindow read back as %q, want weekend", got)
		}
		if got := column(t, cfg, "namespaces/"+testNamespace+"/budgets/windowed", "Windows"); got != `["deadline","nightly"]` {
			t.Errorf("kubectl get -o wide's Windows column: %s", got)
		}
	})
	for name, spec := range map[string]string{
		"deadline":                   `{` + abs + `, hard: {nvidia.com/gpu: "64"}}`,
		"nightly":                    `{` + sched + `, timeZone: Europe/Berlin, state: Closed, priority: 5}`,
		"weekend":                    `{` + sched + `, add: {requests.cpu: "64"}, lendingLimit: {requests.cpu: "96"}, endPolicy: Hold}`,
		"deadline-then-back-to-hard": `{` + abs + `, add: {cpu: "4"}, endPolicy: Reclaim}`,
	} {
		t.Run("accepted/"+name, func(t *testing.T) {
			if err := api.create(t.Context(), object(t, "BudgetWindow", name, spec)); err != nil {
				t.Errorf("creating %s: %v", spec, err)
			}
		})
	}
}
