package localinstall

import (
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"

	"github.com/quotagate/quotagate/test/localcluster"
)

// service stands in for the webhook's Service (and the visibility API's): the API
// server reaches the webhook at one stable address (the post-renderer's clientConfig.url,
// or the visibility Service's ExternalName and port), and service forwards each
// connection to the process that is ready now. A rollout starts the new process,
// routes new connections to it, lets the old one serve through its preStop sleep (the
// webhook's), then stops it, and it finishes what its open connections carry (an HTTP/2
// GOAWAY lets the API server move to a new connection), as a Deployment's rolling update
// does behind a Service's endpoints.
type service struct {
	ln net.Listener

	mu sync.Mutex
	// backends are host:port of the ready processes, none before the first; each new
	// connection goes to the next, round robin, as kube-proxy spreads them.
	backends []string
	next     int

	wg sync.WaitGroup
}

// listenService opens the address of the Service of what ("webhook") on 127.0.0.1.
func listenService(what string) (*service, error) {
	ln, err := localcluster.Listen()
	if err != nil {
		return nil, fmt.Errorf("opening the %s's service address: %w", what, err)
	}
	s := &service{ln: ln}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// addr is host:port of the service.
func (s *service) addr() string { return s.ln.Addr().String() }

// port is the service's port, for a URL that names the host otherwise.
func (s *service) port() string {
	_, port, _ := net.SplitHostPort(s.addr())
	return port
}

// portNumber is the service's port as a number.
func (s *service) portNumber() int { return s.ln.Addr().(*net.TCPAddr).Port }

// route sends the connections accepted from now on to backends (host:port), in turn.
func (s *service) route(backends ...string) {
	s.mu.Lock()
	s.backends = slices.Clone(backends)
	s.mu.Unlock()
}

// add adds backend to those the service sends connections to.
func (s *service) add(backend string) {
	s.mu.Lock()
	s.backends = append(s.backends, backend)
	s.mu.Unlock()
}

// remove stops sending new connections to backend, as the endpoints controller drops
// a pod that is gone.
func (s *service) remove(backend string) {
	s.mu.Lock()
	s.backends = slices.DeleteFunc(s.backends, func(b string) bool { return b == backend })
	s.mu.Unlock()
}

// pick is every backend, starting with the one whose turn it is.
func (s *service) pick() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.backends) == 0 {
		return nil
	}
	s.next = (s.next + 1) % len(s.backends)
	return append(slices.Clone(s.backends[s.next:]), s.backends[:s.next]...)
}

func (s *service) serve() {
	defer s.wg.Done()
	for {
		conn, err := s.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		go forward(conn, s.pick())
	}
}

// forward copies conn to and from a new connection to the first of backends that
// accepts one, until either side closes. With no backend, or none listening, conn is
// closed: the API server sees the connection refused, as with a Service that has no
// ready endpoint.
func forward(conn net.Conn, backends []string) {
	defer func() { _ = conn.Close() }()
	var up net.Conn
	for _, b := range backends {
		var err error
		if up, err = net.Dial("tcp", b); err == nil {
			break
		}
	}
	if up == nil {
		return
	}
	defer func() { _ = up.Close() }()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tcp, ok := dst.(*net.TCPConn); ok {
			_ = tcp.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(up, conn)
	go pipe(conn, up)
	<-done
	<-done
}

// close stops accepting connections; forwarded connections end with their processes.
func (s *service) close() error {
	if s == nil {
		return nil
	}
	err := s.ln.Close()
	s.wg.Wait()
	return err
}
