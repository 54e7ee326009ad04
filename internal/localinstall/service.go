package localinstall

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// service stands in for the webhook's Service (and the visibility API's): the API
// server reaches the webhook at one stable address (the post-renderer's clientConfig.url,
// or the visibility Service's ExternalName and port), and service forwards each
// connection to the process that is ready now. A rollout starts the new process,
// routes new connections to it, then stops the old one, which finishes what its open
// connections carry (an HTTP/2 GOAWAY lets the API server move to a new connection), as
// a Deployment's rolling update does behind a Service's endpoints.
type service struct {
	ln net.Listener

	mu      sync.Mutex
	backend string // host:port of the ready webhook process; "" before the first

	wg sync.WaitGroup
}

// listenService opens the address of the Service of what ("webhook") on 127.0.0.1.
func listenService(what string) (*service, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
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

// route sends the connections accepted from now on to backend (host:port).
func (s *service) route(backend string) {
	s.mu.Lock()
	s.backend = backend
	s.mu.Unlock()
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
		s.mu.Lock()
		backend := s.backend
		s.mu.Unlock()
		go forward(conn, backend)
	}
}

// forward copies conn to and from a new connection to backend until either side
// closes. With no backend, or none listening, conn is closed: the API server sees the
// connection refused, as with a Service that has no ready endpoint.
func forward(conn net.Conn, backend string) {
	defer func() { _ = conn.Close() }()
	if backend == "" {
		return
	}
	up, err := net.Dial("tcp", backend)
	if err != nil {
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
