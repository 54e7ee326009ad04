package localcluster

import (
	"errors"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/go-logr/logr/testr"
)

// StartForTest takes every *testing.T and *testing.B.
var _ TB = testing.TB(nil)

// recordingTB keeps what a logger writes to the test log.
type recordingTB struct {
	testing.TB
	lines []string
}

func (r *recordingTB) Helper() {}

func (r *recordingTB) Log(args ...any) {
	for _, a := range args {
		r.lines = append(r.lines, a.(string))
	}
}

// logLines writes the same lines through a logger, as the control plane's code logs.
func logLines(l logr.Logger) {
	l.Info("started", "component", "etcd", "port", 2379)
	l.WithName("apiserver").WithValues("dir", "/tmp/x").V(0).Info("ready")
	l.V(1).Info("not written at verbosity 0")
	l.Error(errors.New("exit status 1"), "process died", "name", "kwok")
}

func TestStartForTestLogsAsTestr(t *testing.T) {
	want, got := &recordingTB{TB: t}, &recordingTB{TB: t}
	logLines(testr.NewWithInterface(want, testr.Options{}))
	logLines(logr.New(&testLogSink{Formatter: funcr.NewFormatter(funcr.Options{}), t: got}))
	if len(got.lines) != 3 || !slices.Equal(got.lines, want.lines) {
		t.Errorf("Test log lines = %q, want testr's %q", got.lines, want.lines)
	}
}
