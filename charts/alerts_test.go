package charts_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/rules"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// promParser parses PromQL as Prometheus does.
var promParser = parser.NewParser(parser.Options{})

// renderedRule is one alerting rule of the chart's PrometheusRule.
type renderedRule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// chartRules renders the chart with the PrometheusRule on and returns its rules by alert.
func chartRules(t *testing.T) map[string]renderedRule {
	t.Helper()
	m := mustInstall(t, defaultRelease, defaultNamespace, map[string]any{
		"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true}},
	})
	pr := m.find(t, "PrometheusRule", "quotagate")
	groups, _, err := unstructured.NestedSlice(pr.Object, "spec", "groups")
	if err != nil || len(groups) != 1 {
		t.Fatalf("PrometheusRule groups %v (%v), want one", groups, err)
	}
	out := map[string]renderedRule{}
	for _, r := range groups[0].(map[string]any)["rules"].([]any) {
		var rr renderedRule
		if err := kruntimeFromUnstructured(&unstructured.Unstructured{Object: r.(map[string]any)}, &rr); err != nil {
			t.Fatal(err)
		}
		out[rr.Alert] = rr
	}
	return out
}

// alertCase is a set of synthetic series (promqltest's load syntax, one sample a minute)
// and whether the alert fires when evaluated every minute up to `at` minutes.
type alertCase struct {
	alert  string
	name   string
	series string
	at     int
	firing bool
}

const (
	mgr = `job="quotagate-manager-metrics"`
	wh  = `job="quotagate-webhook"`
	// leaderA: replica a leads; budget series of a count.
	leaderA = `leader_election_master_status{` + mgr + `,instance="a",name="quotagate-manager"} 1x60`
	budget  = `kind="Budget",namespace="team",name="b"`
)

// stuck is a budget on replica a gating 3 pods with room for all of them, unless
// the arguments say otherwise.
func stuck(used, pending, hard, admissions string) string {
	return strings.Join([]string{
		leaderA,
		`quotagate_budget_gated_pods{` + mgr + `,instance="a",` + budget + `} 3x60`,
		`quotagate_budget_state{` + mgr + `,instance="a",` + budget + `,state="Open"} 1x60`,
		`quotagate_budget_ready{` + mgr + `,instance="a",` + budget + `} 1x60`,
		`quotagate_budget_used{` + mgr + `,instance="a",` + budget + `,resource="cpu"} ` + used,
		`quotagate_budget_pending{` + mgr + `,instance="a",` + budget + `,resource="cpu"} ` + pending,
		`quotagate_budget_hard{` + mgr + `,instance="a",` + budget + `,resource="cpu"} ` + hard,
		`quotagate_budget_admissions_total{` + mgr + `,instance="a",` + budget + `} ` + admissions,
	}, "\n")
}

