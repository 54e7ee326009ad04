package crdvalidation_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// limitFields are the spec fields whose names the CRD's accountable-name rule checks.
var limitFields = []string{"hard", "borrowingLimit", "lendingLimit"}

// nameRule is one accountable-name rule of a generated CRD.
type nameRule struct {
	crd, field              string
	rule, messageExpression string
}

// nameRules reads, from both generated budget CRDs (config/crd/bases), the rules on
// limitFields, in spec and in each of spec.flavors, whose message names an unsupported
// resource name.
func nameRules(t *testing.T) []nameRule {
	t.Helper()
	var rules []nameRule
	for _, file := range []string{"quotagate.io_budgets.yaml", "quotagate.io_clusterbudgets.yaml"} {
		raw, err := os.ReadFile(filepath.Join(repoRoot(), "config", "crd", "bases", file))
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(raw, crd); err != nil {
			t.Fatalf("reading %s: %v", file, err)
		}
		for _, v := range crd.Spec.Versions {
			spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
			places := map[string]apiextensionsv1.JSONSchemaProps{"spec": spec}
			if items := spec.Properties["flavors"].Items; items != nil && items.Schema != nil {
				places["spec.flavors[]"] = *items.Schema
			}
			for place, schema := range places {
				for _, field := range limitFields {
					for _, r := range schema.Properties[field].XValidations {
						if strings.Contains(r.MessageExpression, "unsupported resource name") {
							rules = append(rules, nameRule{crd: file + " " + v.Name + " " + place, field: field, rule: r.Rule, messageExpression: r.MessageExpression})
						}
					}
				}
			}
		}
	}
	return rules
}

// TestAccountableNamesOneSource: every accountable-name rule in the generated CRDs (three
// fields in spec and three in each of spec.flavors, in each of two CRDs, a rule and a
// messageExpression each) is
// v1alpha1.AccountableNameCEL; what it admits is what the manager accounts, on the
// names of v1alpha1.AccountableResourceNames and the tables of this package; and every
// name it admits is a name PodUsage or ClaimUsage can charge.
func TestAccountableNamesOneSource(t *testing.T) {
	pred := v1alpha1.AccountableNameCEL()
	rules := nameRules(t)
	if len(rules) != 2*2*len(limitFields) {
		t.Fatalf("%d accountable-name rules in the CRDs, want one on each of %v, in spec and in spec.flavors[], in both CRDs", len(rules), limitFields)
	}
	env, err := cel.NewEnv(cel.Variable("self", cel.MapType(cel.StringType, cel.StringType)))
	if err != nil {
		t.Fatal(err)
	}
	eval := func(t *testing.T, expr, name string) any {
		t.Helper()
		ast, iss := env.Compile(expr)
		if iss.Err() != nil {
			t.Fatalf("compiling %s: %v", expr, iss.Err())
		}
		prg, err := env.Program(ast)
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := prg.Eval(map[string]any{"self": map[string]string{name: "1"}})
		if err != nil {
			t.Fatalf("evaluating on %s: %v", name, err)
		}
		return out.Value()
	}

	var accepted []string
	for _, n := range v1alpha1.AccountableResourceNames {
		accepted = append(accepted, string(n))
	}
	accepted = append(accepted, supportedHard...)
	// Near misses of the listed names: the list is exact.
	rejected := slices.Clone(unsupportedHard)
	for _, n := range v1alpha1.AccountableResourceNames {
		rejected = append(rejected, string(n)+"s", strings.ToUpper(string(n)))
	}

	for _, r := range rules {
		t.Run(r.crd+" "+r.field, func(t *testing.T) {
			if want := "self.all(k, " + pred + ")"; r.rule != want {
				t.Errorf("rule is not v1alpha1.AccountableNameCEL:\n got: %s\nwant: %s", r.rule, want)
			}
			prefix := "'unsupported resource name in " + r.field + ": ' + self.filter(k, !(" + pred + "))[0] + "
			if !strings.HasPrefix(r.messageExpression, prefix) {
				t.Errorf("messageExpression does not filter with v1alpha1.AccountableNameCEL:\n got: %s\nwant prefix: %s", r.messageExpression, prefix)
			}
			for _, name := range accepted {
				if got := eval(t, r.rule, name); got != true {
					t.Errorf("the rule refuses %s", name)
				}
			}
			for _, name := range rejected {
				if got := eval(t, r.rule, name); got != false {
					t.Errorf("the rule admits %s", name)
					continue
				}
				if msg, _ := eval(t, r.messageExpression, name).(string); !strings.Contains(msg, ": "+name+" (supported: ") {
					t.Errorf("message for %s does not name it: %s", name, msg)
				}
			}
		})
	}

	for _, name := range accepted {
		hard, err := quota.NormalizeHard(corev1.ResourceList{corev1.ResourceName(name): resourceOne})
		if err != nil {
			t.Errorf("hard name %s: the CRD admits it, the manager refuses it: %v", name, err)
			continue
		}
		for charged := range hard {
			if !chargeable(charged) {
				t.Errorf("hard name %s: the manager accounts it as %s, which no pod is charged", name, charged)
			}
		}
	}
	for _, name := range rejected {
		if _, err := quota.NormalizeHard(corev1.ResourceList{corev1.ResourceName(name): resourceOne}); err == nil {
			t.Errorf("hard name %s: the CRD refuses it, the manager accounts it", name)
		}
	}
}

// chargeable reports whether a pod can be charged name: a name PodUsage writes
// (pods, count/pods, requests.* and limits.* of what a container asks for) or one
// ClaimUsage writes (DRA devices).
func chargeable(name corev1.ResourceName) bool {
	s := string(name)
	switch {
	case name == corev1.ResourcePods || name == quota.ResourceCountPods:
		return true
	case strings.HasPrefix(s, "requests.deviceclass.resource.kubernetes.io/"), strings.HasSuffix(s, ".deviceclass.resource.k8s.io/devices"):
		return true
	}
	rest, ok := strings.CutPrefix(s, corev1.DefaultResourceRequestsPrefix)
	if !ok {
		rest, ok = strings.CutPrefix(s, "limits.")
	}
	if !ok {
		return false
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceName(rest): resourceOne},
		Limits:   corev1.ResourceList{corev1.ResourceName(rest): resourceOne},
	}}}}}
	q, ok := quota.PodUsage(pod)[name]
	return ok && q.Cmp(resourceOne) == 0
}
