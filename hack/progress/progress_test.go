// Package progress tests hack/progress/progress.sh, which the Makefile runs around its
// long builds (make tools, make demo).
package progress

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// run runs progress.sh with args and a heartbeat every second, and returns its
// stdout, stderr and exit code.
func run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{"progress.sh"}, args...)...)
	cmd.Env = append(os.Environ(), "PROGRESS_INTERVAL=1")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// A step that runs for a while is never silent longer than the interval: it says which
// step it is, that it still runs and for how long, passes the command's output through
// and ends with how long it took.
func TestLongStepTalks(t *testing.T) {
	out, _, code := run(t, "[2/6] kube-scheduler", "sh", "-c", "echo building; sleep 2.5")
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	// It says it started, lets the step speak, says every second or so how long it
	// has run (a loaded machine may skip a second, never go back), and says when it
	// is done.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 4 {
		t.Fatalf("got %d lines, want at least 4:\n%s", len(lines), out)
	}
	first := []*regexp.Regexp{
		regexp.MustCompile(`^==> \[2/6\] kube-scheduler: started$`),
		regexp.MustCompile(`^building$`),
	}
	for i, re := range first {
		if !re.MatchString(lines[i]) {
			t.Errorf("line %d is %q, want %s", i+1, lines[i], re)
		}
	}
	still := regexp.MustCompile(`^==> \[2/6\] kube-scheduler: still running, ([0-9]+)s so far$`)
	last := 0
	for i, l := range lines[2 : len(lines)-1] {
		m := still.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("line %d is %q, want %s", i+3, l, still)
			continue
		}
		n, _ := strconv.Atoi(m[1])
		if n <= last {
			t.Errorf("line %d says %ds so far after %ds", i+3, n, last)
		}
		last = n
	}
	if last == 0 {
		t.Errorf("a step of 2.5 s never said it was still running:\n%s", out)
	}
	if done := regexp.MustCompile(`^==> \[2/6\] kube-scheduler: done in [0-9]+s$`); !done.MatchString(lines[len(lines)-1]) {
		t.Errorf("last line is %q, want %s", lines[len(lines)-1], done)
	}
}

// A failed step fails progress.sh with its exit code, and says so on stderr.
func TestFailedStepKeepsItsExitCode(t *testing.T) {
	_, errOut, code := run(t, "[1/6] kube-apiserver", "sh", "-c", "exit 3")
	if code != 3 || !strings.Contains(errOut, "[1/6] kube-apiserver: failed after") {
		t.Errorf("exit %d, stderr %q; want exit 3 and the step named as failed", code, errOut)
	}
}

// make tools labels each binary with which of how many it is, and make demo KEEP=1
// builds the demo, webhook, manager and plugin where make demo does (so it finds them
// up to date) and runs the demo with them, kept.
func TestMakefileRunsItsLongStepsThroughIt(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	makeN := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("make", append([]string{"-n", "-B", "--no-print-directory"}, args...)...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make -n %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	tools := makeN("tools")
	for i, name := range []string{"kube-apiserver", "kube-scheduler", "kube-controller-manager", "etcd", "kwok"} {
		label := regexp.QuoteMeta("progress.sh '[" + string(rune('1'+i)) + "/6] " + name + " into ")
		if !regexp.MustCompile(label).MatchString(tools) {
			t.Errorf("make tools does not build %s through progress.sh as [%d/6]:\n%s", name, i+1, tools)
		}
	}
	if !strings.Contains(tools, "[6/6] stages") {
		t.Errorf("make tools does not name kwok's stages [6/6]:\n%s", tools)
	}

	demo := makeN("demo", "KEEP=1")
	build := regexp.MustCompile(`progress\.sh 'demo: [^']*' \\\s*go build -ldflags '[^']*' -o _output/demo-bin/ ./hack/demo ./cmd/webhook ./cmd/manager ./cmd/kubectl-quotagate`)
	if !build.MatchString(demo) {
		t.Errorf("make demo does not build the demo, webhook, manager and plugin into _output/demo-bin through progress.sh:\n%s", demo)
	}
	if !strings.Contains(demo, "_output/demo-bin/demo --bin-dir _output/demo-bin --keep") {
		t.Errorf("make demo KEEP=1 does not run the built demo with --bin-dir and --keep:\n%s", demo)
	}
}
