package localcluster

import (
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"

	"github.com/quotagate/quotagate/test/supervise"
)

// StartForTest starts a cluster for a test, in a directory under t.TempDir() unless
// opts.Dir is set, and fails the test if it cannot start. At cleanup it reports a
// process that died during the test, prints every process's log tail if the test
// failed, and stops the cluster.
func StartForTest(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	c, err := Start(logr.NewContext(t.Context(), testr.NewWithInterface(t, testr.Options{})), opts)
	if err != nil {
		t.Fatalf("Starting the local control plane: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Err(); err != nil {
			t.Errorf("The local control plane failed during the test: %v", err)
		}
		if t.Failed() {
			for _, p := range c.procs {
				t.Logf("Last lines of %s:\n%s", p.LogPath(), supervise.TailFile(p.LogPath(), supervise.LogTailLines))
			}
		}
		if err := c.Stop(); err != nil {
			t.Errorf("Stopping the local control plane: %v", err)
		}
	})
	return c
}
