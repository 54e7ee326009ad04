package faultproxy

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"

	"github.com/quotagate/quotagate/test/localcluster"
	"github.com/quotagate/quotagate/test/pki"
)

// DefaultDelay is how long DelayResponse holds an answer when Options.Delay is 0: past
// any sensible client timeout for a write.
const DefaultDelay = 30 * time.Second

// Options configure a Proxy.
type Options struct {
	// Target is the API server's URL, such as https://127.0.0.1:6443.
	Target string
	// TargetCA is the PEM bundle the proxy trusts for Target; empty means the system's
	// roots (or nothing, for an http:// target).
	TargetCA []byte
	// Match selects the requests that may be faulted; nil means PodPatches.
	Match Matcher
	// Rate is the share of matching requests that get a fault, from 0 to 1.
	Rate float64
	// Weights sets how often each fault is drawn relative to the others; a fault that
	// is absent is never drawn. Nil means every fault in Faults, equally.
	Weights map[Fault]int
	// Seed makes the sequence of decisions repeatable. Which request gets which
	// decision still depends on the order in which concurrent requests arrive.
	Seed uint64
	// Delay is how long DelayResponse holds an answer; 0 means DefaultDelay. A client
	// that gives up earlier closes its connection and never sees the answer.
	Delay time.Duration
	// RetryAfter, if positive, adds a Retry-After header (seconds) to 429 and 5xx
	// answers. client-go then retries them by itself and its caller sees nothing.
	RetryAfter int
}

// Proxy is a running fault-injecting proxy. Its methods are safe for concurrent use.
type Proxy struct {
	opts    Options
	target  *url.URL
	rp      *httputil.ReverseProxy
	server  *http.Server
	lis     net.Listener
	caPEM   []byte
	served  chan struct{}
	weights []weighted
	total   int

	mu     sync.Mutex
	rng    *rand.Rand
	rate   float64
	stats  Stats
	closed bool

	inFlight atomic.Int64
}

type weighted struct {
	fault  Fault
	weight int
}

// Stats counts what the proxy did.
type Stats struct {
	// Matched counts the requests Match selected, faulted or not.
	Matched int
	// Faults counts each fault injected; None counts matching requests passed through.
	Faults map[Fault]int
	// Streamed counts the watches passed through.
	Streamed int
}

// Injected is the number of faults injected.
func (s Stats) Injected() int {
	n := 0
	for f, c := range s.Faults {
		if f != None {
			n += c
		}
	}
	return n
}

// String lists the counts, such as "40 matched, 8 faulted (DropResponse=2 ...)".
func (s Stats) String() string {
	var parts []string
	for _, f := range Faults {
		if c := s.Faults[f]; c > 0 {
			parts = append(parts, f.String()+"="+strconv.Itoa(c))
		}
	}
	return fmt.Sprintf("%d matched, %d faulted (%s), %d watches streamed", s.Matched, s.Injected(), strings.Join(parts, " "), s.Streamed)
}

// Start listens on a free port of 127.0.0.1 and serves until Close.
func Start(opts Options) (*Proxy, error) {
	if opts.Rate < 0 || opts.Rate > 1 {
		return nil, fmt.Errorf("fault rate %v is not between 0 and 1", opts.Rate)
	}
	target, err := url.Parse(opts.Target)
	if err != nil || (target.Scheme != "http" && target.Scheme != "https") || target.Host == "" {
		return nil, fmt.Errorf("target %q is not an http(s) URL", opts.Target)
	}
	if opts.Match == nil {
		opts.Match = PodPatches
	}
	if opts.Delay == 0 {
		opts.Delay = DefaultDelay
	}
	p := &Proxy{
		opts: opts, target: target, rate: opts.Rate, served: make(chan struct{}),
		rng:   rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
		stats: Stats{Faults: map[Fault]int{}},
	}
	if p.weights, p.total, err = weightsOf(opts.Weights); err != nil {
		return nil, err
	}
	transport, err := upstreamTransport(opts.TargetCA)
	if err != nil {
		return nil, err
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
		},
		Transport: transport,
		// Watches: every event reaches the client as soon as the API server sends it.
		FlushInterval: -1,
		ErrorHandler:  p.upstreamError,
		ErrorLog:      log.New(io.Discard, "", 0),
	}
	tlsCfg, caPEM, err := servingTLS()
	if err != nil {
		return nil, err
	}
	p.caPEM = caPEM
	if p.lis, err = localcluster.Listen(); err != nil {
		return nil, fmt.Errorf("listening: %w", err)
	}
	protocols := new(http.Protocols)
	// HTTP/1.1 only: a fault must be able to take the connection over and reset it,
	// which HTTP/2's multiplexed streams do not allow.
	protocols.SetHTTP1(true)
	p.server = &http.Server{
		Handler:           p,
		TLSConfig:         tlsCfg,
		Protocols:         protocols,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() {
		defer close(p.served)
		_ = p.server.ServeTLS(p.lis, "", "")
	}()
	return p, nil
}

