package admission

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"sigs.k8s.io/yaml"
)

// The API server calls the webhook exactly for the pods SkipReasonFor would
// not skip: the shipped matchConditions (config/webhook; the chart tests
// compare the chart's with them) agree with the handler on every case of
// TestSkipReasonFor. The tests against the real API server check the same
// conditions there.
//
// The shipped conditions exempt no DaemonSet: their list of exempt DaemonSets
// is the empty CEL list, which the chart replaces with
// admission.exemptDaemonSets (charts/admission_mode_test.go checks that it
// changes nothing else); each case's exempt list is put in its place.
func TestMatchConditionsAgreeWithSkipReasonFor(t *testing.T) {
	shipped := shippedMatchConditions(t)
	env, err := cel.NewEnv(cel.Variable("object", cel.DynType), cel.Variable("request", cel.DynType))
	if err != nil {
		t.Fatal(err)
	}

	for name, tc := range skipCases() {
		t.Run(name, func(t *testing.T) {
			activation := map[string]any{"object": asJSONMap(t, tc.pod), "request": requestFor(t, tc.user, tc.pod.Namespace)}
			called := true
			for _, c := range withExempt(t, shipped, tc.exempt) {
				called = evalCondition(t, env, c, activation) && called
			}
			wantCalled := SkipReasonFor(tc.pod, tc.user, quotaGate, tc.exempt...) == ""
			if called != wantCalled {
				t.Errorf("webhook called = %v, want %v (SkipReasonFor = %q)", called, wantCalled, tc.want)
			}
		})
	}
}

// exemptListCondition is the matchCondition that holds the list of exempt
// DaemonSets, written [] where none is exempt.
const exemptListCondition = "not-exempt-daemonset-pod-from-its-controller"

// withExempt returns conditions with the exempt DaemonSets' CEL list, as the
// chart renders it ('namespace/name', ...), in place of the empty list.
func withExempt(t *testing.T, conditions []admissionregistrationv1.MatchCondition, exempt []DaemonSetRef) []admissionregistrationv1.MatchCondition {
	t.Helper()
	quoted := make([]string, 0, len(exempt))
	for _, r := range exempt {
		quoted = append(quoted, "'"+r.String()+"'")
	}
	out := slices.Clone(conditions)
	found := false
	for i, c := range out {
		if c.Name != exemptListCondition {
			continue
		}
		if strings.Count(c.Expression, " in []") != 1 {
			t.Fatalf("matchCondition %s does not hold the empty list of exempt DaemonSets once: %s", c.Name, c.Expression)
		}
		out[i].Expression = strings.Replace(c.Expression, " in []", " in ["+strings.Join(quoted, ", ")+"]", 1)
		found = true
	}
	if !found {
		t.Fatalf("no matchCondition %s", exemptListCondition)
	}
	return out
}

// evalCondition evaluates a matchCondition's CEL for activation.
func evalCondition(t *testing.T, env *cel.Env, c admissionregistrationv1.MatchCondition, activation map[string]any) bool {
	t.Helper()
	ast, iss := env.Compile(c.Expression)
	if iss.Err() != nil {
		t.Fatalf("compiling matchCondition %s: %v", c.Name, iss.Err())
	}
	prg, err := env.Program(ast)
	if err != nil {
		t.Fatalf("matchCondition %s: %v", c.Name, err)
	}
	out, _, err := prg.Eval(activation)
	if err != nil {
		t.Fatalf("evaluating matchCondition %s: %v", c.Name, err)
	}
	return out.Value() == true
}

// shippedMatchConditions reads the matchConditions that
// config/webhook/webhook_patch.yaml adds.
func shippedMatchConditions(t *testing.T) []admissionregistrationv1.MatchCondition {
	t.Helper()
	raw, err := os.ReadFile("../../config/webhook/webhook_patch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ops []struct {
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value"`
	}
	if err := yaml.Unmarshal(raw, &ops); err != nil {
		t.Fatalf("reading webhook_patch.yaml: %v", err)
	}
	for _, op := range ops {
		if op.Path == "/webhooks/0/matchConditions" {
			var conditions []admissionregistrationv1.MatchCondition
			if err := json.Unmarshal(op.Value, &conditions); err != nil {
				t.Fatalf("decoding matchConditions: %v", err)
			}
			return conditions
		}
	}
	t.Fatal("webhook_patch.yaml adds no matchConditions")
	return nil
}

// asJSONMap is v as the API server's CEL sees it: its JSON form.
func asJSONMap(t *testing.T, v any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func requestFor(t *testing.T, user authenticationv1.UserInfo, namespace string) map[string]any {
	t.Helper()
	return map[string]any{"operation": "CREATE", "namespace": namespace, "userInfo": asJSONMap(t, user)}
}
