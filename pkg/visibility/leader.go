package visibility

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// forwardedHeader marks a request a standby forwarded, so that a replica that is not
// the leader either answers 503 rather than forwarding it again.
const forwardedHeader = "X-Quotagate-Visibility-Forwarded"

// Publisher writes the leader's visibility address into a Lease (HolderIdentity) when
// this replica becomes the leader, for standbys to forward to. It runs only on the
// leader; the manager's own leader election Lease stays untouched, since its holder
// identity is a host name and a UUID, not an address.
type Publisher struct {
	// Reader reads the Lease from the API server, not from the manager's cache: a
	// cached read would start a cluster-wide watch of Leases, which the manager's
	// Role (Leases in its own namespace) does not allow.
	Reader client.Reader
	Writer client.Writer
	// Namespace and Name are the Lease's.
	Namespace string
	Name      string
	// URL is this replica's visibility address, https://POD_IP:PORT.
	URL string
	// Backoff paces the retries of a failed write; zero means 200 ms doubling to 30 s.
	Backoff wait.Backoff
}

// NeedLeaderElection is true: only the leader publishes.
func (p *Publisher) NeedLeaderElection() bool { return true }

// Start publishes the address, retrying until it is written or ctx ends (a failed
// write is logged: the leader keeps admitting, and standbys answer 503 "try again"
// until it is written); it implements controller-runtime's Runnable.
func (p *Publisher) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithValues("lease", p.Namespace+"/"+p.Name)
	b := p.Backoff
	if b.Duration == 0 {
		b = wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: math.MaxInt32, Cap: 30 * time.Second}
	}
	err := wait.ExponentialBackoffWithContext(ctx, b, func(ctx context.Context) (bool, error) {
		if err := p.publish(ctx); err != nil {
			logger.Error(err, "Publishing the visibility address; retrying")
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped, or no longer the leader
		}
		return err
	}
	logger.Info("Published the visibility address", "url", p.URL)
	return nil
}

func (p *Publisher) publish(ctx context.Context) error {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}}
	now := metav1.NewMicroTime(time.Now())
	err := p.Reader.Get(ctx, client.ObjectKeyFromObject(lease), lease)
	switch {
	case apierrors.IsNotFound(err):
		lease.Spec = coordinationv1.LeaseSpec{HolderIdentity: ptr.To(p.URL), AcquireTime: &now, RenewTime: &now}
		err = p.Writer.Create(ctx, lease)
	case err == nil:
		lease.Spec.HolderIdentity, lease.Spec.AcquireTime, lease.Spec.RenewTime = ptr.To(p.URL), &now, &now
		err = p.Writer.Update(ctx, lease)
	}
	if err != nil {
		return fmt.Errorf("publishing the visibility address in Lease %s/%s: %w", p.Namespace, p.Name, err)
	}
	return nil
}

// Forwarder serves a standby's requests by forwarding them to the leader's published
// address under this replica's own identity (cfg's credentials), and relays the answer.
type Forwarder struct {
	reader    client.Reader
	namespace string
	name      string
	self      string
	transport http.RoundTripper

	mu     sync.Mutex
	leader string
	read   time.Time
}

// leaderTTL is how long a standby trusts the leader address it read.
const leaderTTL = 2 * time.Second

// NewForwarder returns a Forwarder that reads the leader's address from Lease
// namespace/name with reader, and reaches it with cfg's credentials over TLS that
// trusts certDir's ca.crt and checks the name in certDir's tls.crt (replicas share a
// serving certificate, whose names are the Service's, not the pods' addresses).
func NewForwarder(cfg *rest.Config, reader client.Reader, namespace, name, self, certDir string) (*Forwarder, error) {
	tlsCfg, err := peerTLS(certDir)
	if err != nil {
		return nil, err
	}
	cc := rest.CopyConfig(cfg)
	cc.TLSClientConfig = rest.TLSClientConfig{CertFile: cfg.CertFile, KeyFile: cfg.KeyFile, CertData: cfg.CertData, KeyData: cfg.KeyData}
	var base http.RoundTripper = &http.Transport{TLSClientConfig: tlsCfg, Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true}
	if cc.CertData != nil || cc.CertFile != "" {
		tc, err := rest.TLSConfigFor(cc)
		if err != nil {
			return nil, err
		}
		tlsCfg.Certificates, tlsCfg.GetClientCertificate = tc.Certificates, tc.GetClientCertificate
	}
	rt, err := rest.HTTPWrappersForConfig(cc, base)
	if err != nil {
		return nil, fmt.Errorf("building the forwarding transport: %w", err)
	}
	return &Forwarder{reader: reader, namespace: namespace, name: name, self: self, transport: rt}, nil
}

