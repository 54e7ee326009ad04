package supervise

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// LogReporter is what ReportLogs writes to: a test's log.
type LogReporter interface {
	Name() string
	Logf(format string, args ...any)
}

// ReportLogs tells, for a test that failed, where the logs of its processes are. It
// copies each log at paths (a test's temporary directory is removed when it ends) into
// a directory that outlives the test, $QUOTAGATE_TEST_LOGS/<test> (by default under
// the system's temporary directory, quotagate-test-logs), and logs one line naming it.
// Outside CI (CI unset) it also quotes the last lines of each log, as a developer
// reads them; in CI the end of a failed test's output is its failures, not pages of
// process logs, since CI shows only that end.
func ReportLogs(t LogReporter, lines int, paths ...string) {
	if len(paths) == 0 {
		return
	}
	if os.Getenv("CI") == "" {
		for _, p := range paths {
			t.Logf("Last lines of %s:\n%s", p, TailFile(p, lines))
		}
	}
	dir, err := keepLogs(t.Name(), paths)
	if err != nil {
		t.Logf("Keeping the processes' logs: %v", err)
		return
	}
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = filepath.Base(p)
	}
	t.Logf("The logs of %s are kept in %s", strings.Join(names, ", "), dir)
}

// unsafePath is what a test's name may hold that a directory's name should not.
var unsafePath = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// keepLogs copies the files at paths into a new directory for test and returns it.
func keepLogs(test string, paths []string) (string, error) {
	root := os.Getenv("QUOTAGATE_TEST_LOGS")
	if root == "" {
		root = filepath.Join(os.TempDir(), "quotagate-test-logs")
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(root, unsafePath.ReplaceAllString(test, "_")+"-")
	if err != nil {
		return "", err
	}
	for i, p := range paths {
		// Two processes may log to files of one name in different directories.
		if err := copyFile(filepath.Join(dir, fmt.Sprintf("%02d-%s", i, filepath.Base(p))), p); err != nil {
			return dir, err
		}
	}
	return dir, nil
}

func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
