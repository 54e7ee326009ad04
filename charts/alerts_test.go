package charts_test

import (
	"fmt"
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
			if firing := evalRule(t, r, tc.series, tc.at); firing != tc.firing {
				t.Errorf("%s at %dm: firing = %v, want %v\nexpr: %s", tc.alert, tc.at, firing, tc.firing, r.Expr)
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

// evalRule loads series and evaluates r every minute from 0 to at minutes; it reports
// whether r fires at the end.
func evalRule(t *testing.T, r renderedRule, series string, at int) bool {
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
		labels.EmptyLabels(), labels.EmptyLabels(), "", false, nil)
	query := rules.EngineQueryFunc(engine, st)
	for m := 0; m <= at; m++ {
		if _, err := rule.Eval(t.Context(), 0, time.Unix(0, 0).Add(time.Duration(m)*time.Minute), query, nil, 0); err != nil {
			t.Fatalf("evaluating at %dm: %v", m, err)
		}
	}
	for _, a := range rule.ActiveAlerts() {
		if a.State == rules.StateFiring {
			return true
		}
	}
	return false
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
		"QuotagateBudgetNeverFit", "QuotagateUngateErrors", "QuotagatePreemptionBlocked"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("alerts in policy mode (-want +got):\n%s", diff)
	}
}