// peerTLS trusts certDir's ca.crt and checks the leader's certificate for the first
// name in certDir's tls.crt. Both are read for each connection: the rotator may write
// them after the process starts (certManager.enabled=false) and renews them later.
func peerTLS(certDir string) (*tls.Config, error) {
	if certDir == "" {
		return nil, errors.New("a standby forwards to the leader only with a serving certificate directory (its ca.crt and tls.crt)")
	}
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true, // the chain and the name are verified below
		VerifyConnection: func(cs tls.ConnectionState) error {
			caPEM, err := os.ReadFile(filepath.Join(certDir, "ca.crt"))
			if err != nil {
				return fmt.Errorf("reading the CA the leader's certificate is checked with: %w", err)
			}
			roots := x509.NewCertPool()
			if !roots.AppendCertsFromPEM(caPEM) {
				return fmt.Errorf("no certificate in %s", filepath.Join(certDir, "ca.crt"))
			}
			own, err := tls.LoadX509KeyPair(filepath.Join(certDir, "tls.crt"), filepath.Join(certDir, "tls.key"))
			if err != nil || len(own.Certificate) == 0 {
				return fmt.Errorf("reading this replica's serving certificate: %w", err)
			}
			leaf, err := x509.ParseCertificate(own.Certificate[0])
			if err != nil || len(leaf.DNSNames) == 0 {
				return fmt.Errorf("this replica's serving certificate names no host: %w", err)
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err = cs.PeerCertificates[0].Verify(x509.VerifyOptions{DNSName: leaf.DNSNames[0], Roots: roots, Intermediates: inter})
			return err
		},
	}, nil
}

func (f *Forwarder) leaderURL(ctx context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.leader != "" && time.Since(f.read) < leaderTTL {
		return f.leader, nil
	}
	lease := &coordinationv1.Lease{}
	if err := f.reader.Get(ctx, client.ObjectKey{Namespace: f.namespace, Name: f.name}, lease); err != nil {
		return "", fmt.Errorf("reading the leader's address: %w", err)
	}
	f.leader, f.read = ptr.Deref(lease.Spec.HolderIdentity, ""), time.Now()
	return f.leader, nil
}

// ServeHTTP forwards r to the leader; r is authorized already.
func (f *Forwarder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	leader, err := f.leaderURL(r.Context())
	if err != nil || leader == "" || leader == f.self {
		writeError(w, notLeader())
		return
	}
	target, err := url.Parse(leader)
	if err != nil {
		writeError(w, fmt.Errorf("the published leader address %q: %w", leader, err))
		return
	}
	proxy := &httputil.ReverseProxy{
		Transport: f.transport,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.URL.Path, pr.Out.URL.RawPath = r.URL.Path, r.URL.RawPath
			// This replica asks as itself: no user, group or impersonation header of
			// the original request travels on.
			for k := range pr.Out.Header {
				if l := strings.ToLower(k); strings.HasPrefix(l, "x-remote-") || strings.HasPrefix(l, "impersonate-") || l == "authorization" {
					pr.Out.Header.Del(k)
				}
			}
			pr.Out.Header.Set(forwardedHeader, "1")
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			log.FromContext(r.Context()).Info("Forwarding to the leader failed", "leader", leader, "error", err.Error())
			f.mu.Lock()
			f.leader = ""
			f.mu.Unlock()
			writeError(w, notLeader())
		},
	}
	proxy.ServeHTTP(w, r)
}

// notLeader is the answer when no leader can be reached: the queues are being handed
// over, and the client should try again shortly.
func notLeader() error {
	return apierrors.NewServiceUnavailable("quotagate's manager is electing a leader; the queues are back within seconds, try again")
}
