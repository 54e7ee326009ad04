package charts_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
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
			"quotagate.io/admitted-at, quotagate.io/admitted-by: quotagate records there how it admitted a pod, or pins with it a " +
				"ResourceClaim that an admitted pod is charged for; only " + manager + ", alice may write it, not bob. " +
				"A new Pod may not carry it: remove it from the Pod, or from the template it is made from " +
				"(a Job, a Deployment, a ResourceClaimTemplate, ...)"},
		"update of admitted-by": {admittedBy(withoutGate, "a"), admittedBy(withoutGate, "b"),
			"quotagate.io/admitted-by: quotagate records there how it admitted a pod, or pins with it a ResourceClaim that an " +
				"admitted pod is charged for; only " + manager + ", alice may write it, not bob"},
		"removal of the claim's finalizer": {claimWith("quotagate.io/charged"), claimWith(),
			"quotagate.io/charged: quotagate records there how it admitted a pod, or pins with it a ResourceClaim that an " +
				"admitted pod is charged for; only " + manager + ", alice may write it, not bob"},
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

// annotated returns a copy of obj with the annotation key=value added.
func annotated(obj map[string]any, key, value string) map[string]any {
	return withMeta(obj, func(meta map[string]any) {
		annotations := map[string]any{}
		if old, ok := meta["annotations"].(map[string]any); ok {
			for k, v := range old {
				annotations[k] = v
			}
		}
		annotations[key] = value
		meta["annotations"] = annotations
	})
}

