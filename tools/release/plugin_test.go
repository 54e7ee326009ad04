package release_test

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	rel "github.com/quotagate/quotagate/tools/release"
)

func sha256Of(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// The host's plugin archive holds an executable kubectl-quotagate (and LICENSE when the
// repository has one) that says it is the release's version and revision, and its
// shell completion, kubectl_complete-quotagate, which completes through the plugin
// beside it.
func TestPluginArchive(t *testing.T) {
	dir := released(t)
	f, err := os.Open(filepath.Join(dir, rel.PluginArchiveName(rel.Platform{OS: runtime.GOOS, Arch: runtime.GOARCH})))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	binDir := t.TempDir()
	bin := filepath.Join(binDir, rel.PluginName)
	var names []string
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
		if hdr.Name == rel.PluginName || hdr.Name == rel.CompletionName {
			if hdr.Mode&0o111 == 0 {
				t.Errorf("%s is not executable: mode %o", hdr.Name, hdr.Mode)
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(binDir, hdr.Name), b, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := rel.PluginName + "," + rel.CompletionName
	if _, err := os.Stat("../../LICENSE"); err == nil {
		want += ",LICENSE"
	}
	if got := strings.Join(names, ","); got != want {
		t.Errorf("archive holds %s, want %s", got, want)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl-quotagate version: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), testVersion+" (revision 0123abcd,") {
		t.Errorf("kubectl-quotagate version printed %q, want %s with revision 0123abcd", out, testVersion)
	}
	// As kubectl runs it for "kubectl quotagate ver<TAB>", with no plugin on the PATH.
	complete := exec.Command(filepath.Join(binDir, rel.CompletionName), "ver")
	complete.Env = append(os.Environ(), "PATH=/nonexistent")
	out, err = complete.Output()
	if err != nil {
		t.Fatalf("%s ver: %v", rel.CompletionName, err)
	}
	if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "version\t") || lines[1] != ":4" {
		t.Errorf("%s ver printed %q, want the version command and directive :4", rel.CompletionName, out)
	}
}

func TestParseVersion(t *testing.T) {
	for v, want := range map[string]string{
		"v1.2.3": "1.2.3", "v0.0.0-ci": "0.0.0-ci", "v1.2.3-rc.1+build.5": "1.2.3-rc.1+build.5",
	} {
		if got, err := rel.ParseVersion(v); err != nil || got != want {
			t.Errorf("ParseVersion(%q) = %q, %v; want %q", v, got, err, want)
		}
	}
	for v, why := range map[string]string{
		"":         "must start with v",
		"1.2.3":    "must start with v",
		"v1.2":     "not a semantic version",
		"v1.2.3.4": "not a semantic version",
		"v01.2.3":  "not a semantic version",
		"latest":   "must start with v",
		"vlatest":  "not a semantic version",
	} {
		_, err := rel.ParseVersion(v)
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("ParseVersion(%q) = %v, want an error saying %q", v, err, why)
		}
	}
}
