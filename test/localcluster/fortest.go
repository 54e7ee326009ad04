package localcluster

import (
	"context"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/quotagate/quotagate/test/supervise"
)

// TB is what StartForTest needs of a *testing.T or *testing.B. It is an interface, not
// testing.TB, so that this package (which hack/localcluster, the demo and the benchmarks
// link) does not import testing; `make verify` fails on a non-test file that does.
type TB interface {
	Helper()
	Context() context.Context
	TempDir() string
	Cleanup(f func())
	Failed() bool
	Name() string
	Log(args ...any)
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// StartForTest starts a cluster for a test, in a directory under t.TempDir() unless
// opts.Dir is set, and fails the test if it cannot start. At cleanup it reports a
// process that died during the test, prints every process's log tail if the test
// failed, and stops the cluster.
func StartForTest(t TB, opts Options) *Cluster {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	c, err := Start(logr.NewContext(t.Context(), logr.New(&testLogSink{Formatter: funcr.NewFormatter(funcr.Options{}), t: t})), opts)
	if err != nil {
		t.Fatalf("Starting the local control plane: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Err(); err != nil {
			t.Errorf("The local control plane failed during the test: %v", err)
		}
		if t.Failed() {
			var logs []string
			for _, p := range c.procs {
				logs = append(logs, p.LogPath())
			}
			supervise.ReportLogs(t, supervise.LogTailLines, logs...)
		}
		if err := c.Stop(); err != nil {
			t.Errorf("Stopping the local control plane: %v", err)
		}
	})
	return c
}

// testLogSink writes each log line to the test's log, formatted as logr's testr does;
// testr itself imports testing.
type testLogSink struct {
	funcr.Formatter
	t TB
}

func (s testLogSink) WithName(name string) logr.LogSink {
	s.AddName(name)
	return &s
}

func (s testLogSink) WithValues(kvList ...any) logr.LogSink {
	s.AddValues(kvList)
	return &s
}

// GetCallStackHelper makes the test log name the caller of the logger, not this file.
func (s testLogSink) GetCallStackHelper() func() { return s.t.Helper }

func (s testLogSink) Info(level int, msg string, kvList ...any) {
	s.t.Helper()
	s.write(s.FormatInfo(level, msg, kvList))
}

func (s testLogSink) Error(err error, msg string, kvList ...any) {
	s.t.Helper()
	s.write(s.FormatError(err, msg, kvList))
}

func (s testLogSink) write(prefix, args string) {
	s.t.Helper()
	if prefix != "" {
		args = prefix + ": " + args
	}
	s.t.Log(args)
}