var alertCases = []alertCase{
	{"QuotagateManagerDown", "no replica up for 10m", `up{` + mgr + `,instance="a"} 0x60`, 10, true},
	{"QuotagateManagerDown", "no series at all", `up{job="other"} 1x60`, 10, true},
	{"QuotagateManagerDown", "down 3m, then up (for: 5m)", `up{` + mgr + `,instance="a"} 0 0 0 1x60`, 10, false},
	{"QuotagateManagerDown", "one of two up", `up{` + mgr + `,instance="a"} 0x60` + "\n" + `up{` + mgr + `,instance="b"} 1x60`, 10, false},
	{"QuotagateNoLeader", "both standby", `leader_election_master_status{` + mgr + `,instance="a"} 0x60` + "\n" + `leader_election_master_status{` + mgr + `,instance="b"} 0x60`, 10, true},
	{"QuotagateNoLeader", "one leads", `leader_election_master_status{` + mgr + `,instance="a"} 0x60` + "\n" + `leader_election_master_status{` + mgr + `,instance="b"} 1x60`, 10, false},
	{"QuotagateNoLeader", "a 2m failover", `leader_election_master_status{` + mgr + `,instance="a"} 1 1 0 0 0x60` + "\n" + `leader_election_master_status{` + mgr + `,instance="b"} 0 0 0 0 1x60`, 10, false},
	{"QuotagateWebhookDown", "no replica up", `up{` + wh + `,instance="a"} 0x60`, 10, true},
	{"QuotagateWebhookDown", "up", `up{` + wh + `,instance="a"} 1x60`, 10, false},
	{"QuotagateWebhookErrors", "9% errored", `quotagate_webhook_requests_total{` + wh + `,result="errored"} 0+10x60` + "\n" + `quotagate_webhook_requests_total{` + wh + `,result="gated"} 0+100x60`, 20, true},
	{"QuotagateWebhookErrors", "none errored", `quotagate_webhook_requests_total{` + wh + `,result="errored"} 0x60` + "\n" + `quotagate_webhook_requests_total{` + wh + `,result="gated"} 0+100x60`, 20, false},
	{"QuotagateWebhookErrors", "errors for 3m only (for: 5m)", `quotagate_webhook_requests_total{` + wh + `,result="errored"} 0 10 20 30 30x60` + "\n" + `quotagate_webhook_requests_total{` + wh + `,result="gated"} 0+100x60`, 20, false},
	{"QuotagateWebhookLatencyHigh", "p99 between 1s and 5s", latency("0x60", "0x60", "0+100x60"), 30, true},
	{"QuotagateWebhookLatencyHigh", "p99 under 100ms", latency("0+100x60", "0+100x60", "0+100x60"), 30, false},
	{"QuotagateQueueStuck", "room for all, no admission for 30m", stuck("2x60", "1x60", "4x60", "5x60"), 40, true},
	{"QuotagateQueueStuck", "stuck for 10m only (for: 15m)", stuck("2x60", "1x60", "4x60", "5x60"), 10, false},
	{"QuotagateQueueStuck", "no room: used+pending over hard", stuck("4x60", "1x60", "4x60", "5x60"), 40, false},
	{"QuotagateQueueStuck", "admitting", stuck("2x60", "1x60", "4x60", "5+1x60"), 40, false},
	{"QuotagateQueueStuck", "a standby's stale series", strings.ReplaceAll(stuck("2x60", "1x60", "4x60", "5x60"), leaderA, `leader_election_master_status{`+mgr+`,instance="a"} 0x60`), 40, false},
	{"QuotagateBudgetNeverFit", "a pod never fits for 30m", leaderA + "\n" + `quotagate_budget_never_fit_pods{` + mgr + `,instance="a",` + budget + `} 1x60`, 30, true},
	{"QuotagateBudgetNeverFit", "for 10m, then deleted", leaderA + "\n" + `quotagate_budget_never_fit_pods{` + mgr + `,instance="a",` + budget + `} 1x10 0x50`, 30, false},
	{"QuotagateUngateErrors", "1 error a second", `quotagate_ungate_errors_total{` + mgr + `,instance="a",reason="Conflict"} 0+60x60`, 30, true},
	{"QuotagateUngateErrors", "1 error a minute", `quotagate_ungate_errors_total{` + mgr + `,instance="a",reason="Conflict"} 0+1x60`, 30, false},
	{"QuotagatePreemptionBlocked", "refused every minute for 40m", `quotagate_preemption_attempts_failed_total{` + mgr + `,instance="a",reason="Reclaim"} 0+1x60`, 45, true},
	{"QuotagatePreemptionBlocked", "refused for 10m, then let through", `quotagate_preemption_attempts_failed_total{` + mgr + `,instance="a",reason="Reclaim"} 0+1x10 10x50`, 45, false},
	{"QuotagatePreemptionBlocked", "refused for 20m only (for: 30m)", `quotagate_preemption_attempts_failed_total{` + mgr + `,instance="a",reason="Reclaim"} 0+1x20 20x40`, 25, false},
}

// The hour budgets' gauges of budget team/b's cpu on replica a: resource-hours used in
// the period (period="2026-12"), reserved by its running pods, and its limit of 100.
const (
	hoursUsed     = `quotagate_budget_hours_used{` + mgr + `,instance="a",` + budget + `,resource="cpu",period="2026-12"} `
	hoursReserved = `quotagate_budget_hours_reserved{` + mgr + `,instance="a",` + budget + `,resource="cpu"} `
	hoursLimit    = `quotagate_budget_hours_limit{` + mgr + `,instance="a",` + budget + `,resource="cpu"} `
	hoursReset    = `quotagate_budget_hours_reset_timestamp_seconds{` + mgr + `,instance="a",` + budget + `} `
)