// evaluatePolicy runs the policy's matchConditions, variables and validations with plain
// CEL, as the API server does: it reports whether the request is allowed (a request that
// fails a matchCondition is not the policy's to refuse) and, if not, the denial message.
// A nil oldObj is a CREATE, where the API server's oldObject is null.
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
	kind, _ := obj["kind"].(string)
	resources := map[string]string{"Pod": "pods", "ResourceClaim": "resourceclaims"}
	if resources[kind] == "" {
		t.Fatalf("evaluating the policy for a %q: not a kind it matches", kind)
	}
	var old any = oldObj
	operation := "UPDATE"
	if oldObj == nil {
		old, operation = nil, "CREATE"
	}
	activation := map[string]any{
		"object": obj, "oldObject": old, "variables": variables,
		"request": map[string]any{
			"operation": operation, "userInfo": map[string]any{"username": user},
			"kind":     map[string]any{"kind": kind},
			"resource": map[string]any{"resource": resources[kind]},
		},
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
	for _, c := range spec.MatchConditions {
		match, isBool := eval(c.Expression).(bool)
		if !isBool {
			t.Fatalf("matchCondition %s is not a boolean", c.Name)
		}
		if !match {
			return true, ""
		}
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

// The guard's lists of names only the manager writes are v1alpha1.ManagerWritten's, kind
// by kind, in config/policy and in the chart (TestGateGuardMatchesConfigPolicy compares
// the two).
func TestGateGuardListsEveryManagerWrittenName(t *testing.T) {
	policy, _ := kustomizeBuild(t, "config/policy").policy(t, "quotagate-gate-guard")
	variables := map[string]string{}
	for _, v := range policy.Spec.Variables {
		variables[v.Name] = v.Expression
	}
	for kind, variable := range map[v1alpha1.KeyKind]string{
		v1alpha1.KeyAnnotation: "managerAnnotations",
		v1alpha1.KeyLabel:      "managerLabels",
		v1alpha1.KeyFinalizer:  "managerFinalizers",
	} {
		want := v1alpha1.ManagerWrittenNames(kind)
		expr, ok := variables[variable]
		switch {
		case !ok && len(want) == 0:
			continue
		case !ok:
			t.Errorf("the guard has no variable %s, but the manager writes the %ss %v: add it, and refuse it to everyone else as variables.written does the others", variable, kind, want)
			continue
		}
		if got := stringList(t, expr); !cmp.Equal(want, got) {
			t.Errorf("variables.%s = %v, want v1alpha1.ManagerWritten's %ss %v", variable, got, kind, want)
		}
	}
}

// Every name of v1alpha1.ManagerWritten, on a pod and on a ResourceClaim: nobody but the
// manager (and the extra users) adds it to a new object, adds it later, changes it or
// removes it; an update that keeps it passes.
func TestGateGuardRefusesEveryManagerWrittenName(t *testing.T) {
	m := mustInstall(t, "acme", "batch-system", map[string]any{
		"guard": map[string]any{"extraAllowedUsers": []any{"alice"}},
	})
	var policy admissionregistrationv1.ValidatingAdmissionPolicy
	into(t, m.find(t, "ValidatingAdmissionPolicy", "acme-quotagate-gate-guard"), &policy)
	manager := "system:serviceaccount:batch-system:" + podSpecOf(t, m, "Deployment", "acme-quotagate-manager").ServiceAccountName

	objects := map[string]map[string]any{"pod": podWithGates(), "claim": claimWith()}
	for _, key := range v1alpha1.ManagerWritten {
		for what, plain := range objects {
			with := func(value string) map[string]any {
				switch key.Kind {
				case v1alpha1.KeyAnnotation:
					return annotated(plain, key.Name, value)
				case v1alpha1.KeyLabel:
					return labelled(plain, key.Name, value)
				case v1alpha1.KeyFinalizer:
					return finalized(plain, key.Name, "example.com/other")
				}
				t.Fatalf("%s: no object carries a %s", key.Name, key.Kind)
				return nil
			}
			for name, tc := range map[string]struct {
				old, new map[string]any
				user     string
				want     bool
			}{
				"a tenant creates it":        {nil, with("x"), "bob", false},
				"a cluster admin creates it": {nil, with("x"), "kubernetes-admin", false},
				"a tenant adds it":           {plain, with("x"), "bob", false},
				"a tenant removes it":        {with("x"), plain, "bob", false},
				"a tenant keeps it":          {with("x"), with("x"), "bob", true},
				"the manager creates it":     {nil, with("x"), manager, true},
				"the manager adds it":        {plain, with("x"), manager, true},
				"the manager removes it":     {with("x"), plain, manager, true},
				"an extra user removes it":   {with("x"), plain, "alice", true},
			} {
				t.Run(key.Name+" on a "+what+": "+name, func(t *testing.T) {
					got, msg := evaluatePolicy(t, policy.Spec, tc.old, tc.new, tc.user)
					if got != tc.want {
						t.Errorf("allowed = %v (%s), want %v", got, msg, tc.want)
					}
					if !got && !strings.HasPrefix(msg, key.Name+": ") {
						t.Errorf("message %q does not start with %s", msg, key.Name)
					}
				})
			}
			if key.Kind == v1alpha1.KeyFinalizer {
				t.Run(key.Name+" on a "+what+": a tenant adds a second copy", func(t *testing.T) {
					twice := finalized(with("x"), key.Name)
					if got, _ := evaluatePolicy(t, policy.Spec, with("x"), twice, "bob"); got {
						t.Error("allowed a second copy of the finalizer")
					}
				})
				continue
			}
			t.Run(key.Name+" on a "+what+": a tenant changes it", func(t *testing.T) {
				if got, _ := evaluatePolicy(t, policy.Spec, with("x"), with("y"), "bob"); got {
					t.Error("allowed a change of the value")
				}
			})
		}
	}
}

// claimWith is a ResourceClaim with the finalizers given.
func claimWith(finalizers ...string) map[string]any {
	meta := map[string]any{"name": "gpu", "namespace": "team-a"}
	if len(finalizers) > 0 {
		var list []any
		for _, f := range finalizers {
			list = append(list, f)
		}
		meta["finalizers"] = list
	}
	return map[string]any{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta,
		"spec": map[string]any{"devices": map[string]any{}}}
}

// labelled returns a copy of obj with the label key=value added.
func labelled(obj map[string]any, key, value string) map[string]any {
	return withMeta(obj, func(meta map[string]any) {
		labels := map[string]any{}
		if old, ok := meta["labels"].(map[string]any); ok {
			for k, v := range old {
				labels[k] = v
			}
		}
		labels[key] = value
		meta["labels"] = labels
	})
}

// finalized returns a copy of obj with the finalizers appended.
func finalized(obj map[string]any, finalizers ...string) map[string]any {
	return withMeta(obj, func(meta map[string]any) {
		var list []any
		if old, ok := meta["finalizers"].([]any); ok {
			list = append(list, old...)
		}
		for _, f := range finalizers {
			list = append(list, f)
		}
		meta["finalizers"] = list
	})
}

// withMeta returns a copy of obj whose metadata (a copy too) change has changed.
func withMeta(obj map[string]any, change func(meta map[string]any)) map[string]any {
	meta := map[string]any{}
	for k, v := range obj["metadata"].(map[string]any) {
		meta[k] = v
	}
	change(meta)
	out := map[string]any{}
	for k, v := range obj {
		out[k] = v
	}
	out["metadata"] = meta
	return out
}

// stringList evaluates a CEL list of string literals.
func stringList(t *testing.T, expr string) []string {
	t.Helper()
	env, err := cel.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		t.Fatalf("compiling %q: %v", expr, iss.Err())
	}
	prg, err := env.Program(ast)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := prg.Eval(map[string]any{})
	if err != nil {
		t.Fatalf("evaluating %q: %v", expr, err)
	}
	list, err := out.ConvertToNative(reflect.TypeFor[[]string]())
	if err != nil {
		t.Fatalf("%q is not a list of strings: %v", expr, err)
	}
	return list.([]string)
}
