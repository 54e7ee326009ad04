package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startFakeServe starts a shell whose command line looks like `localcluster serve
// --dir=<stateDir>`, and writes its pid file, as up does.
func startFakeServe(t *testing.T, stateDir string) *exec.Cmd {
	t.Helper()
	scripts := t.TempDir()
	if err := os.WriteFile(filepath.Join(scripts, serveSubcmd), []byte("while :; do sleep 0.1; done\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := &exec.Cmd{Path: "/bin/sh", Args: []string{"localcluster", serveSubcmd, "--dir=" + stateDir}, Dir: scripts}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	if err := os.WriteFile(filepath.Join(stateDir, pidFile), []byte(fmt.Sprintln(cmd.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	// Between fork and exec the child's /proc cmdline is still the test binary's: wait
	// for the exec, as up's pid file is only written once serve runs.
	cmdline := filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "cmdline")
	for {
		b, err := os.ReadFile(cmdline)
		if err != nil {
			t.Fatalf("reading the fake serve's command line: %v", err)
		}
		if bytes.Contains(b, []byte(serveSubcmd+"\x00")) {
			return cmd
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestDownStopsTheRecordedServeAndRemovesTheState(t *testing.T) {
	stateDir := t.TempDir()
	cmd := startFakeServe(t, stateDir)
	if _, ok := runningServe(stateDir); !ok {
		t.Fatal("runningServe does not recognise the serve process")
	}
	var out bytes.Buffer
	if err := down(&out, stateDir); err != nil {
		t.Fatalf("down: %v", err)
	}
	if alive(cmd.Process.Pid) {
		t.Errorf("serve process %d still alive after down", cmd.Process.Pid)
	}
	if _, err := os.Stat(stateDir); !os.IsNotExist(err) {
		t.Errorf("State directory after down: %v, want it removed", err)
	}
	if !strings.Contains(out.String(), "stopped") {
		t.Errorf("down output %q does not say it stopped the cluster", out.String())
	}
}

func TestDownLeavesOtherProcessesAlone(t *testing.T) {
	tests := map[string]func(t *testing.T, stateDir string) int{
		"the pid is this test process": func(t *testing.T, stateDir string) int {
			if err := os.WriteFile(filepath.Join(stateDir, pidFile), []byte(fmt.Sprintln(os.Getpid())), 0o644); err != nil {
				t.Fatal(err)
			}
			return os.Getpid()
		},
		"the pid is a serve of another state directory": func(t *testing.T, stateDir string) int {
			other := startFakeServe(t, t.TempDir())
			if err := os.WriteFile(filepath.Join(stateDir, pidFile), []byte(fmt.Sprintln(other.Process.Pid)), 0o644); err != nil {
				t.Fatal(err)
			}
			return other.Process.Pid
		},
	}
	for name, setup := range tests {
		t.Run(name, func(t *testing.T) {
			stateDir := t.TempDir()
			pid := setup(t, stateDir)
			var out bytes.Buffer
			if err := down(&out, stateDir); err != nil {
				t.Fatalf("down: %v", err)
			}
			if !alive(pid) {
				t.Errorf("down killed process %d, which is not this state directory's serve", pid)
			}
			if !strings.Contains(out.String(), "No local control plane running") {
				t.Errorf("down output %q, want it to say nothing was running", out.String())
			}
		})
	}
}
