package localcluster

import (
	"errors"
	"net"
	"strings"
	"testing"
)

// Ports handed out in one call, and in calls one after the other, are all distinct.
func TestFreePortsAreDistinct(t *testing.T) {
	ports, err := FreePorts(25)
	if err != nil {
		t.Fatal(err)
	}
	more, err := FreePorts(25)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range append(ports, more...) {
		if seen[p] {
			t.Fatalf("port %d handed out twice in %v", p, ports)
		}
		seen[p] = true
	}
}

// Listen never returns a port FreePorts handed out: the kernel may offer one again to a
// listener on port 0 before the server it was handed to binds it. The offer is scripted
// so that it does: first a handed-out port, then a fresh one.
func TestListenSkipsHandedOutPorts(t *testing.T) {
	open := func() net.Listener {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	handed, fresh := open(), open()
	defer func() { _ = fresh.Close() }()
	handedPort := handed.Addr().(*net.TCPAddr).Port
	handedOutMu.Lock()
	handedOut[handedPort] = true
	handedOutMu.Unlock()

	offers := []net.Listener{handed, fresh}
	l, err := listenAvoiding(func() (net.Listener, error) {
		if len(offers) == 0 {
			return nil, errors.New("no more offers")
		}
		next := offers[0]
		offers = offers[1:]
		return next, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Addr().(*net.TCPAddr).Port; got == handedPort {
		t.Fatalf("Listen returned port %d, which FreePorts had handed out", got)
	}
	if l != fresh {
		t.Errorf("Listen returned %v, want the fresh listener %v", l.Addr(), fresh.Addr())
	}
	// The skipped listener is closed: the port goes back to the server it was handed to.
	if c, err := net.Dial("tcp", handed.Addr().String()); err == nil {
		_ = c.Close()
		t.Errorf("the listener on handed-out port %d is still open", handedPort)
	}
	handedOutMu.Lock()
	defer handedOutMu.Unlock()
	if !handedOut[fresh.Addr().(*net.TCPAddr).Port] {
		t.Error("the port Listen returned is not marked handed out: FreePorts could offer it")
	}
}

// Listen fails with a message once every offer is a handed-out port.
func TestListenGivesUp(t *testing.T) {
	const port = 1 // never handed out by the kernel to an unprivileged listener on port 0
	handedOutMu.Lock()
	handedOut[port] = true
	handedOutMu.Unlock()
	offered := 0
	_, err := listenAvoiding(func() (net.Listener, error) {
		offered++
		return offeredPort{port}, nil
	})
	if err == nil || !strings.Contains(err.Error(), "handed out") {
		t.Fatalf("Listen with only handed-out ports offered: %v, want an error saying they were handed out", err)
	}
	if offered != 100 {
		t.Errorf("Listen took %d offers before giving up, want 100", offered)
	}
}

// offeredPort is a listener the kernel would have offered on port.
type offeredPort struct{ port int }

func (offeredPort) Accept() (net.Conn, error) { return nil, errors.New("not listening") }
func (offeredPort) Close() error              { return nil }
func (o offeredPort) Addr() net.Addr          { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: o.port} }
