package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"

	"github.com/quotagate/quotagate/pkg/visibility"
)

// debugQueuesPath is where the manager serves its queue snapshot.
const debugQueuesPath = "/debug/queues"

// SnapshotSource reads the manager's queue snapshot.
type SnapshotSource interface {
	// Snapshot returns every budget's queues in admission order, and the manager's
	// estimated starts of their pods when its estimator is on.
	Snapshot(ctx context.Context) (visibility.QueuesSnapshot, error)
	// String says where the snapshot comes from, for messages.
	String() string
}

// UnreachableError says that the snapshot could not be read, and what to do about it.
type UnreachableError struct {
	Source string
	Err    error
	// Hint is a sentence on how to fix it, when the cause is known.
	Hint string
}

func (e *UnreachableError) Error() string {
	msg := fmt.Sprintf("cannot read the queue snapshot from %s: %v", e.Source, e.Err)
	if e.Hint != "" {
		msg += "\n  " + e.Hint
	}
	return msg
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Hints for the causes seen in practice.
const (
	hintForbidden = "the caller needs get on the non-resource URL " + debugQueuesPath +
		" (bind the chart's <release>-debug-queues-reader ClusterRole; the metrics reader allows /metrics only)"
	hintProxyAuth = "the API server's service proxy does not pass your credentials on, and the manager's" +
		" secure metrics endpoint requires a bearer token: run kubectl port-forward to the manager's" +
		" metrics port and use --manager-url https://127.0.0.1:<port> --manager-token <token>" +
		" --manager-insecure-skip-tls-verify"
	hintUnauthorized = "the manager did not accept the token: pass --manager-token with a token the API" +
		" server accepts (kubectl create token <serviceaccount>)"
)

// proxySource reads the snapshot through the API server's service proxy:
// /api/v1/namespaces/<ns>/services/<scheme>:<service>:<port>/proxy/debug/queues.
type proxySource struct {
	clientset                  kubernetes.Interface
	namespace, service, scheme string
	port                       string
}

func (s *proxySource) String() string {
	return fmt.Sprintf("service %s/%s (port %s, %s) through the API server's proxy", s.namespace, s.service, s.port, s.scheme)
}

func (s *proxySource) Snapshot(ctx context.Context) (visibility.QueuesSnapshot, error) {
	raw, err := s.clientset.CoreV1().Services(s.namespace).
		ProxyGet(s.scheme, s.service, s.port, debugQueuesPath, nil).DoRaw(ctx)
	if err != nil {
		ue := &UnreachableError{Source: s.String(), Err: err}
		switch {
		case apierrors.IsUnauthorized(err):
			ue.Hint = hintProxyAuth
		case apierrors.IsForbidden(err):
			ue.Hint = hintForbidden
		}
		return visibility.QueuesSnapshot{}, ue
	}
	return decodeSnapshot(raw, s.String())
}

// urlSource reads the snapshot from a manager URL, as when the manager runs outside the
// cluster or behind a port-forward.
type urlSource struct {
	base   *url.URL
	token  string
	client *http.Client
}

// newURLSource returns a source for base (https://host:port). token is sent as a bearer
// token when set; caFile, when set, verifies the manager's certificate.
func newURLSource(base, token, caFile string, insecure bool) (*urlSource, error) {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("--manager-url %q must be http(s)://host:port", base)
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure} //nolint:gosec // the user asked for it
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("reading --manager-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--manager-ca-file %s holds no PEM certificate", caFile)
		}
		tlsConfig.RootCAs = pool
	}
	return &urlSource{
		base:  u,
		token: token,
		client: &http.Client{
			Timeout:   30 * time.Second,
			Transport: &http.Transport{TLSClientConfig: tlsConfig, Proxy: http.ProxyFromEnvironment},
		},
	}, nil
}

func (s *urlSource) String() string { return s.base.Redacted() }

func (s *urlSource) Snapshot(ctx context.Context) (visibility.QueuesSnapshot, error) {
	u := s.base.JoinPath(debugQueuesPath)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return visibility.QueuesSnapshot{}, fmt.Errorf("building the snapshot request: %w", err)
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return visibility.QueuesSnapshot{}, &UnreachableError{Source: s.String(), Err: err}
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return visibility.QueuesSnapshot{}, &UnreachableError{Source: s.String(), Err: fmt.Errorf("reading the response: %w", err)}
	}
	if resp.StatusCode != http.StatusOK {
		ue := &UnreachableError{Source: s.String(), Err: fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(raw)))}
		switch {
		case resp.StatusCode == http.StatusUnauthorized,
			// controller-runtime's filter answers 500 when the TokenReview itself
			// reports an error, as for a token that is not a JWT at all.
			resp.StatusCode == http.StatusInternalServerError && strings.Contains(string(raw), "Authentication failed"):
			ue.Hint = hintUnauthorized
		case resp.StatusCode == http.StatusForbidden:
			ue.Hint = hintForbidden
		}
		return visibility.QueuesSnapshot{}, ue
	}
	return decodeSnapshot(raw, s.String())
}

func decodeSnapshot(raw []byte, source string) (visibility.QueuesSnapshot, error) {
	var snap visibility.QueuesSnapshot
	if err := json.Unmarshal(raw, &snap); err != nil {
		return visibility.QueuesSnapshot{}, &UnreachableError{Source: source, Err: fmt.Errorf("decoding the snapshot: %w", err)}
	}
	return snap, nil
}

// isUnreachable reports whether err means the snapshot is unavailable (as opposed to a
// failure of the command itself).
func isUnreachable(err error) bool {
	var ue *UnreachableError
	return errors.As(err, &ue)
}
