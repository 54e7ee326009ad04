package app

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// Each output format of budgets besides the default table (TestBudgets).
func TestBudgetsOutputFormats(t *testing.T) {
	w := teamsWorld(t)
	tests := map[string]struct {
		args      []string
		want      string
		wantNotes string
	}{
		"wide adds strategy, parent and pending": {
			args: []string{"budgets", "-A", "-o", "wide"},
			want: `BUDGET                 STATE   STRATEGY         PARENT   ADMITTED   GATED   OLDEST WAIT   RESOURCE       USED/HARD   PENDING   USAGE
Budget team-a/team-a   Open    BestEffortFIFO   org      3          3       9m30s         pods           3/10        3         [███░░░░░░░]
                                                                                          requests.cpu   4/4         9         [██████████]
Budget team-b/team-b   Open    BestEffortFIFO   org      2          1       8m20s         requests.cpu   4/4         2         [██████████]
ClusterBudget org      Open    BestEffortFIFO   -        5          4       9m30s         requests.cpu   8/8         11        [██████████]
`,
		},
		"no headers": {
			args: []string{"budgets", "-n", "team-b", "--no-headers"},
			want: `Budget team-b/team-b   Open   2     1     8m20s   requests.cpu   4/4   [██████████]
ClusterBudget org      Open   5     4     9m30s   requests.cpu   8/8   [██████████]
`,
		},
		"name in one namespace": {
			args: []string{"budgets", "-n", "team-b", "-o", "name"},
			want: "budget.quotagate.io/team-b\nclusterbudget.quotagate.io/org\n",
		},
		"name across namespaces is namespace-qualified": {
			args: []string{"budgets", "-A", "-o", "name"},
			want: "team-a/budget.quotagate.io/team-a\nteam-b/budget.quotagate.io/team-b\nclusterbudget.quotagate.io/org\n",
		},
		"go-template": {
			args: []string{"budgets", "-A", "-o", "go-template={{range .items}}{{.kind}} {{.metadata.name}}: {{.status.gatedPods}} gated\n{{end}}"},
			want: "Budget team-a: 3 gated\nBudget team-b: 1 gated\nClusterBudget org: 4 gated\n",
		},
		"a namespace without budgets": {
			args:      []string{"budgets", "-n", "legacy"},
			wantNotes: "No budgets found.\n",
		},
		"a namespace without budgets, as JSON": {
			args: []string{"budgets", "-n", "legacy", "-o", "json"},
			want: `{
    "apiVersion": "v1",
    "items": [],
    "kind": "List",
    "metadata": {
        "resourceVersion": ""
    }
}
`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, errOut, err := run(t, w.env(nil), tc.args...)
			if err != nil {
				t.Fatalf("budgets: %v\n%s", err, errOut)
			}
			if diff := cmp.Diff(tc.want, out); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantNotes, errOut); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}

// -o json and -o yaml print the Budget and ClusterBudget objects, apiVersion and kind
// set, in a v1 List, as kubectl get -o json prints several objects. They need no
// manager (the oldest wait is the table's only), so none is asked and no note written.
func TestBudgetsJSONAndYAML(t *testing.T) {
	w := teamsWorld(t)
	decoded := map[string]map[string]any{}
	for _, format := range []string{"json", "yaml"} {
		out, errOut, err := run(t, w.env(failingSource{}), "budgets", "-A", "-o", format)
		if err != nil {
			t.Fatalf("budgets -o %s: %v\n%s", format, err, errOut)
		}
		if errOut != "" {
			t.Errorf("budgets -o %s wrote to stderr: %s", format, errOut)
		}
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(out), &obj); err != nil {
			t.Fatalf("decoding -o %s: %v\n%s", format, err, out)
		}
		decoded[format] = obj
	}
	if diff := cmp.Diff(decoded["json"], decoded["yaml"]); diff != "" {
		t.Errorf("-o yaml differs from -o json (-json +yaml):\n%s", diff)
	}
	raw, err := json.Marshal(decoded["json"])
	if err != nil {
		t.Fatal(err)
	}
	var list unstructured.UnstructuredList
	if err := list.UnmarshalJSON(raw); err != nil {
		t.Fatalf("the output is not a List: %v", err)
	}
	var got []string
	for _, it := range list.Items {
		gated, _, _ := unstructured.NestedFieldNoCopy(it.Object, "status", "gatedPods")
		got = append(got, fmt.Sprintf("%s %s %s/%s gated=%v", it.GetAPIVersion(), it.GetKind(), it.GetNamespace(), it.GetName(), gated))
	}
	want := []string{
		"quotagate.io/v1alpha1 Budget team-a/team-a gated=3",
		"quotagate.io/v1alpha1 Budget team-b/team-b gated=1",
		"quotagate.io/v1alpha1 ClusterBudget /org gated=4",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("budgets -A -o json items (-want +got):\n%s", diff)
	}
	if list.GetKind() != "List" || list.GetAPIVersion() != "v1" {
		t.Errorf("budgets -o json: %s %s, want v1 List", list.GetAPIVersion(), list.GetKind())
	}
}

func TestBudgetsBadOutput(t *testing.T) {
	w := teamsWorld(t)
	_, _, err := run(t, w.env(nil), "budgets", "-o", "jsn")
	want := `unable to match a printer suitable for the output format "jsn", allowed formats are: ` +
		`go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,kyaml,name,template,templatefile,wide,yaml`
	if err == nil || err.Error() != want {
		t.Errorf("budgets -o jsn: got error %v, want %q", err, want)
	}
}

// A budget with usageLimits has a line per resource of its hours: what its pods used in
// the period and what the running ones reserved, of the limit (status.usage).
func TestBudgetsShowHours(t *testing.T) {
	b := budget("ml", "gpu", "requests.cpu=4", "")
	b.Spec.UsageLimits = &v1alpha1.UsageLimits{Hours: parseList("cpu=10"), Period: v1alpha1.PeriodMonth,
		DefaultMaxRuntime: &metav1.Duration{Duration: 2 * time.Hour}}
	b.Status.Usage = &v1alpha1.UsageStatus{Period: "2026-12", Used: parseList("requests.cpu=3500m"), Reserved: parseList("requests.cpu=2")}
	w := newWorld(t, t0.Add(time.Minute), []*corev1.Namespace{namespace("ml", true)}, []*v1alpha1.Budget{b}, nil,
		[]*corev1.Pod{makePod("ml", "train").Req("cpu=1").Obj()})
	out, errOut, err := run(t, w.env(nil), "budgets", "-n", "ml")
	if err != nil {
		t.Fatalf("budgets: %v\n%s", err, errOut)
	}
	want := `BUDGET          STATE   ADMITTED   GATED   OLDEST WAIT   RESOURCE                        USED/HARD               USAGE
Budget ml/gpu   Open    1          0       -             requests.cpu                    1/4                     [███░░░░░░░]
                                                         requests.cpu hours in 2026-12   3500m/10 (2 reserved)   [██████░░░░]
`
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}