// hours is budget team/b on replica a, which leads, with the given used, reserved and
// limit series of its cpu hours (each left out when "").
func hours(used, reserved, limit string) string {
	lines := []string{leaderA}
	for _, s := range [][2]string{{hoursUsed, used}, {hoursReserved, reserved}, {hoursLimit, limit}} {
		if s[1] != "" {
			lines = append(lines, s[0]+s[1])
		}
	}
	return strings.Join(lines, "\n")
}

// hoursAlertCases are the cases of QuotagateBudgetHoursRunningOut (over 90% used or
// reserved for 15m) and QuotagateBudgetHoursExhausted (all of it for 5m).
var hoursAlertCases = []alertCase{
	{"QuotagateBudgetHoursRunningOut", "95% used or reserved for 20m", hours("60x60", "35x60", "100x60"), 20, true},
	{"QuotagateBudgetHoursRunningOut", "95% for 10m only (for: 15m)", hours("60x60", "35x60", "100x60"), 10, false},
	{"QuotagateBudgetHoursRunningOut", "85%: below 90%", hours("60x60", "25x60", "100x60"), 30, false},
	{"QuotagateBudgetHoursRunningOut", "91% used, no reserved series", hours("91x60", "", "100x60"), 20, true},
	{"QuotagateBudgetHoursRunningOut", "91% reserved, no used series", hours("", "91x60", "100x60"), 20, true},
	{"QuotagateBudgetHoursRunningOut", "no limit series", hours("60x60", "35x60", ""), 30, false},
	{"QuotagateBudgetHoursRunningOut", "a limit of 0, some used before it was set", hours("5x60", "0x60", "0x60"), 30, false},
	{"QuotagateBudgetHoursRunningOut", "rises past 90% at 10m", hours("0+5x60", "40x60", "100x60"), 20, false},
	{"QuotagateBudgetHoursRunningOut", "a standby's stale series", strings.ReplaceAll(hours("60x60", "35x60", "100x60"), leaderA, `leader_election_master_status{`+mgr+`,instance="a"} 0x60`), 20, false},
	{"QuotagateBudgetHoursRunningOut", "another budget's limit does not join",
		hours("60x60", "35x60", "") + "\n" + strings.ReplaceAll(hoursLimit, `name="b"`, `name="c"`) + "100x60", 20, false},
	{"QuotagateBudgetHoursRunningOut", "a ClusterBudget",
		strings.ReplaceAll(hours("60x60", "35x60", "100x60"), budget, `kind="ClusterBudget",namespace="",name="org"`), 20, true},
	{"QuotagateBudgetHoursRunningOut", "the period resets: the old period's series goes stale",
		leaderA + "\n" + strings.ReplaceAll(hoursUsed, "2026-12", "2026-11") + "95x20 stale\n" +
			hoursUsed + "_x20 0x40\n" + hoursReserved + "0x60\n" + hoursLimit + "100x60", 40, false},
	{"QuotagateBudgetHoursExhausted", "all used or reserved for 10m", hours("60x60", "40x60", "100x60"), 10, true},
	{"QuotagateBudgetHoursExhausted", "over the limit (Hold)", hours("120x60", "0x60", "100x60"), 10, true},
	{"QuotagateBudgetHoursExhausted", "all for 3m only (for: 5m)", hours("60x60", "40x60", "100x60"), 3, false},
	{"QuotagateBudgetHoursExhausted", "99%: below the limit", hours("60x60", "39x60", "100x60"), 30, false},
	{"QuotagateBudgetHoursExhausted", "full, then pods ended early and freed their reservations", hours("60x60", "40x10 20x50", "100x60"), 30, false},
	{"QuotagateBudgetHoursExhausted", "no limit series", hours("60x60", "40x60", ""), 30, false},
	{"QuotagateBudgetHoursExhausted", "a limit of 0, some used before it was set", hours("5x60", "0x60", "0x60"), 30, false},
	{"QuotagateBudgetHoursExhausted", "a standby's stale series", strings.ReplaceAll(hours("60x60", "40x60", "100x60"), leaderA, `leader_election_master_status{`+mgr+`,instance="a"} 0x60`), 10, false},
}

