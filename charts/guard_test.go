package charts_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

const gate = "quotagate.io/budget"

// celWhitespace compares strings with runs of whitespace collapsed: CEL ignores them, and
// YAML folding of multi-line expressions differs between kustomize's and Helm's YAML
// libraries.
var celWhitespace = cmp.Transformer("collapseWhitespace", func(s string) string {
	return strings.Join(strings.Fields(s), " ")
})

// The chart's gate guard is config/policy's, with the release's manager (and the extra
// users) as the only identities that may remove the gate.
func TestGateGuardMatchesConfigPolicy(t *testing.T) {
	cfg := kustomizeBuild(t, "config/policy")
	wantPolicy, wantBinding := cfg.policy(t, "quotagate-gate-guard")

	for name, tc := range map[string]struct {
		release, namespace string
		values             map[string]any
		wantAllowed        string
	}{
		"default release": {
			release: "quotagate", namespace: "quotagate-system",
			wantAllowed: "['system:serviceaccount:quotagate-system:quotagate-manager']",
		},
		"another release with extra users": {
			release: "acme", namespace: "batch-system",
			values: map[string]any{"guard": map[string]any{"extraAllowedUsers": []any{
				"alice", "system:serviceaccount:ops:breakglass"}}},
			wantAllowed: "['system:serviceaccount:batch-system:acme-quotagate-manager', 'alice', 'system:serviceaccount:ops:breakglass']",
		},
	} {
		t.Run(name, func(t *testing.T) {
			m := mustInstall(t, tc.release, tc.namespace, tc.values)
			policy, binding := m.policy(t, fullname(tc.release)+"-gate-guard")

			want := wantPolicy.Spec.DeepCopy()
			for i, v := range want.Variables {
				if v.Name == "allowed" {
					want.Variables[i].Expression = tc.wantAllowed
				}
			}
			if diff := cmp.Diff(*want, policy.Spec, celWhitespace); diff != "" {
				t.Errorf("policy spec (-want +got):\n%s", diff)
			}
			wantBindingSpec := wantBinding.Spec.DeepCopy()
			wantBindingSpec.PolicyName = policy.Name
			if diff := cmp.Diff(*wantBindingSpec, binding.Spec); diff != "" {
				t.Errorf("binding spec (-want +got):\n%s", diff)
			}
		})
	}
}

