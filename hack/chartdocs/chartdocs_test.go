package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// repoRoot is two directories up: go test runs in hack/chartdocs.
const repoRoot = "../.."

// The README in the tree is what chartdocs writes from values.yaml: change a value or its
// comment without `make manifests` and this fails.
func TestREADMEIsCurrent(t *testing.T) {
	stale, err := run(repoRoot, true)
	if err != nil {
		t.Fatal(err)
	}
	if stale {
		t.Errorf("%s is stale: run 'go run ./hack/chartdocs' (or make manifests) and commit", readmeFile)
	}
}

// Every value the README lists says what it does.
func TestEveryValueIsDocumented(t *testing.T) {
	values, err := os.ReadFile(filepath.Join(repoRoot, valuesFile))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := Rows(values)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) < 20 {
		t.Fatalf("only %d rows from %s", len(rows), valuesFile)
	}
	for _, r := range rows {
		if r.Description == "" {
			t.Errorf("%s: %s has no comment above it", valuesFile, r.Key)
		}
	}
}

func TestRows(t *testing.T) {
	values := `# The file's own comment, apart.

# name of the thing.
name: ""
# The group.
group:
  # size, at least 1.
  size: 2
  # policy is one of A | B.
  policy: A
  nested:
    # deep is documented,
    # on two lines.
    deep: null
resources:
  requests:
    cpu: 50m
  limits: {memory: 1Gi}
# list, in flow style.
list:
  - a
  - b: c
`
	rows, err := Rows([]byte(values))
	if err != nil {
		t.Fatal(err)
	}
	want := []Row{
		{Key: "name", Default: `""`, Description: "name of the thing."},
		{Key: "group", Description: "The group."},
		{Key: "group.size", Default: "2", Description: "size, at least 1."},
		{Key: "group.policy", Default: "A", Description: "policy is one of A | B."},
		{Key: "group.nested.deep", Default: "null", Description: "deep is documented, on two lines."},
		{Key: "resources", Default: "{requests: {cpu: 50m}, limits: {memory: 1Gi}}"},
		{Key: "list", Default: "[a, {b: c}]", Description: "list, in flow style."},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	table := Table(rows)
	for _, line := range []string{
		"| `group.policy` | `A` | policy is one of A \\| B. |",
		"| `group` |  | The group. |",
		"| `resources` | `{requests: {cpu: 50m}, limits: {memory: 1Gi}}` |  |",
	} {
		if !strings.Contains(table, line+"\n") {
			t.Errorf("table lacks the line %q:\n%s", line, table)
		}
	}
	if got := Table([]Row{{Key: "a", Default: "x", Description: "for <release>-webhook"}}); !strings.Contains(got, "for &lt;release&gt;-webhook |") {
		t.Errorf("an HTML-like word is not escaped: %s", got)
	}
}

func TestRowsRefusesWhatIsNotAMapping(t *testing.T) {
	for _, bad := range []string{"- a\n- b\n", "a: [\n", ""} {
		if _, err := Rows([]byte(bad)); err == nil {
			t.Errorf("Rows(%q) succeeded", bad)
		}
	}
}

func TestSplice(t *testing.T) {
	readme := "# Chart\n\nintro\n\n" + BeginMarker + "\n| old |\n" + EndMarker + "\n\n## After\n"
	out, err := Splice([]byte(readme), "| new |\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "# Chart\n\nintro\n\n" + BeginMarker + "\n| new |\n" + EndMarker + "\n\n## After\n"
	if string(out) != want {
		t.Errorf("Splice:\n%s\nwant:\n%s", out, want)
	}
	again, err := Splice(out, "| new |\n")
	if err != nil || string(again) != want {
		t.Errorf("Splice is not idempotent: %q, %v", again, err)
	}
	for name, bad := range map[string]string{
		"no markers":     "# Chart\n",
		"end before":     EndMarker + "\n" + BeginMarker + "\n",
		"twice":          BeginMarker + "\n" + EndMarker + "\n" + BeginMarker + "\n" + EndMarker + "\n",
		"no begin":       "x\n" + EndMarker + "\n",
		"begin mid-line": "x " + BeginMarker + EndMarker + "\n",
	} {
		if _, err := Splice([]byte(bad), "| t |\n"); err == nil {
			t.Errorf("%s: Splice succeeded", name)
		}
	}
}

// A copy of the chart whose values.yaml comments changed: check reports the README
// stale and leaves it alone; a run rewrites it, after which it is current.
func TestRunRewritesAStaleREADME(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, chartDir)
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(repoRoot, chartDir))); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	values, err := os.ReadFile(filepath.Join(dir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(values), "# nameOverride replaces", "# nameOverride, newly documented, replaces", 1)
	if changed == string(values) {
		t.Fatal("values.yaml no longer documents nameOverride: change the test")
	}
	if err := os.WriteFile(filepath.Join(dir, "values.yaml"), []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}

	stale, err := run(root, true)
	if err != nil || !stale {
		t.Fatalf("check: stale %v, err %v; want stale", stale, err)
	}
	if got, _ := os.ReadFile(filepath.Join(root, readmeFile)); string(got) != string(readme) {
		t.Error("check changed the README")
	}
	if _, err := run(root, false); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(root, readmeFile))
	if !strings.Contains(string(got), "| `nameOverride` | `\"\"` | nameOverride, newly documented, replaces") {
		t.Errorf("README not rewritten:\n%s", got)
	}
	if stale, err := run(root, true); err != nil || stale {
		t.Errorf("after a run: stale %v, err %v", stale, err)
	}
}

