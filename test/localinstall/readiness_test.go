package localinstall

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quotagate/quotagate/test/localcluster"
	"github.com/quotagate/quotagate/test/supervise"
)

// A process that dies while Install waits for it is reported by name, with the end of
// its log, instead of a timeout.
func TestProcessThatExitsIsNamedWithItsLog(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "manager.log")
	p, err := supervise.Start(supervise.Command{
		Name: "manager", Binary: "/bin/sh", Args: []string{"-c", "echo 'loading kubeconfig: no such file' >&2; exit 3"},
		LogPath: logPath, AppendLog: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(stopGrace) })
	ports, err := localcluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	port := ports[0]
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	err = waitReady(ctx, p, "http://127.0.0.1:"+strconv.Itoa(port)+"/readyz")
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
