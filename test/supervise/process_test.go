package supervise

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func startForTest(t *testing.T, c Command) *Process {
	t.Helper()
	if c.LogPath == "" {
		c.LogPath = filepath.Join(t.TempDir(), c.Name+".log")
	}
	p, err := Start(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(time.Second) })
	return p
}

// waitUntil polls cond until it holds, failing the test after a minute.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("Timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func readLog(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// A process that dies on its own is reported by name, with its exit status and the
// end of its log.
func TestExitIsNamedWithItsStatusAndLog(t *testing.T) {
	p := startForTest(t, Command{Name: "manager", Binary: "/bin/sh", Args: []string{"-c", "echo 'loading kubeconfig: no such file' >&2; exit 3"}})
	<-p.Done()
	err := p.Err()
	var exit *ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("Err returned %v, want an *ExitError", err)
	}
	if exit.Process != "manager" || exit.LogPath != p.LogPath() || !strings.Contains(exit.LogTail, "loading kubeconfig: no such file") {
		t.Errorf("ExitError names %q with log %s ending %q, want manager, %s and its last line", exit.Process, exit.LogPath, exit.LogTail, p.LogPath())
	}
	for _, want := range []string{"manager exited", "exit status 3", "loading kubeconfig: no such file"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Error %q does not contain %q", err, want)
		}
	}
}

// A process stopped on purpose is not reported as having failed.
func TestStoppedProcessIsNotAnError(t *testing.T) {
	p := startForTest(t, Command{Name: "webhook", Binary: "/bin/sh", Args: []string{"-c", "sleep 60"}})
	if err := p.Err(); err != nil {
		t.Fatalf("Running process reported as %v", err)
	}
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("Stop returned before the process exited")
	}
	if err := p.Err(); err != nil {
		t.Errorf("Stopped process reported as %v", err)
	}
	if err := p.Stop(5 * time.Second); err != nil {
		t.Errorf("Stopping again: %v", err)
	}
}

// A process that ignores SIGTERM is killed once the grace period is over.
func TestStopKillsAProcessThatIgnoresTerm(t *testing.T) {
	p := startForTest(t, Command{Name: "stubborn", Binary: "/bin/sh", Args: []string{"-c", `trap "" TERM; echo ready; while :; do sleep 1; done`}})
	waitUntil(t, "the TERM trap", func() bool { return strings.Contains(readLog(t, p.LogPath()), "ready") })
	if err := p.Stop(100 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if err := p.Err(); err != nil {
		t.Errorf("Process killed by Stop reported as %v", err)
	}
}

// Stop reaches what the process forked, not only the process itself.
func TestStopKillsTheProcessGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	p := startForTest(t, Command{Name: "parent", Binary: "/bin/sh", Args: []string{"-c", "sleep 60 & echo $! > " + pidFile + "; wait"}})
	var child int
	waitUntil(t, "the child's pid", func() bool {
		data, err := os.ReadFile(pidFile)
		if err != nil || !strings.HasSuffix(string(data), "\n") {
			return false
		}
		child, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil
	})
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	// The orphaned child is reaped by init or a subreaper; until then it is a zombie.
	waitUntil(t, "the child to be gone", func() bool { return gone(child) })
}

// gone reports whether pid no longer runs: it does not exist or is a zombie.
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	_, rest, ok := strings.Cut(string(stat), ") ")
	return ok && strings.HasPrefix(rest, "Z")
}

func TestEnvIsAppendedToTheEnvironment(t *testing.T) {
	t.Setenv("SUPERVISE_TEST_INHERITED", "inherited")
	p := startForTest(t, Command{
		Name: "env", Binary: "/bin/sh", Args: []string{"-c", `echo "$SUPERVISE_TEST_INHERITED $SUPERVISE_TEST_ADDED"`},
		Env: []string{"SUPERVISE_TEST_ADDED=added"},
	})
	<-p.Done()
	if diff := cmp.Diff("inherited added\n", readLog(t, p.LogPath())); diff != "" {
		t.Errorf("Log (-want +got):\n%s", diff)
	}
}

// Starting twice with the same log truncates it, or with AppendLog keeps the first
// run's output after a line naming each command.
func TestLogOfARestartedProcess(t *testing.T) {
	tests := map[string]struct {
		appendLog bool
		want      []string
	}{
		"truncated": {want: []string{"second run"}},
		"appended": {appendLog: true, want: []string{
			"/bin/sh -c echo first run", "first run", "/bin/sh -c echo second run", "second run",
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			logPath := filepath.Join(t.TempDir(), "restarted.log")
			for _, run := range []string{"first run", "second run"} {
				p := startForTest(t, Command{Name: "restarted", Binary: "/bin/sh", Args: []string{"-c", "echo " + run}, LogPath: logPath, AppendLog: tc.appendLog})
				<-p.Done()
			}
			var got []string
			for line := range strings.Lines(readLog(t, logPath)) {
				line = strings.TrimSuffix(line, "\n")
				// A header line is "--- <time>: <command line>"; the time varies.
				if strings.HasPrefix(line, "--- ") {
					_, line, _ = strings.Cut(line, ": ")
				}
				got = append(got, line)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Log lines (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStartOfAMissingBinaryNamesIt(t *testing.T) {
	_, err := Start(Command{Name: "kwok", Binary: filepath.Join(t.TempDir(), "kwok"), LogPath: filepath.Join(t.TempDir(), "kwok.log")})
	if err == nil || !strings.Contains(err.Error(), "starting kwok") {
		t.Errorf("Start of a missing binary returned %v, want an error naming kwok", err)
	}
}