func init() { alertCases = append(alertCases, hoursAlertCases...) }

// latency is the webhook latency histogram with the given le=0.1, le=1 and le=5 (and
// +Inf, as le=5) bucket series.
func latency(b01, b1, b5 string) string {
	h := `controller_runtime_webhook_latency_seconds_bucket{` + wh + `,instance="a",webhook="/mutate-v1-pod",le="%s"} %s`
	return strings.Join([]string{fmt.Sprintf(h, "0.1", b01), fmt.Sprintf(h, "1", b1), fmt.Sprintf(h, "5", b5), fmt.Sprintf(h, "+Inf", b5)}, "\n")
}

// Every alert of the chart's PrometheusRule, evaluated by Prometheus' rule engine
// against synthetic series, fires when it should and stays silent when it should not.
func TestAlertRules(t *testing.T) {
	got := chartRules(t)
	tested := map[string]bool{}
	for _, tc := range alertCases {
		tested[tc.alert] = true
		t.Run(tc.alert+"/"+tc.name, func(t *testing.T) {
			r, ok := got[tc.alert]
			if !ok {
				t.Fatalf("the chart has no alert %s", tc.alert)
			}
			firing := evalRule(t, r, tc.series, tc.at)
			if (len(firing) > 0) != tc.firing {
				t.Errorf("%s at %dm: firing = %v, want %v\nexpr: %s", tc.alert, tc.at, len(firing) > 0, tc.firing, r.Expr)
			}
			for _, a := range firing {
				a.Annotations.Range(func(l labels.Label) {
					if strings.Contains(l.Value, "error expanding template") {
						t.Errorf("%s: annotation %s: %s", tc.alert, l.Name, l.Value)
					}
				})
			}
		})
	}
	for name, r := range got {
		if !tested[name] {
			t.Errorf("alert %s has no test case", name)
		}
		if u := r.Annotations["runbook_url"]; !strings.Contains(u, "docs/runbook.md#"+strings.ToLower(name)) {
			t.Errorf("alert %s: runbook_url %q, want docs/runbook.md#%s", name, u, strings.ToLower(name))
		}
		if r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
			t.Errorf("alert %s has no severity or summary", name)
		}
	}
}

// evalRule loads series and evaluates r every minute from 0 to at minutes; it returns
// the alerts that fire at the end, their annotations expanded.
func evalRule(t *testing.T, r renderedRule, series string, at int) []*rules.Alert {
	t.Helper()
	expr, err := promParser.ParseExpr(r.Expr)
	if err != nil {
		t.Fatalf("parsing %s: %v", r.Expr, err)
	}
	hold, err := model.ParseDuration(r.For)
	if err != nil {
		t.Fatalf("for %q: %v", r.For, err)
	}
	st := promqltest.LoadedStorage(t, "load 1m\n"+indent(series))
	engine := promqltest.NewTestEngine(t, false, 0, promqltest.DefaultMaxSamplesPerQuery)
	rule := rules.NewAlertingRule(r.Alert, expr, time.Duration(hold), 0, labels.FromMap(r.Labels),
		labels.FromMap(r.Annotations), labels.EmptyLabels(), "", false, slog.New(slog.DiscardHandler))
	query := rules.EngineQueryFunc(engine, st)
	for m := 0; m <= at; m++ {
		if _, err := rule.Eval(t.Context(), 0, time.Unix(0, 0).Add(time.Duration(m)*time.Minute), query, nil, 0); err != nil {
			t.Fatalf("evaluating at %dm: %v", m, err)
		}
	}
	var firing []*rules.Alert
	for _, a := range rule.ActiveAlerts() {
		if a.State == rules.StateFiring {
			firing = append(firing, a)
		}
	}
	return firing
}

func indent(s string) string { return "  " + strings.ReplaceAll(s, "\n", "\n  ") }

