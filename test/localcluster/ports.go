package localcluster

import (
	"fmt"
	"net"
	"strings"
	"sync"
)

// The kernel picks free ports; this process remembers the ones it handed out, so two
// clusters started at once by the same test binary never get the same port between the
// moment it is picked and the moment a server binds it. Another process can still take
// a port in that window: Start then sees "address already in use" and retries.
var (
	handedOutMu sync.Mutex
	handedOut   = map[int]bool{}
)

// FreePorts returns n distinct ports on 127.0.0.1 that were free a moment ago, never
// one this process handed out before. Every local server of this repository (the
// control plane, the chart's components, test servers) picks its ports here.
func FreePorts(n int) ([]int, error) {
	handedOutMu.Lock()
	defer handedOutMu.Unlock()
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	var out []int
	// Holding every listener open until the end makes the n ports distinct; a port
	// handed out earlier is skipped and its listener kept open so it is not offered
	// again. The bound keeps a pathological case from looping for ever.
	for attempts := 0; len(out) < n; attempts++ {
		if attempts > 100*n {
			return nil, fmt.Errorf("finding %d free ports: too many ports already in use", n)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		listeners = append(listeners, l)
		port := l.Addr().(*net.TCPAddr).Port
		if handedOut[port] {
			continue
		}
		handedOut[port] = true
		out = append(out, port)
	}
	return out, nil
}

// isPortInUse reports whether an early exit was caused by a port taken by someone else.
func isPortInUse(e *ExitError) bool {
	return strings.Contains(e.LogTail, "address already in use")
}
