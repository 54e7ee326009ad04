package visibility

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/component-base/compatibility"
	baseversion "k8s.io/component-base/version"
	"k8s.io/utils/clock"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
)

// Options configure the visibility server.
type Options struct {
	// BindAddress and Port are where the server listens (HTTPS).
	BindAddress net.IP
	Port        int
	// CertDir holds tls.crt and tls.key (and ca.crt, which a standby trusts the leader
	// with), reloaded when they change. Empty means a self-signed certificate, for
	// tests; a standby then cannot forward.
	CertDir string
	// Kubeconfig is the kubeconfig for TokenReviews, SubjectAccessReviews and the
	// extension-apiserver-authentication ConfigMap; empty means in-cluster.
	Kubeconfig string
}

// Server is the visibility API server.
type Server struct {
	generic *genericapiserver.GenericAPIServer
}

// Leadership tells whether this replica's queues are the truth, and how to reach the
// leader's when they are not.
type Leadership interface {
	// Leading reports whether this replica runs the admission loop.
	Leading() bool
}

// New configures a server that answers from queues while lead.Leading(), and hands
// other requests to standby (nil answers 503).
func New(o Options, queues Queues, lead Leadership, standby http.Handler) (*Server, error) {
	scheme := runtime.NewScheme()
	if err := visv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	codecs := serializer.NewCodecFactory(scheme)

	secure := genericoptions.NewSecureServingOptions().WithLoopback()
	secure.BindAddress, secure.BindPort = o.BindAddress, o.Port
	if o.CertDir != "" {
		secure.ServerCert.CertKey = genericoptions.CertKey{
			CertFile: filepath.Join(o.CertDir, "tls.crt"),
			KeyFile:  filepath.Join(o.CertDir, "tls.key"),
		}
	} else {
		secure.ServerCert.CertDirectory = ""
		if err := secure.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{net.IPv4(127, 0, 0, 1)}); err != nil {
			return nil, fmt.Errorf("creating a self-signed serving certificate: %w", err)
		}
	}
	authn := genericoptions.NewDelegatingAuthenticationOptions()
	authn.RemoteKubeConfigFile = o.Kubeconfig
	authz := genericoptions.NewDelegatingAuthorizationOptions()
	authz.RemoteKubeConfigFile = o.Kubeconfig

	cfg := genericapiserver.NewRecommendedConfig(codecs)
	cfg.EffectiveVersion = compatibility.NewEffectiveVersionFromString(baseversion.DefaultKubeBinaryVersion, "", "")
	if err := secure.ApplyTo(&cfg.SecureServing, &cfg.LoopbackClientConfig); err != nil {
		return nil, fmt.Errorf("configuring serving: %w", err)
	}
	if err := authn.ApplyTo(&cfg.Authentication, cfg.SecureServing, nil); err != nil {
		return nil, fmt.Errorf("configuring delegated authentication: %w", err)
	}
	if err := authz.ApplyTo(&cfg.Authorization); err != nil {
		return nil, fmt.Errorf("configuring delegated authorization: %w", err)
	}
	// Nothing is stored and nothing is admitted: no etcd, no admission, no OpenAPI
	// models for server-side apply.
	cfg.OpenAPIConfig, cfg.OpenAPIV3Config = nil, nil
	generic, err := cfg.Complete().New("quotagate-visibility", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, fmt.Errorf("creating the visibility server: %w", err)
	}
	installDiscovery(generic)
	generic.Handler.NonGoRestfulMux.HandlePrefix(GroupVersionPath+"/", leaderOnly(lead, NewHandler(queues, clock.RealClock{}), standby))
	return &Server{generic: generic}, nil
}

// Start serves until ctx is done; it implements controller-runtime's Runnable.
func (s *Server) Start(ctx context.Context) error {
	return s.generic.PrepareRun().RunWithContext(ctx)
}

// NeedLeaderElection is false: every replica serves, a standby by forwarding.
func (s *Server) NeedLeaderElection() bool { return false }

// leaderOnly answers with h on the leader and hands the request to standby elsewhere.
func leaderOnly(lead Leadership, h, standby http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if lead.Leading() {
			h.ServeHTTP(w, r)
			return
		}
		if standby == nil || r.Header.Get(forwardedHeader) != "" {
			writeError(w, notLeader())
			return
		}
		standby.ServeHTTP(w, r)
	})
}