// In policy mode there is no webhook: its three alerts would fire for ever, so the
// chart leaves them out and keeps the others.
func TestPolicyModeHasNoWebhookAlerts(t *testing.T) {
	m, err := installAPI(map[string]any{
		"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true}},
	}, mapVersion)
	if err != nil {
		t.Fatalf("rendering in admission.mode auto on a cluster with MutatingAdmissionPolicy: %v", err)
	}
	pr := m.find(t, "PrometheusRule", "quotagate")
	groups, _, err := unstructured.NestedSlice(pr.Object, "spec", "groups")
	if err != nil || len(groups) != 1 {
		t.Fatalf("PrometheusRule groups %v (%v), want one", groups, err)
	}
	var got []string
	for _, r := range groups[0].(map[string]any)["rules"].([]any) {
		got = append(got, r.(map[string]any)["alert"].(string))
	}
	want := []string{"QuotagateManagerDown", "QuotagateNoLeader", "QuotagateQueueStuck",
		"QuotagateBudgetNeverFit", "QuotagateUngateErrors", "QuotagatePreemptionBlocked",
		"QuotagateBudgetHoursRunningOut", "QuotagateBudgetHoursExhausted"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("alerts in policy mode (-want +got):\n%s", diff)
	}
}

// The hour alerts name the budget and the resource, and QuotagateBudgetHoursExhausted
// says when a calendar period resets (the reset gauge, queried from the description),
// or, for a rollingDays or halfLife budget (no reset gauge), how hours come back.
func TestBudgetHoursAlertAnnotations(t *testing.T) {
	got := chartRules(t)
	// 2027-01-01T00:00:00Z, when the December period ends.
	const reset = 1798761600
	for _, tc := range []struct {
		name, alert, series string
		want                map[string][]string
	}{{
		name: "a Month budget", alert: "QuotagateBudgetHoursExhausted",
		series: hours("60x60", "40x60", "100x60") + "\n" + hoursReset + fmt.Sprintf("%dx60", reset),
		want: map[string][]string{
			"summary":     {"Budget team/b has used or reserved all its cpu hours"},
			"description": {"Budget team/b:", "come to 100 cpu-hours", "until the period resets at 2027-01-01 00:00:00 +0000 UTC"},
		},
	}, {
		name: "a rollingDays budget", alert: "QuotagateBudgetHoursExhausted",
		series: hours("60x60", "40x60", "100x60"),
		want: map[string][]string{
			"description": {"until older usage leaves its rollingDays window or decays (halfLife)"},
		},
	}, {
		name: "another budget's reset", alert: "QuotagateBudgetHoursExhausted",
		series: hours("60x60", "40x60", "100x60") + "\n" + strings.ReplaceAll(hoursReset, `name="b"`, `name="c"`) + fmt.Sprintf("%dx60", reset),
		want: map[string][]string{
			"description": {"until older usage leaves its rollingDays window"},
		},
	}, {
		name: "a ClusterBudget", alert: "QuotagateBudgetHoursRunningOut",
		series: strings.ReplaceAll(hours("60x60", "35x60", "100x60"), budget, `kind="ClusterBudget",namespace="",name="org"`),
		want: map[string][]string{
			"summary":     {"ClusterBudget org has used or reserved 95% of its cpu hours."},
			"description": {"over 90% of spec.usageLimits.hours for cpu"},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			firing := evalRule(t, got[tc.alert], tc.series, 20)
			if len(firing) != 1 {
				t.Fatalf("%s: %d alerts fire, want 1", tc.alert, len(firing))
			}
			if l := firing[0].Labels; l.Get("resource") != "cpu" || l.Get("period") != "" || l.Get("instance") != "" {
				t.Errorf("%s labels %s, want the budget's and resource=\"cpu\" only", tc.alert, l)
			}
			for name, parts := range tc.want {
				a := firing[0].Annotations.Get(name)
				for _, p := range parts {
					if !strings.Contains(a, p) {
						t.Errorf("%s %s = %q, want it to contain %q", tc.alert, name, a, p)
					}
				}
			}
		})
	}
}
