package localcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRepoRoot(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"go.mod":                 "// quotagate\nmodule github.com/quotagate/quotagate\n\ngo 1.26.0\n",
		"hack/tools/kwok/go.mod": "module github.com/quotagate/quotagate/hack/tools/kwok\n",
		"test/localcluster/x.go": "package localcluster\n",
	}
	for name, content := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := map[string]struct {
		from string
		want string
	}{
		"from the root":                     {from: root, want: root},
		"from a package directory":          {from: filepath.Join(root, "test", "localcluster"), want: root},
		"from inside a nested tools module": {from: filepath.Join(root, "hack", "tools", "kwok"), want: root},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := RepoRoot(tc.from)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("RepoRoot(%s) (-want +got):\n%s", tc.from, diff)
			}
		})
	}

	t.Run("outside the repository", func(t *testing.T) {
		if got, err := RepoRoot(t.TempDir()); err == nil {
			t.Errorf("RepoRoot outside any module = %s, want an error", got)
		}
	})
}

func TestBinariesDefaultToTheRepository(t *testing.T) {
	t.Setenv(KubeBinEnv, "")
	t.Setenv(KwokBinEnv, "")
	o, err := Options{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	root, err := RepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	got := []string{o.KubeBin, o.KwokBin}
	want := []string{filepath.Join(root, "bin", "kube-v1.37.2"), filepath.Join(root, "bin", "kwok-v0.8.0")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Binary directories (-want +got):\n%s", diff)
	}

	t.Setenv(KubeBinEnv, "/opt/kube")
	if o, err = (Options{}).withDefaults(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("/opt/kube", o.KubeBin); diff != "" {
		t.Errorf("KubeBin with %s set (-want +got):\n%s", KubeBinEnv, diff)
	}
}

func TestExtraArgsComeLast(t *testing.T) {
	lines := commandLines(layout{dir: "/d"}, ports{1, 2, 3}, []string{"/s/a.yaml"}, map[string][]string{KubeScheduler: {"--v=4"}})
	args := lines[KubeScheduler].args
	if diff := cmp.Diff("--v=4", args[len(args)-1]); diff != "" {
		t.Errorf("Last scheduler arg (-want +got):\n%s", diff)
	}
	if err := validateExtraArgs(map[string][]string{"kubelet": {"--v=4"}}); err == nil || !strings.Contains(err.Error(), "kubelet") {
		t.Errorf("validateExtraArgs for an unknown process: got %v, want an error naming it", err)
	}
}
