package testbed

import (
	"testing"

	"github.com/quotagate/quotagate/test/localcluster"
)

// FreePort returns a port on 127.0.0.1 that was free a moment ago and that no other
// caller in this process was given (localcluster.FreePorts).
func FreePort(t testing.TB) int {
	t.Helper()
	ports, err := localcluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}
