//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quotagate/quotagate/test/localinstall"
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
	msg := "git " + strings.Join(e.args, " ") + ": " + e.err.Error()
	if e.stderr != "" {
		msg += ": " + e.stderr
	}
	return msg
}

// versions extracts the tree of the previous release (ref) with `git archive`, builds
// its webhook and manager there (the module's dependencies come from the Go module cache
// or proxy) and packages its chart, as its release did; and the same for the working
// tree. The two builds run side by side.
func versions(t *testing.T, root, ref, work string) (prev, next version) {
	t.Helper()
	commit, err := git(root, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
	if err != nil {
		t.Fatalf("The upgrade test installs the previous release first, from git commit %s (%s), "+
			"which this clone does not have (a shallow clone?): run `git fetch --unshallow` or "+
			"`git fetch origin %s`. %v", ref, upgradeFromFile, ref, err)
	}
	tree := extract(t, root, commit)
	rev, err := git(root, "rev-parse", "HEAD")
	if err != nil {
		rev = "unknown"
	}
	charts := filepath.Join(work, "charts")
	var prevErr, nextErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		prev, prevErr = buildVersion(t.Context(), tree, commit, filepath.Join(work, "previous-bin"), charts)
	})
	wg.Go(func() { next, nextErr = buildVersion(t.Context(), root, rev, filepath.Join(work, "bin"), charts) })
	wg.Wait()
	fatalIf(t, prevErr, "the previous release "+ref)
	fatalIf(t, nextErr, "the working tree")
	return prev, next
}

// extract writes the tree of a commit with `git archive` into a directory of the user's
// cache named after it, once: the go command's build cache keys packages by their directory,
// so the same directory lets the next run reuse the previous release's compiled packages.
func extract(t *testing.T, root, commit string) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	fatalIf(t, err, "finding the user's cache directory")
	tree := filepath.Join(cache, "quotagate", "upgrade-from", commit)
	if _, err := os.Stat(filepath.Join(tree, "go.mod")); err == nil {
		return tree
	}
	tmp, err := os.MkdirTemp(filepath.Dir(tree), commit+".tmp")
	if os.IsNotExist(err) {
		fatalIf(t, os.MkdirAll(filepath.Dir(tree), 0o755), "creating "+filepath.Dir(tree))
		tmp, err = os.MkdirTemp(filepath.Dir(tree), commit+".tmp")
	}
	fatalIf(t, err, "creating a directory for the previous release")
	defer func() { _ = os.RemoveAll(tmp) }()
	archive := filepath.Join(tmp, "tree.tar")
	if _, err := git(root, "archive", "--format=tar", "-o", archive, commit); err != nil {
		t.Fatalf("Extracting the previous release: %v", err)
	}
	dir := filepath.Join(tmp, "tree")
	fatalIf(t, os.Mkdir(dir, 0o755), "creating "+dir)
	if out, err := exec.Command("tar", "-xf", archive, "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("Unpacking %s: %v\n%s", archive, err, out)
	}
	// A concurrent run may have won the rename: its tree is the same.
	if err := os.Rename(dir, tree); err != nil {
		if _, statErr := os.Stat(filepath.Join(tree, "go.mod")); statErr != nil {
			t.Fatalf("Moving the previous release into %s: %v", tree, err)
		}
	}
	return tree
}

// buildVersion packages the chart of tree into charts and builds its binaries into
// binDir, stamped with the chart's appVersion as `make build` stamps them.
func buildVersion(ctx context.Context, tree, revision, binDir, charts string) (version, error) {
	chart, err := localinstall.PackageChart(filepath.Join(tree, "charts", "quotagate"), charts)
	if err != nil {
		return version{}, err
	}
	v := version{chart: chart, binDir: binDir}
	if v.chartVersion, v.appVersion, err = localinstall.ChartVersions(chart); err != nil {
		return v, err
	}
	return v, localinstall.BuildRelease(ctx, tree, binDir, v.appVersion, revision)
}

// previousWebhookStop excuses the one failed create the previous release's webhook can
// cause as it stops: at SIGTERM that release shuts its server down at once, which
// closes the connections the API server keeps alive to it, and a call the API server
// was sending on one of them fails (EOF, or a reset: the API server does not retry a
// POST), which failurePolicy Fail makes a failed create. The working tree's webhook
// drains first (--shutdown-drain; docs/upgrading.md). A failure of any other
// kind, or away from such a stop, is not excused.
func previousWebhookStop(inst *localinstall.Installation, prev version) func(time.Time, error) string {
	return excuseStops(inst.ProcessStops, prev.binDir, filepath.Base(prev.chart))
}

// excuseStops is previousWebhookStop over the stops that stops returns, the previous
// release's binaries being in binDir and its chart named chart.
func excuseStops(stops func() []localinstall.ProcessStop, binDir, chart string) func(time.Time, error) string {
	return func(at time.Time, err error) string {
		msg := err.Error()
		cutOff := strings.HasSuffix(msg, ": EOF") || strings.Contains(msg, "connection reset by peer")
		if !strings.Contains(msg, "failed calling webhook") || !cutOff {
			return ""
		}
		for _, s := range stops() {
			if s.Component == "webhook" && strings.HasPrefix(s.Binary, binDir+string(filepath.Separator)) &&
				!at.Before(s.Began) && at.Before(s.Ended.Add(2*time.Second)) {
				return fmt.Sprintf("the previous release's webhook (%s), sent SIGTERM at %s, closed the connection under the call: "+
					"that release does not drain, this one does", chart, s.Began.Format(time.StampMilli))
			}
		}
		return ""
	}
}
