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

// A copy of the chart whose values.yaml changed: check reports the README stale and
// leaves it alone; a run rewrites it, after which it is current.
func TestRunRewritesAStaleREADME(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, filepath.Dir(valuesFile))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(repoRoot, readmeFile))
	if err != nil {
		t.Fatal(err)
	}
	write := func(path, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(root, path), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(readmeFile, string(readme))
	write(valuesFile, "# replicas of the thing.\nreplicas: 3\n")

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
	if !strings.Contains(string(got), "| `replicas` | `3` | replicas of the thing. |\n") {
		t.Errorf("README not rewritten:\n%s", got)
	}
	if stale, err := run(root, true); err != nil || stale {
		t.Errorf("after a run: stale %v, err %v", stale, err)
	}
}
