package faultproxy

// How a fault is carried out on the client's connection: an API-server-style refusal, a
// dropped or reset connection, and the buffer that holds an answer the proxy delays.

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// writeStatus answers as the API server does when it refuses a request.
func (p *Proxy) writeStatus(w http.ResponseWriter, f Fault) {
	code := f.statusCode()
	reason := map[int]metav1.StatusReason{
		http.StatusTooManyRequests:     metav1.StatusReasonTooManyRequests,
		http.StatusInternalServerError: metav1.StatusReasonInternalError,
		http.StatusServiceUnavailable:  metav1.StatusReasonServiceUnavailable,
		http.StatusGatewayTimeout:      metav1.StatusReasonTimeout,
	}[code]
	body, _ := json.Marshal(metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  "faultproxy injected " + f.String(),
		Reason:   reason,
		Code:     int32(code),
	})
	w.Header().Set("Content-Type", "application/json")
	if p.opts.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(p.opts.RetryAfter))
	}
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// upstreamError answers 502 when the API server cannot be reached, unless the client is
// already gone.
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(r.Context().Err(), context.Canceled) {
		return
	}
	http.Error(w, "faultproxy: "+err.Error(), http.StatusBadGateway)
}

// closeConn takes the client's connection over and closes it with nothing written: with
// a TCP reset if reset, else with an ordinary close (the client reads an unexpected EOF).
// The TLS layer is bypassed on purpose, so no close_notify is sent either.
func closeConn(w http.ResponseWriter, reset bool) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Cannot happen on the proxy's HTTP/1.1 server; abort the response instead.
		panic(http.ErrAbortHandler)
	}
	raw := conn
	if tc, ok := conn.(*tls.Conn); ok {
		raw = tc.NetConn()
	}
	if tcp, ok := raw.(*net.TCPConn); ok && reset {
		_ = tcp.SetLinger(0)
	}
	_ = raw.Close()
}

// bufferedResponse holds the API server's answer until the fault decides its fate.
type bufferedResponse struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header { return b.header }

func (b *bufferedResponse) WriteHeader(code int) {
	if b.code == 0 {
		b.code = code
	}
}

func (b *bufferedResponse) Write(p []byte) (int, error) {
	if b.code == 0 {
		b.code = http.StatusOK
	}
	return b.body.Write(p)
}

// Flush is a no-op: the whole answer is held.
func (b *bufferedResponse) Flush() {}

func (b *bufferedResponse) writeTo(w http.ResponseWriter) {
	for k, v := range b.header {
		w.Header()[k] = v
	}
	if b.code == 0 {
		b.code = http.StatusOK
	}
	w.WriteHeader(b.code)
	_, _ = w.Write(b.body.Bytes())
}
