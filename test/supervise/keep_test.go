package supervise

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type fakeReporter struct {
	name  string
	lines []string
}

func (f *fakeReporter) Name() string { return f.name }
func (f *fakeReporter) Logf(format string, args ...any) {
	f.lines = append(f.lines, fmt.Sprintf(format, args...))
}

// A failed test's process logs are copied where they outlive it, and named in one
// line; in CI nothing else is logged (the end of the output stays the failures),
// outside CI the last lines of each are quoted too.
func TestReportLogs(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for _, name := range []string{"etcd.log", "kube-apiserver.log"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("first\nsecond\nlast of "+name+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	t.Setenv("QUOTAGATE_TEST_LOGS", filepath.Join(t.TempDir(), "kept"))

	t.Setenv("CI", "true")
	r := &fakeReporter{name: "TestUpgrade/from 0.2.0"}
	ReportLogs(r, 1, paths...)
	if len(r.lines) != 1 || !strings.Contains(r.lines[0], "etcd.log, kube-apiserver.log are kept in ") {
		t.Fatalf("in CI it logged %q, want one line naming where the logs are", r.lines)
	}
	kept := strings.TrimPrefix(r.lines[0], "The logs of etcd.log, kube-apiserver.log are kept in ")
	if !strings.HasPrefix(filepath.Base(kept), "TestUpgrade_from_0.2.0-") {
		t.Errorf("kept in %s, want a directory named after the test", kept)
	}
	for i, name := range []string{"etcd.log", "kube-apiserver.log"} {
		b, err := os.ReadFile(filepath.Join(kept, fmt.Sprintf("%02d-%s", i, name)))
		if err != nil || !strings.HasSuffix(string(b), "last of "+name+"\n") {
			t.Errorf("kept copy of %s: %q, %v", name, b, err)
		}
	}

	t.Setenv("CI", "")
	r = &fakeReporter{name: "TestLocal"}
	ReportLogs(r, 1, paths...)
	if len(r.lines) != 3 || !strings.HasSuffix(r.lines[0], "\nlast of etcd.log") || !strings.HasSuffix(r.lines[1], "\nlast of kube-apiserver.log") {
		t.Errorf("outside CI it logged %q, want the last line of each log, then where they are kept", r.lines)
	}
}
