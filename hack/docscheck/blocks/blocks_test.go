package blocks

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRead(t *testing.T) {
	const md = "# A page\n\n" +
		"<!-- not runnable: needs a cloud registry -->\n" +
		"```sh\n" +
		"make deploy IMG=ghcr.io/me/quotagate:dev   # pushes\n" +
		"```\n\n" +
		"```yaml\n" +
		"$ not: a command\n" +
		"```\n\n" +
		"```console\n" +
		"$ kubectl get budgets -n team-a\n" +
		"NAME     STATE\n" +
		"team-a   Open\n" +
		"\n" +
		"$ kubectl quotagate queue clusterbudget/org -o name |\n" +
		"  while read -r p; do echo \"$p\"; done\n" +
		"$ kubectl get --raw '/x#y'\n" +
		"```\n" +
		"```sh\n" +
		"# a comment alone\n" +
		"kubectl label namespace team-a \\\n" +
		"  quotagate.io/enabled=true\n" +
		"```\n"
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "page.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Read(dir, "page.md")
	if err != nil {
		t.Fatal(err)
	}
	want := []Block{
		{File: "page.md", Line: 4, Lang: "sh", Marked: true, NotRunnable: "needs a cloud registry",
			Commands: []Command{{Line: "make deploy IMG=ghcr.io/me/quotagate:dev", Comment: "pushes"}}},
		{File: "page.md", Line: 12, Lang: "console", Commands: []Command{
			{Line: "kubectl get budgets -n team-a", Output: []string{"NAME     STATE", "team-a   Open"}},
			{Line: "kubectl quotagate queue clusterbudget/org -o name |\n  while read -r p; do echo \"$p\"; done"},
			{Line: "kubectl get --raw '/x#y'"},
		}},
		{File: "page.md", Line: 21, Lang: "sh", Commands: []Command{
			{Line: "kubectl label namespace team-a \\\n  quotagate.io/enabled=true"},
		}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("blocks (-want +got):\n%s", diff)
	}
}
