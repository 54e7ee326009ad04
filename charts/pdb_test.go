package charts_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// A PodDisruptionBudget that no eviction can satisfy would hang every node drain, so the
// chart refuses one: the schema what it can judge from the value alone, the templates
// (which know the replicas) the rest, with percentages rounded up as Kubernetes' disruption
// controller does.
func TestPodDisruptionBudgetsCannotBlockDrains(t *testing.T) {
	type pdb struct {
		replicas          int
		minAvailable, max any // nil: not set (minAvailable then keeps its default, 1)
	}
	for name, tc := range map[string]struct {
		component string
		pdb       pdb
		want      *policyv1.PodDisruptionBudgetSpec // nil: no PDB
		wantErr   string                            // a schema path ('/...') or a message
	}{
		// The webhook: 2 replicas, minAvailable 1 by default.
		"webhook defaults":                  {"webhook", pdb{2, nil, nil}, minSpec(intstr.FromInt32(1)), ""},
		"webhook one replica":               {"webhook", pdb{1, nil, nil}, nil, "webhook.podDisruptionBudget.minAvailable (1) must be below webhook.replicas (1)"},
		"webhook minAvailable = replicas":   {"webhook", pdb{3, 3, nil}, nil, "minAvailable (3) must be below webhook.replicas (3)"},
		"webhook minAvailable > replicas":   {"webhook", pdb{3, 5, nil}, nil, "minAvailable (5) must be below webhook.replicas (3)"},
		"webhook 3 replicas, 2 available":   {"webhook", pdb{3, 2, nil}, minSpec(intstr.FromInt32(2)), ""},
		"webhook zero available":            {"webhook", pdb{1, 0, nil}, minSpec(intstr.FromInt32(0)), ""},
		"webhook 50% of 2":                  {"webhook", pdb{2, "50%", nil}, minSpec(intstr.FromString("50%")), ""},
		"webhook 50% of 1 rounds up to 1":   {"webhook", pdb{1, "50%", nil}, nil, "minAvailable (50%) of webhook.replicas (1) rounds up to 1 pods"},
		"webhook 66% of 3 is 2":             {"webhook", pdb{3, "66%", nil}, minSpec(intstr.FromString("66%")), ""},
		"webhook 67% of 3 rounds up to 3":   {"webhook", pdb{3, "67%", nil}, nil, "minAvailable (67%) of webhook.replicas (3) rounds up to 3 pods"},
		"webhook 99% of 100 is 99":          {"webhook", pdb{100, "99%", nil}, minSpec(intstr.FromString("99%")), ""},
		"webhook 99% of 101 is 100":         {"webhook", pdb{101, "99%", nil}, minSpec(intstr.FromString("99%")), ""},
		"webhook 99% of 99 rounds up to 99": {"webhook", pdb{99, "99%", nil}, nil, "minAvailable (99%) of webhook.replicas (99) rounds up to 99 pods"},
		"webhook 100%":                      {"webhook", pdb{3, "100%", nil}, nil, "'/webhook/podDisruptionBudget/minAvailable'"},
		"webhook negative":                  {"webhook", pdb{3, -1, nil}, nil, "'/webhook/podDisruptionBudget/minAvailable'"},
		"webhook fraction":                  {"webhook", pdb{3, "1.5", nil}, nil, "'/webhook/podDisruptionBudget/minAvailable'"},
		"webhook maxUnavailable 1":          {"webhook", pdb{1, nil, 1}, maxSpec(intstr.FromInt32(1)), ""},
		"webhook maxUnavailable 1%":         {"webhook", pdb{2, nil, "1%"}, maxSpec(intstr.FromString("1%")), ""},
		"webhook maxUnavailable 100%":       {"webhook", pdb{2, nil, "100%"}, maxSpec(intstr.FromString("100%")), ""},
		"webhook maxUnavailable wins":       {"webhook", pdb{2, 2, 1}, maxSpec(intstr.FromInt32(1)), ""},
		"webhook maxUnavailable 0":          {"webhook", pdb{2, nil, 0}, nil, "'/webhook/podDisruptionBudget/maxUnavailable'"},
		"webhook maxUnavailable 0%":         {"webhook", pdb{2, nil, "0%"}, nil, "'/webhook/podDisruptionBudget/maxUnavailable'"},
		"webhook maxUnavailable 101%":       {"webhook", pdb{2, nil, "101%"}, nil, "'/webhook/podDisruptionBudget/maxUnavailable'"},
		"manager single: no PDB":            {"manager", pdb{1, nil, nil}, nil, ""},
		"manager single, any minAvailable":  {"manager", pdb{1, 5, nil}, nil, ""},
		"manager two, default 1 available":  {"manager", pdb{2, nil, nil}, minSpec(intstr.FromInt32(1)), ""},
		"manager three, 2 available":        {"manager", pdb{3, 2, nil}, minSpec(intstr.FromInt32(2)), ""},
		"manager three, 3 available":        {"manager", pdb{3, 3, nil}, nil, "manager.podDisruptionBudget.minAvailable (3) must be below manager.replicas (3)"},
		"manager 50% of 2":                  {"manager", pdb{2, "50%", nil}, minSpec(intstr.FromString("50%")), ""},
		"manager 51% of 2 rounds up to 2":   {"manager", pdb{2, "51%", nil}, nil, "manager.podDisruptionBudget.minAvailable (51%) of manager.replicas (2) rounds up to 2 pods"},
		"manager 100%":                      {"manager", pdb{3, "100%", nil}, nil, "'/manager/podDisruptionBudget/minAvailable'"},
		"manager maxUnavailable 34% of 3":   {"manager", pdb{3, nil, "34%"}, maxSpec(intstr.FromString("34%")), ""},
		"manager maxUnavailable 0":          {"manager", pdb{3, nil, 0}, nil, "'/manager/podDisruptionBudget/maxUnavailable'"},
		"manager maxUnavailable not a size": {"manager", pdb{3, nil, "one"}, nil, "'/manager/podDisruptionBudget/maxUnavailable'"},
	} {
		t.Run(name, func(t *testing.T) {
			budget := map[string]any{}
			if tc.pdb.minAvailable != nil {
				budget["minAvailable"] = tc.pdb.minAvailable
			}
			if tc.pdb.max != nil {
				budget["maxUnavailable"] = tc.pdb.max
			}
			m, err := install(defaultRelease, defaultNamespace, map[string]any{
				tc.component: map[string]any{"replicas": tc.pdb.replicas, "podDisruptionBudget": budget},
			})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				if !strings.HasPrefix(tc.wantErr, "'") && !strings.Contains(err.Error(), "node drains would hang") {
					t.Errorf("err = %v, want it to say why", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("install failed: %v", err)
			}
			name := "quotagate-" + tc.component
			found := m.all("PodDisruptionBudget")
			var got *policyv1.PodDisruptionBudget
			for _, o := range found {
				if o.GetName() == name {
					got = &policyv1.PodDisruptionBudget{}
					into(t, o, got)
				}
			}
			if tc.want == nil {
				if got != nil {
					t.Fatalf("PodDisruptionBudget %s rendered, want none: %+v", name, got.Spec)
				}
				return
			}
			if got == nil {
				t.Fatalf("no PodDisruptionBudget %s among %s", name, m.names())
			}
			var dep appsv1.Deployment
			into(t, m.find(t, "Deployment", name), &dep)
			want := *tc.want
			want.Selector = dep.Spec.Selector
			if diff := cmp.Diff(want, got.Spec); diff != "" {
				t.Errorf("PodDisruptionBudget %s spec (-want +got):\n%s", name, diff)
			}
			if replicas := int(ptr.Deref(dep.Spec.Replicas, 0)); replicas != tc.pdb.replicas {
				t.Errorf("Deployment %s replicas = %d, want %d", name, replicas, tc.pdb.replicas)
			}
			if allowed := disruptionsAllowed(t, got.Spec, tc.pdb.replicas); allowed < 1 {
				t.Errorf("PodDisruptionBudget %s allows %d evictions of %d healthy pods", name, allowed, tc.pdb.replicas)
			}
		})
	}
}

// disruptionsAllowed is what the disruption controller computes with every pod healthy:
// percentages scaled to the replicas and rounded up (intstr.GetScaledValueFromIntOrPercent
// with roundUp, as pkg/controller/disruption does).
func disruptionsAllowed(t *testing.T, spec policyv1.PodDisruptionBudgetSpec, replicas int) int {
	t.Helper()
	if spec.MaxUnavailable != nil {
		n, err := intstr.GetScaledValueFromIntOrPercent(spec.MaxUnavailable, replicas, true)
		if err != nil {
			t.Fatal(err)
		}
		return min(n, replicas)
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(spec.MinAvailable, replicas, true)
	if err != nil {
		t.Fatal(err)
	}
	return replicas - n
}

func minSpec(v intstr.IntOrString) *policyv1.PodDisruptionBudgetSpec {
	return &policyv1.PodDisruptionBudgetSpec{MinAvailable: &v}
}

func maxSpec(v intstr.IntOrString) *policyv1.PodDisruptionBudgetSpec {
	return &policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &v}
}
