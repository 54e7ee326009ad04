package testbed

import (
	"github.com/quotagate/quotagate/test/localcluster"
)

// FreePort returns a port on 127.0.0.1 that was free a moment ago and that no other
// caller in this process was given (localcluster.FreePorts). It takes what it needs of
// a *testing.T or *testing.B.
func FreePort(t fataler) int {
	t.Helper()
	ports, err := localcluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// fataler is the part of testing.TB that FreePort uses: an interface, so that this
// non-test file does not import testing (`make verify` checks it).
type fataler interface {
	Helper()
	Fatal(args ...any)
}
