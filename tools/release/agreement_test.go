package release_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

// makeCmd is make in the repository root, without the caller's make variables (a `make
// release VERSION=...` above this test must not leak into it).
func makeCmd(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("make", append([]string{"-s", "--no-print-directory"}, args...)...)
	cmd.Dir = "../.."
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES", "VERSION", "REVISION", "GO_LDFLAGS", "BIN":
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	return cmd
}

// One version everywhere: `make version` is the chart's appVersion, and the binaries
// `make build` stamps (with the Makefile's own ldflags) all print the VERSION given.
func TestVersionsAgree(t *testing.T) {
	out, err := makeCmd(t, "version").Output()
	if err != nil {
		t.Fatalf("make version: %v", err)
	}
	c, err := loader.Load("../../charts/quotagate")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != c.Metadata.AppVersion {
		t.Errorf("make version prints %q, the chart's appVersion is %q", got, c.Metadata.AppVersion)
	}

	const v, rev = "v9.8.7-agree.1", "c0ffee42"
	bin := t.TempDir()
	build := makeCmd(t, "build", "BIN="+bin, "VERSION="+v, "REVISION="+rev)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	for _, c := range [][]string{
		{"manager", "version"},
		{"webhook", "--version"},
		{"kubectl-quotagate", "version"},
	} {
		out, err := exec.Command(filepath.Join(bin, c[0]), c[1:]...).CombinedOutput()
		if err != nil {
			t.Errorf("%s: %v\n%s", strings.Join(c, " "), err, out)
			continue
		}
		if want := v + " (revision " + rev + ","; !strings.HasPrefix(string(out), want) {
			t.Errorf("%s printed %q, want it to start with %q", strings.Join(c, " "), out, want)
		}
	}
}
