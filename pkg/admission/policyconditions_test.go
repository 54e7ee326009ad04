package admission

import (
	"os"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"
)

// The shipped MutatingAdmissionPolicy (config/policy/admission) gates exactly
// the pods PodGater gates, and its bound-pod guard refuses exactly the pods
// PodGater refuses, on every case of TestSkipReasonFor (with each case's
// exempt DaemonSets in the conditions, as in TestMatchConditions). The tests
// against the real API server run the same admission cases in both modes.
func TestPolicyConditionsAgreeWithPodGater(t *testing.T) {
	gate, guard := shippedGatePolicy(t)
	env, err := cel.NewEnv(cel.Variable("object", cel.DynType), cel.Variable("request", cel.DynType))
	if err != nil {
		t.Fatal(err)
	}
	eval := func(t *testing.T, what, expr string, activation map[string]any) bool {
		t.Helper()
		ast, iss := env.Compile(expr)
		if iss.Err() != nil {
			t.Fatalf("compiling %s: %v", what, iss.Err())
		}
		prg, err := env.Program(ast)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		out, _, err := prg.Eval(activation)
		if err != nil {
			t.Fatalf("evaluating %s: %v", what, err)
		}
		return out.Value() == true
	}
	all := func(t *testing.T, conditions []admissionregistrationv1.MatchCondition, activation map[string]any) bool {
		t.Helper()
		match := true
		for _, c := range conditions {
			match = eval(t, "matchCondition "+c.Name, c.Expression, activation) && match
		}
		return match
	}
	if len(guard.Spec.Validations) != 1 {
		t.Fatalf("the bound-pod guard has %d validations, want 1", len(guard.Spec.Validations))
	}

	for name, tc := range skipCases() {
		t.Run(name, func(t *testing.T) {
			activation := map[string]any{"object": asJSONMap(t, tc.pod), "request": requestFor(t, tc.user, tc.pod.Namespace)}
			gated := all(t, withExempt(t, gate.Spec.MatchConditions, tc.exempt), activation)
			refused := all(t, withExempt(t, guard.Spec.MatchConditions, tc.exempt), activation) &&
				!eval(t, "the bound-pod guard", guard.Spec.Validations[0].Expression, activation)

			skip := SkipReasonFor(tc.pod, tc.user, quotaGate, tc.exempt...)
			wantGated := skip == "" && tc.pod.Spec.NodeName == ""
			// PodGater refuses a bound pod it does not skip; a bound pod that
			// already carries the gate is refused by the API server's own
			// validation in both modes, before any validating policy runs.
			wantRefused := skip == "" && tc.pod.Spec.NodeName != ""
			if skip == SkipAlreadyGated && tc.pod.Spec.NodeName != "" {
				refused = false
			}
			if gated != wantGated || refused != wantRefused {
				t.Errorf("policy gates %v, refuses %v; the webhook gates %v, refuses %v (SkipReasonFor = %q)",
					gated, refused, wantGated, wantRefused, skip)
			}
		})
	}
}

// shippedGatePolicy reads config/policy/admission/gate_policy.yaml.
func shippedGatePolicy(t *testing.T) (*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicy) {
	t.Helper()
	raw := readShipped(t, "../../config/policy/admission/gate_policy.yaml")
	var gate *admissionregistrationv1.MutatingAdmissionPolicy
	var guard *admissionregistrationv1.ValidatingAdmissionPolicy
	for _, doc := range strings.Split(raw, "\n---\n") {
		var kind struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &kind); err != nil {
			t.Fatalf("reading gate_policy.yaml: %v", err)
		}
		var err error
		switch kind.Kind {
		case "MutatingAdmissionPolicy":
			gate = &admissionregistrationv1.MutatingAdmissionPolicy{}
			err = yaml.UnmarshalStrict([]byte(doc), gate)
		case "ValidatingAdmissionPolicy":
			guard = &admissionregistrationv1.ValidatingAdmissionPolicy{}
			err = yaml.UnmarshalStrict([]byte(doc), guard)
		}
		if err != nil {
			t.Fatalf("decoding %s: %v", kind.Kind, err)
		}
	}
	if gate == nil || guard == nil {
		t.Fatal("gate_policy.yaml lacks the MutatingAdmissionPolicy or the ValidatingAdmissionPolicy")
	}
	return gate, guard
}

func readShipped(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