// Evaluates the rendered policy's CEL the way the API server would for a pod CREATE (no
// old object) and UPDATE.
func TestGateGuardAllowsExactlyTheManagerAndExtraUsers(t *testing.T) {
	m := mustInstall(t, "acme", "batch-system", map[string]any{
		"guard": map[string]any{"extraAllowedUsers": []any{"alice"}},
	})
	var policy admissionregistrationv1.ValidatingAdmissionPolicy
	into(t, m.find(t, "ValidatingAdmissionPolicy", "acme-quotagate-gate-guard"), &policy)

	// The manager's identity is the ServiceAccount its Deployment and the uninstall hook run as.
	manager := "system:serviceaccount:batch-system:" + podSpecOf(t, m, "Deployment", "acme-quotagate-manager").ServiceAccountName
	hook := "system:serviceaccount:batch-system:" + podSpecOf(t, m, "Job", "").ServiceAccountName

	withGate := podWithGates(gate, "example.com/other")
	withoutGate := podWithGates("example.com/other")
	for name, tc := range map[string]struct {
		old, new map[string]any
		user     string
		want     bool
	}{
		"manager removes the gate":            {withGate, withoutGate, manager, true},
		"uninstall hook removes the gate":     {withGate, withoutGate, hook, true},
		"extra user removes the gate":         {withGate, withoutGate, "alice", true},
		"pod owner removes the gate":          {withGate, withoutGate, "system:serviceaccount:team-a:default", false},
		"another release's manager":           {withGate, withoutGate, "system:serviceaccount:quotagate-system:quotagate-manager", false},
		"cluster admin removes the gate":      {withGate, withoutGate, "kubernetes-admin", false},
		"removing every gate at once":         {withGate, podWithGates(), "bob", false},
		"removing another controller's gate":  {withGate, podWithGates(gate), "bob", true},
		"an update that keeps the gate":       {withGate, withGate, "bob", true},
		"a pod that never had the gate":       {withoutGate, withoutGate, "bob", true},
		"a pod without any scheduling gates":  {podWithGates(), podWithGates(), "bob", true},
		"adding the gate back is not removal": {withoutGate, withGate, "bob", true},
		"manager records admitted-by":         {withGate, admittedBy(withoutGate, "team-a/b"), manager, true},
		"tenant removes admitted-by":          {admittedBy(withoutGate, "team-a/b"), withoutGate, "bob", false},
		"tenant rewrites admitted-by":         {admittedBy(withoutGate, "team-a/b"), admittedBy(withoutGate, "x"), "bob", false},
		"tenant adds admitted-by":             {withoutGate, admittedBy(withoutGate, "team-a/b"), "bob", false},
		"tenant keeps admitted-by":            {admittedBy(withoutGate, "team-a/b"), admittedBy(withoutGate, "team-a/b"), "bob", true},
		"tenant adds an empty admitted-by":    {withoutGate, admittedBy(withoutGate, ""), "bob", false},
		"tenant empties admitted-by":          {admittedBy(withoutGate, "team-a/b"), admittedBy(withoutGate, ""), "bob", false},
		"tenant adds admitted-at":             {withoutGate, annotated(withoutGate, "quotagate.io/admitted-at", "2026-12-02T04:00:00Z"), "bob", false},
		"tenant keeps admitted-at": {
			annotated(withoutGate, "quotagate.io/admitted-at", "2026-12-02T04:00:00Z"),
			annotated(withoutGate, "quotagate.io/admitted-at", "2026-12-02T04:00:00Z"), "bob", true,
		},
		"manager rewrites admitted-at": {
			annotated(withoutGate, "quotagate.io/admitted-at", "2026-12-02T04:00:00Z"),
			annotated(withoutGate, "quotagate.io/admitted-at", "2026-12-02T05:00:00Z"), manager, true,
		},
		// CREATE: no old object.
		"tenant creates a plain pod":                   {nil, withGate, "bob", true},
		"tenant creates a pod without the gate":        {nil, withoutGate, "bob", true},
		"tenant creates a pod with other annotation":   {nil, annotated(withGate, "example.com/x", "y"), "bob", true},
		"tenant creates a pod with admitted-by":        {nil, admittedBy(withGate, "team-a/b"), "bob", false},
		"tenant creates a pod with empty admitted-by":  {nil, admittedBy(withGate, ""), "bob", false},
		"tenant creates a pod with admitted-at":        {nil, annotated(withGate, "quotagate.io/admitted-at", "2026-12-02T04:00:00Z"), "bob", false},
		"cluster admin creates a pod with admitted-by": {nil, admittedBy(withGate, "team-a/b"), "kubernetes-admin", false},
		"manager creates a pod with admitted-by":       {nil, admittedBy(withGate, "team-a/b"), manager, true},
		"extra user creates a pod with admitted-by":    {nil, admittedBy(withGate, "team-a/b"), "alice", true},
	} {
		t.Run(name, func(t *testing.T) {
			got, msg := evaluatePolicy(t, policy.Spec, tc.old, tc.new, tc.user)
			if got != tc.want {
				t.Errorf("allowed = %v (%s), want %v", got, msg, tc.want)
			}
		})
	}

	// The refusals say what was written, who may write it, and at CREATE what to do.
	for name, tc := range map[string]struct {
		old, new map[string]any
		want     string
	}{
		"create with both": {nil, annotated(admittedBy(withGate, "x"), "quotagate.io/admitted-at", "y"),
			"quotagate.io/admitted-by, quotagate.io/admitted-at: quotagate records there when and by which budgets it admitted the pod; " +
				"only " + manager + ", alice may write it, not bob. A new pod may not carry it: remove it from the pod, " +
				"or from the template the pod is made from (a Job, a Deployment, ...)"},
		"update of admitted-by": {admittedBy(withoutGate, "a"), admittedBy(withoutGate, "b"),
			"quotagate.io/admitted-by: quotagate records there when and by which budgets it admitted the pod; only " + manager + ", alice may write it, not bob"},
	} {
		t.Run("message: "+name, func(t *testing.T) {
			if _, msg := evaluatePolicy(t, policy.Spec, tc.old, tc.new, "bob"); msg != tc.want {
				t.Errorf("message\n%s\nwant\n%s", msg, tc.want)
			}
		})
	}
}

