package app

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// processStart is about when this test binary started: controller-runtime's logger
// starts its 30-second clock when its package is initialised, just before.
var processStart = time.Now()

// loggerHelperEnv makes TestNoStackTraceFromAnUnsetLogger the helper process it runs.
const loggerHelperEnv = "QUOTAGATE_TEST_LOGGER_HELPER"

// A command that runs for long (ui, -w) must not print controller-runtime's 40-line
// "log.SetLogger(...) was never called" stack trace when a library first logs through
// it, 30 seconds in. The test runs itself three times as a helper process that logs as
// controller-runtime's API warning logger does, 31 seconds after it started: after
// Run, which the plugin's main calls, ran a command through controller-runtime's
// client (budgets, against a server that refuses it); the same with -v=1, which shows
// the libraries' logs; and without Run, to show that the trace it looks for is real.
func TestNoStackTraceFromAnUnsetLogger(t *testing.T) {
	if mode := os.Getenv(loggerHelperEnv); mode != "" {
		args := []string{"--server=https://127.0.0.1:1", "budgets"}
		if mode == "verbose" {
			args = append([]string{"-v=1"}, args...)
		}
		if mode != "bare" {
			streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}
			if code := Run(context.Background(), streams, args); code != 1 {
				t.Fatalf("budgets against a closed port: exit %d, want 1", code)
			}
		}
		time.Sleep(time.Until(processStart.Add(31 * time.Second)))
		ctrllog.Log.Info("a warning from the API server")
		return
	}
	t.Parallel()
	stderr := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, mode := range []string{"plugin", "verbose", "bare"} {
		wg.Go(func() {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestNoStackTraceFromAnUnsetLogger$")
			cmd.Env = append(os.Environ(), loggerHelperEnv+"="+mode)
			var errOut bytes.Buffer
			cmd.Stderr = &errOut
			if err := cmd.Run(); err != nil {
				t.Errorf("the %s helper: %v\n%s", mode, err, errOut.String())
			}
			mu.Lock()
			defer mu.Unlock()
			stderr[mode] = errOut.String()
		})
	}
	wg.Wait()
	const trace = "log.SetLogger(...) was never called"
	if !strings.Contains(stderr["bare"], trace) {
		t.Fatalf("without the plugin's Run, the helper printed no %q: the test cannot see what it guards against; stderr:\n%s", trace, stderr["bare"])
	}
	if got := stderr["plugin"]; got != "" {
		t.Errorf("after Run, a late library log printed, want nothing on stderr:\n%s", got)
	}
	const logged = "a warning from the API server"
	if got := stderr["verbose"]; strings.Contains(got, trace) || !strings.Contains(got, logged) {
		t.Errorf("with -v=1, stderr should have the late log %q and no stack trace:\n%s", logged, got)
	}
}
