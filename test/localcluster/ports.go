package localcluster

import (
	"fmt"
	"net"
	"strings"
	"sync"
)

// The kernel picks free ports; this process remembers the ones it handed out, so two
// clusters started at once by the same test binary never get the same port between the
// moment it is picked and the moment a server binds it, and a listener the harness opens
// itself (Listen) never takes one either. Another process can still take
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

// Listen listens on a port of 127.0.0.1 that FreePorts has not handed out, and marks it
// handed out: a listener this process opens itself (a stand-in for a Service) must not
// take a port that FreePorts handed to a server that has not bound it yet. The kernel
// offers recently released ports to a listener on port 0, so without this it could.
func Listen() (net.Listener, error) {
	return listenAvoiding(func() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") })
}

// listenAvoiding is Listen, with offer opening each listener the kernel offers.
func listenAvoiding(offer func() (net.Listener, error)) (net.Listener, error) {
	handedOutMu.Lock()
	defer handedOutMu.Unlock()
	var skipped []net.Listener // kept open until a port is found, so that none is offered twice
	defer func() {
		for _, l := range skipped {
			_ = l.Close()
		}
	}()
	for range 100 {
		l, err := offer()
		if err != nil {
			return nil, fmt.Errorf("listening on a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		if handedOut[port] {
			skipped = append(skipped, l)
			continue
		}
		handedOut[port] = true
		return l, nil
	}
	return nil, fmt.Errorf("listening on a free port: the %d ports offered were all handed out already", len(skipped))
}