func podWithGates(names ...string) map[string]any {
	spec := map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox"}}}
	if len(names) > 0 {
		var gates []any
		for _, n := range names {
			gates = append(gates, map[string]any{"name": n})
		}
		spec["schedulingGates"] = gates
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p", "namespace": "team-a"}, "spec": spec}
}

// policy decodes the ValidatingAdmissionPolicy named name and its binding of the same
// name.
func (m manifests) policy(t testing.TB, name string) (admissionregistrationv1.ValidatingAdmissionPolicy, admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	var policy admissionregistrationv1.ValidatingAdmissionPolicy
	into(t, m.find(t, "ValidatingAdmissionPolicy", name), &policy)
	var binding admissionregistrationv1.ValidatingAdmissionPolicyBinding
	into(t, m.find(t, "ValidatingAdmissionPolicyBinding", name), &binding)
	return policy, binding
}

// admittedBy returns a copy of pod with the admitted-by annotation set.
func admittedBy(pod map[string]any, budgets string) map[string]any {
	return annotated(pod, "quotagate.io/admitted-by", budgets)
}

// annotated returns a copy of pod with the annotation key=value added.
func annotated(pod map[string]any, key, value string) map[string]any {
	meta := map[string]any{}
	for k, v := range pod["metadata"].(map[string]any) {
		meta[k] = v
	}
	annotations := map[string]any{}
	if old, ok := meta["annotations"].(map[string]any); ok {
		for k, v := range old {
			annotations[k] = v
		}
	}
	annotations[key] = value
	meta["annotations"] = annotations
	out := map[string]any{}
	for k, v := range pod {
		out[k] = v
	}
	out["metadata"] = meta
	return out
}

// evaluatePolicy runs the policy's variables and validations with plain CEL: it reports
// whether the request is allowed and, if not, the denial message. A nil oldObj is a
// CREATE, where the API server's oldObject is null.
func evaluatePolicy(t *testing.T, spec admissionregistrationv1.ValidatingAdmissionPolicySpec, oldObj, obj map[string]any, user string) (bool, string) {
	t.Helper()
	env, err := cel.NewEnv(
		ext.Strings(), // join, as the API server's CEL has it
		cel.Variable("object", cel.DynType),
		cel.Variable("oldObject", cel.DynType),
		cel.Variable("request", cel.DynType),
		cel.Variable("variables", cel.DynType),
	)
	if err != nil {
		t.Fatal(err)
	}
	variables := map[string]any{}
	var old any = oldObj
	operation := "UPDATE"
	if oldObj == nil {
		old, operation = nil, "CREATE"
	}
	activation := map[string]any{
		"object": obj, "oldObject": old, "variables": variables,
		"request": map[string]any{"operation": operation, "userInfo": map[string]any{"username": user}},
	}
	eval := func(expr string) any {
		ast, iss := env.Compile(expr)
		if iss.Err() != nil {
			t.Fatalf("compiling %q: %v", expr, iss.Err())
		}
		prg, err := env.Program(ast)
		if err != nil {
			t.Fatalf("program %q: %v", expr, err)
		}
		out, _, err := prg.Eval(activation)
		if err != nil {
			t.Fatalf("evaluating %q: %v", expr, err)
		}
		return out.Value()
	}
	for _, v := range spec.Variables {
		variables[v.Name] = eval(v.Expression)
	}
	for _, v := range spec.Validations {
		ok, isBool := eval(v.Expression).(bool)
		if !isBool {
			t.Fatalf("validation %q is not a boolean", v.Expression)
		}
		if !ok {
			if v.MessageExpression != "" {
				return false, fmt.Sprint(eval(v.MessageExpression))
			}
			return false, v.Message
		}
	}
	return true, ""
}
