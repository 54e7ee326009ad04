//go:build e2e

package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quotagate/quotagate/internal/localinstall"
)

// upgradeFromFile names the git commit of the previous release, the one place it is
// recorded.
const upgradeFromFile = "hack/upgrade-from"

// version is one side of an upgrade: its packaged chart and its webhook and manager.
type version struct {
	chart, binDir            string
	chartVersion, appVersion string
}

// previousRef reads the commit of the previous release from hack/upgrade-from.
func previousRef(t *testing.T, root string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, upgradeFromFile))
	fatalIf(t, err, "reading the previous release's commit")
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			return line
		}
	}
	t.Fatalf("%s names no git commit", upgradeFromFile)
	return ""
}

// git runs git in root and returns its standard output.
func git(root string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", &gitError{args: args, err: err, stderr: strings.TrimSpace(stderr.String())}
	}
	return strings.TrimSpace(string(out)), nil
}

type gitError struct {
	args   []string
	err    error
	stderr string
}

func (e *gitError) Error() string {
	return "git " + strings.Join(e.args, " ") + ": " + e.err.Error() + ": " + e.stderr
}

// previousVersion extracts the tree of ref with `git archive` into work, builds its
// webhook and manager there (the module's dependencies come from the Go module cache or
// proxy) and packages its chart, as its release did.
func previousVersion(t *testing.T, root, ref, work string) version {
	t.Helper()
	if _, err := git(root, "cat-file", "-e", ref+"^{commit}"); err != nil {
		t.Fatalf("The upgrade test installs the previous release first, from git commit %s (%s), "+
			"which this clone does not have (a shallow clone?): run `git fetch --unshallow` or "+
			"`git fetch origin %s`. %v", ref, upgradeFromFile, ref, err)
	}
	tree := filepath.Join(work, "previous")
	fatalIf(t, os.MkdirAll(tree, 0o755), "creating "+tree)
	archive := filepath.Join(work, "previous.tar")
	if _, err := git(root, "archive", "--format=tar", "-o", archive, ref); err != nil {
		t.Fatalf("Extracting the previous release: %v", err)
	}
	if out, err := exec.Command("tar", "-xf", archive, "-C", tree).CombinedOutput(); err != nil {
		t.Fatalf("Unpacking %s: %v\n%s", archive, err, out)
	}
	return buildVersion(t, tree, ref, filepath.Join(work, "previous-bin"), filepath.Join(work, "charts"))
}

// workingTreeVersion builds and packages the working tree.
func workingTreeVersion(t *testing.T, root, work string) version {
	t.Helper()
	rev, err := git(root, "rev-parse", "HEAD")
	if err != nil {
		rev = "unknown"
	}
	return buildVersion(t, root, rev, filepath.Join(work, "bin"), filepath.Join(work, "charts"))
}

// buildVersion packages the chart of tree into charts and builds its binaries into
// binDir, stamped with the chart's appVersion as `make build` stamps them.
func buildVersion(t *testing.T, tree, revision, binDir, charts string) version {
	t.Helper()
	chart, err := localinstall.PackageChart(filepath.Join(tree, "charts", "quotagate"), charts)
	fatalIf(t, err, "packaging the chart of "+tree)
	v := version{chart: chart, binDir: binDir}
	v.chartVersion, v.appVersion, err = localinstall.ChartVersions(chart)
	fatalIf(t, err, "reading "+chart)
	fatalIf(t, localinstall.BuildRelease(t.Context(), tree, binDir, v.appVersion, revision), "building "+v.appVersion)
	return v
}