// A template that renders an object purposes.go does not describe fails the run, naming
// the object: the inventory never leaves one out.
func TestRunRefusesAnObjectWithoutAPurpose(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, chartDir)
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(repoRoot, chartDir))); err != nil {
		t.Fatal(err)
	}
	extra := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-surprise\n"
	if err := os.WriteFile(filepath.Join(dir, "templates", "surprise.yaml"), []byte(extra), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := run(root, true)
	if err == nil || !strings.Contains(err.Error(), "ConfigMap quotagate-surprise") {
		t.Errorf("err = %v, want one naming ConfigMap quotagate-surprise", err)
	}
}

// The README's inventory lists what the chart renders with the defaults, and the objects
// of the modes as theirs: the table that said the webhook adds the gate while the
// default installs a MutatingAdmissionPolicy (issue 34) cannot come back.
func TestInventoryFollowsTheModes(t *testing.T) {
	rows, err := Inventory(filepath.Join(repoRoot, chartDir))
	if err != nil {
		t.Fatal(err)
	}
	when := map[string]string{}
	for _, r := range rows {
		w, err := When(Renderings, r.Present)
		if err != nil {
			t.Fatalf("%s: %v", r.Object.key(), err)
		}
		when[r.Object.key()] = w
	}
	for key, want := range map[string]string{
		"Deployment quotagate-manager":                   "always",
		"MutatingAdmissionPolicy quotagate-gate":         "with `admission.mode=auto`",
		"Deployment quotagate-webhook":                   "with `admission.mode=webhook`",
		"MutatingWebhookConfiguration quotagate-webhook": "with `admission.mode=webhook`",
		"PodDisruptionBudget quotagate-manager":          "with `manager.replicas=2`; unless `manager.podDisruptionBudget.enabled=false`",
		"APIService v1alpha1.visibility.quotagate.io":    "unless `visibility.enabled=false`",
		"PrometheusRule quotagate":                       "with `metrics.prometheusRule.enabled=true`",
	} {
		if got := when[key]; got != want {
			t.Errorf("%s: rendered %q, want %q", key, got, want)
		}
	}
	for _, r := range rows {
		if r.Object.key() == "ClusterRole quotagate-manager" {
			for _, want := range []string{"pods: delete, get, list, patch, watch", "pods/eviction: create"} {
				if !strings.Contains(r.Rules[0].rules, want) {
					t.Errorf("the manager's ClusterRole rules %q lack %q", r.Rules[0].rules, want)
				}
			}
		}
	}
}

func TestWhen(t *testing.T) {
	a, b, c := Setting{Text: "a=1"}, Setting{Text: "b=1"}, Setting{Text: "c=1"}
	renderings := [][]Setting{{}, {a}, {b}, {a, b}, {c}}
	for name, tc := range map[string]struct {
		present []int
		want    string
	}{
		"everywhere":         {present: []int{0, 1, 2, 3, 4}, want: "always"},
		"with a":             {present: []int{1, 3}, want: "with `a=1`"},
		"unless b":           {present: []int{0, 1, 4}, want: "unless `b=1`"},
		"with a unless b":    {present: []int{1}, want: "with `a=1`; unless `b=1`"},
		"unless a and b":     {present: []int{0, 1, 2, 4}, want: "unless `a=1` and `b=1`"},
		"unless a, or c":     {present: []int{0, 2}, want: "unless `a=1`, or `c=1`"},
		"the defaults alone": {present: []int{0}, want: "unless `a=1`, or `b=1`, or `c=1`"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := When(renderings, tc.present)
			if err != nil || got != tc.want {
				t.Errorf("When = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// Two renderings with the same settings, one with the object and one without: no
// sentence says when it is rendered, and When says so instead of guessing.
func TestWhenRefusesWhatNoSettingTellsApart(t *testing.T) {
	a := Setting{Text: "a=1"}
	if got, err := When([][]Setting{{a}, {a}}, []int{0}); err == nil {
		t.Errorf("When = %q, want an error", got)
	}
}
