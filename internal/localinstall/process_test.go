package localinstall

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A process that dies while Install waits for it is reported by name, with the end of
// its log, instead of a timeout.
func TestProcessThatExitsIsNamedWithItsLog(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "manager.log")
	p, err := startProcess("manager", "/bin/sh", []string{"-c", "echo 'loading kubeconfig: no such file' >&2; exit 3"}, nil, logPath)
	if err != nil {
		t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	err = p.waitReady(ctx, "http://127.0.0.1:"+strconv.Itoa(port)+"/readyz")
	var exit *ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("waitReady returned %v, want an *ExitError", err)
	}
	if exit.Process != "manager" || !strings.Contains(exit.LogTail, "loading kubeconfig: no such file") {
		t.Errorf("ExitError names %q with log tail %q, want manager and its last line", exit.Process, exit.LogTail)
	}
	if !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("error %q does not give the exit status", err)
	}
}

// A process stopped on purpose is not reported as having failed.
func TestStoppedProcessIsNotAnError(t *testing.T) {
	p, err := startProcess("webhook", "/bin/sh", []string{"-c", "sleep 60"}, nil, filepath.Join(t.TempDir(), "webhook.log"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.exitError(); err != nil {
		t.Fatalf("running process reported as %v", err)
	}
	if err := p.stop(); err != nil {
		t.Fatal(err)
	}
	if err := p.exitError(); err != nil {
		t.Errorf("stopped process reported as %v", err)
	}
}
