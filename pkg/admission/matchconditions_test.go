package admission

import (
	"encoding/json"
	"os"
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
func TestMatchConditionsAgreeWithSkipReasonFor(t *testing.T) {
	conditions := shippedMatchConditions(t)
	env, err := cel.NewEnv(cel.Variable("object", cel.DynType), cel.Variable("request", cel.DynType))
	if err != nil {
		t.Fatal(err)
	}
	programs := map[string]cel.Program{}
	for _, c := range conditions {
		ast, iss := env.Compile(c.Expression)
		if iss.Err() != nil {
			t.Fatalf("compiling matchCondition %s: %v", c.Name, iss.Err())
		}
		if programs[c.Name], err = env.Program(ast); err != nil {
			t.Fatalf("matchCondition %s: %v", c.Name, err)
		}
	}

	for name, tc := range skipCases() {
		t.Run(name, func(t *testing.T) {
			activation := map[string]any{"object": asJSONMap(t, tc.pod), "request": requestFor(t, tc.user)}
			called := true
			for _, c := range conditions {
				out, _, err := programs[c.Name].Eval(activation)
				if err != nil {
					t.Fatalf("evaluating matchCondition %s: %v", c.Name, err)
				}
				called = called && out.Value() == true
			}
			wantCalled := SkipReasonFor(tc.pod, tc.user, quotaGate) == ""
			if called != wantCalled {
				t.Errorf("webhook called = %v, want %v (SkipReasonFor = %q)", called, wantCalled, tc.want)
			}
		})
	}
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

func requestFor(t *testing.T, user authenticationv1.UserInfo) map[string]any {
	t.Helper()
	return map[string]any{"operation": "CREATE", "userInfo": asJSONMap(t, user)}
}