func weightsOf(m map[Fault]int) ([]weighted, int, error) {
	if m == nil {
		m = map[Fault]int{}
		for _, f := range Faults {
			m[f] = 1
		}
	}
	var ws []weighted
	total := 0
	for _, f := range Faults {
		w := m[f]
		if w < 0 {
			return nil, 0, fmt.Errorf("weight of %s is negative: %d", f, w)
		}
		if w > 0 {
			ws = append(ws, weighted{f, w})
			total += w
		}
	}
	for f := range m {
		if !slices.Contains(Faults, f) {
			return nil, 0, fmt.Errorf("weight given for %s, which is not a fault", f)
		}
	}
	if total == 0 {
		return nil, 0, errors.New("every fault has weight 0")
	}
	return ws, total, nil
}

func upstreamTransport(caPEM []byte) (*http.Transport, error) {
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(caPEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, errors.New("target CA holds no PEM certificate")
		}
		tlsCfg.RootCAs = pool
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = tlsCfg
	t.ForceAttemptHTTP2 = true
	t.MaxIdleConnsPerHost = 100
	return t, nil
}

// servingTLS issues a serving certificate for 127.0.0.1 from a CA made for this proxy.
func servingTLS() (*tls.Config, []byte, error) {
	now := time.Now()
	ca, err := pki.NewCA("faultproxy-ca", now.Add(-time.Hour), now.Add(7*24*time.Hour))
	if err != nil {
		return nil, nil, err
	}
	kp, err := ca.Issue(pki.Spec{
		CommonName: "faultproxy", Server: true,
		IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
	})
	if err != nil {
		return nil, nil, err
	}
	cert, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("loading the proxy's serving certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, ca.CertPEM, nil
}

// URL is where clients reach the proxy, such as https://127.0.0.1:40123.
func (p *Proxy) URL() string { return "https://" + p.lis.Addr().String() }

// CAPEM is the CA certificate clients must trust to talk to the proxy.
func (p *Proxy) CAPEM() []byte { return slices.Clone(p.caPEM) }

// ClientConfig returns a copy of cfg that reaches the API server through the proxy with
// cfg's credentials. A client certificate cannot pass a proxy that terminates TLS, so a
// cfg that authenticates with one is refused: use a bearer token.
func (p *Proxy) ClientConfig(cfg *rest.Config) (*rest.Config, error) {
	if len(cfg.CertData) > 0 || cfg.CertFile != "" {
		return nil, errors.New("a client certificate cannot pass through the fault proxy; authenticate with a token")
	}
	out := rest.CopyConfig(cfg)
	out.Host = p.URL()
	out.TLSClientConfig = rest.TLSClientConfig{CAData: p.CAPEM()}
	return out, nil
}

// Stats returns a copy of the counts so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Faults = make(map[Fault]int, len(p.stats.Faults))
	for f, c := range p.stats.Faults {
		s.Faults[f] = c
	}
	return s
}

// InFlight is the number of matching requests the proxy is handling right now.
func (p *Proxy) InFlight() int { return int(p.inFlight.Load()) }

// SetRate changes the share of matching requests that get a fault from now on.
func (p *Proxy) SetRate(rate float64) error {
	if rate < 0 || rate > 1 {
		return fmt.Errorf("fault rate %v is not between 0 and 1", rate)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rate = rate
	return nil
}

// Close stops listening, ends the connections in progress and waits for the server to
// return.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	err := p.server.Close()
	<-p.served
	return err
}

// draw decides the fault for one matching request and counts it.
func (p *Proxy) draw() Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Matched++
	f := None
	if p.rng.Float64() < p.rate {
		n := p.rng.IntN(p.total)
		for _, w := range p.weights {
			if n < w.weight {
				f = w.fault
				break
			}
			n -= w.weight
		}
	}
	p.stats.Faults[f]++
	return f
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if isWatch(r) {
		p.mu.Lock()
		p.stats.Streamed++
		p.mu.Unlock()
		p.rp.ServeHTTP(w, r)
		return
	}
	if !p.opts.Match(r) {
		p.rp.ServeHTTP(w, r)
		return
	}
	p.inFlight.Add(1)
	defer p.inFlight.Add(-1)
	f := p.draw()
	switch {
	case f == None:
		p.rp.ServeHTTP(w, r)
	case f.statusCode() != 0:
		p.writeStatus(w, f)
	case f == ResetConnection:
		closeConn(w, true)
	case f.forwards():
		// Let the API server answer in full before deciding what the client sees.
		answer := &bufferedResponse{header: http.Header{}}
		p.rp.ServeHTTP(answer, r)
		switch f {
		case DropResponse:
			closeConn(w, false)
		case ResetAfterForward:
			closeConn(w, true)
		case DelayResponse:
			timer := time.NewTimer(p.opts.Delay)
			defer timer.Stop()
			select {
			case <-timer.C:
				answer.writeTo(w)
			case <-r.Context().Done():
				// The client gave up (its timeout) and closed the connection.
			}
		}
	}
}
