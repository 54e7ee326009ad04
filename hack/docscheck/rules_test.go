package docscheck

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The extraction rules on their own, on text written for them: each finds what it must
// and reports what is wrong.

func TestCheckJSONPath(t *testing.T) {
	kinds := append(crdKinds(t), builtinKinds()...)
	budget, _ := kindFor(kinds, "budgets.quotagate.io")
	pod, _ := kindFor(kinds, "po")
	for name, tc := range map[string]struct {
		k        kind
		template string
		want     []string
	}{
		"a status field":        {budget, "{.status.admittedPods}", nil},
		"a map key":             {budget, "{.spec.hard.requests\\.cpu}", nil},
		"a filter on a list":    {budget, `{.status.conditions[?(@.type=="Ready")].message}`, nil},
		"recursive":             {budget, "{..name}", nil},
		"two expressions":       {budget, "{.status.state} {.status.gatedPods}", nil},
		"a pod's field":         {pod, "{.spec.schedulingGates[*].name}", nil},
		"a field that is not":   {budget, "{.status.neverFit}", []string{"no field status.neverFit in Budget"}},
		"a filter's field":      {budget, `{.status.conditions[?(@.typ=="Ready")].message}`, []string{"no field status.conditions[].typ in Budget"}},
		"after a list":          {budget, `{.status.conditions[0].mesage}`, []string{"no field status.conditions[].mesage in Budget"}},
		"a pod field on Budget": {budget, "{.spec.nodeName}", []string{"no field spec.nodeName in Budget"}},
		"does not parse":        {budget, "{.status.state", []string{"does not parse: unclosed action"}},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, checkJSONPath(tc.k, tc.template)); diff != "" {
				t.Errorf("checkJSONPath(%s) (-want +got):\n%s", tc.template, diff)
			}
		})
	}
}

func TestExtraction(t *testing.T) {
	if got := fieldRef.FindAllStringSubmatch("`object.spec.nodeName` and `.status.used` and spec.hard", -1); len(got) != 2 ||
		got[0][1] != "status.used" || got[1][1] != "spec.hard" {
		t.Errorf("fieldRef found %q, want status.used and spec.hard (not the CEL object.spec.nodeName)", got)
	}
	if diff := cmp.Diff([]string{"status", "conditions", "[]", "message"}, splitPath(`status.conditions[?(x)].message`)); diff != "" {
		t.Errorf("splitPath (-want +got):\n%s", diff)
	}
	if got := firstArg("-n team-a -o jsonpath='{.x}' budget/team-a"); got != "budget/team-a" {
		t.Errorf("firstArg = %q", got)
	}
	if m := enumValue.FindStringSubmatch("status.state: Closed"); m == nil || m[1] != "status.state" || m[2] != "Closed" {
		t.Errorf("enumValue = %q", m)
	}
	if m := enumValue.FindStringSubmatch(`spec.state: Unsupported value: "Closing"`); m != nil {
		t.Errorf("enumValue took an error message for a value: %q", m)
	}
	metrics := map[string]*metric{
		"quotagate_budget_hard":           {name: "quotagate_budget_hard", typ: "gauge"},
		"quotagate_budget_used":           {name: "quotagate_budget_used", typ: "gauge"},
		"quotagate_budget_never_fit_pods": {name: "quotagate_budget_never_fit_pods", typ: "gauge"},
		"quotagate_pod_wait_seconds":      {name: "quotagate_pod_wait_seconds", typ: "histogram"},
		"quotagate_queue_depth":           {name: "quotagate_queue_depth", typ: "gauge"},
	}
	for name, want := range map[string]bool{
		"quotagate_pod_wait_seconds_bucket": true,
		"quotagate_pod_wait_seconds_count":  true,
		"quotagate_queue_depth_count":       false, // a gauge has no _count
		"quotagate_budget_*":                true,
		"quotagate_budget_usd":              false,
	} {
		if got := registered(metrics, name); got != want {
			t.Errorf("registered(%s) = %v, want %v", name, got, want)
		}
	}
	if got := abbreviated(metrics, "quotagate_budget_hard", "_never_fit_pods"); got != "quotagate_budget_never_fit_pods" {
		t.Errorf("abbreviated = %q", got)
	}
}

func TestChartValuesHas(t *testing.T) {
	values := readValues(t)
	for path, want := range map[string]bool{
		"manager.workers":                        true,
		"metrics.prometheus.serviceAccount.name": true,
		"metrics.serviceMonitor.labels.release":  true, // a map left to the user
		"manager.lendHold":                       false,
		"manager.workers.max":                    false, // below a scalar
	} {
		if got := values.has(path); got != want {
			t.Errorf("has(%s) = %v, want %v", path, got, want)
		}
	}
}
