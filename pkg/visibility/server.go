package visibility

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/compatibility"
	baseversion "k8s.io/component-base/version"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
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
	// Estimates, when set, gives each gated pod its estimated start.
	Estimates Estimates
	// Simulator, when set, answers podsimulations; Reviewer checks that their users
	// may create pods (nil: SubjectAccessReviews through Kubeconfig's API server).
	Simulator Simulator
	Reviewer  AccessReviewer
	// SimulationLimits bound each podsimulations request; zero means
	// DefaultSimulationLimits.
	SimulationLimits SimulationLimits
}

// Server is the visibility API server.
type Server struct {
	opts    Options
	handler http.Handler
	codecs  serializer.CodecFactory

	// certPoll is how often Start looks for the serving certificate's files.
	certPoll time.Duration
}

// Leadership tells whether this replica's queues are the truth, and how to reach the
// leader's when they are not.
type Leadership interface {
	// Leading reports whether this replica runs the admission loop.
	Leading() bool
}

// New configures a server that answers from queues while lead.Leading(), and hands
// other requests to standby (nil answers 503). The server is built when it starts: with
// certManager.enabled=false the manager's own rotator writes the certificate, so at
// process start the mounted Secret may still be empty.
func New(o Options, queues quota.Reader, lead Leadership, standby http.Handler) (*Server, error) {
	if o.Port <= 0 || o.Port > 65535 {
		return nil, fmt.Errorf("the visibility server's port %d is not in 1-65535", o.Port)
	}
	limits := o.SimulationLimits
	if limits == (SimulationLimits{}) {
		limits = DefaultSimulationLimits()
	}
	if err := limits.Validate(); err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := visv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	return &Server{
		opts:     o,
		handler:  leaderOnly(lead, NewHandler(queues, clock.RealClock{}, WithEstimates(o.Estimates), WithSimulator(o.Simulator), WithSimulationLimits(limits)), standby),
		codecs:   serializer.NewCodecFactory(scheme),
		certPoll: time.Second,
	}, nil
}

// Start waits for the serving certificate's files, then serves until ctx is done; it
// implements controller-runtime's Runnable.
func (s *Server) Start(ctx context.Context) error {
	if err := s.waitForCert(ctx); err != nil {
		return err
	}
	generic, err := s.build()
	if err != nil {
		return err
	}
	return generic.PrepareRun().RunWithContext(ctx)
}

// waitForCert returns once CertDir holds tls.crt and tls.key, logging once while it
// waits; nil at once without a CertDir.
func (s *Server) waitForCert(ctx context.Context) error {
	if s.opts.CertDir == "" {
		return nil
	}
	logged := false
	return wait.PollUntilContextCancel(ctx, s.certPoll, true, func(context.Context) (bool, error) {
		_, errCrt := os.Stat(filepath.Join(s.opts.CertDir, "tls.crt"))
		_, errKey := os.Stat(filepath.Join(s.opts.CertDir, "tls.key"))
		if errCrt == nil && errKey == nil {
			return true, nil
		}
		if !logged {
			log.FromContext(ctx).WithName("visibility").Info("Waiting for the serving certificate before serving visibility.quotagate.io", "dir", s.opts.CertDir)
			logged = true
		}
		return false, nil
	})
}

// build configures the generic API server: the serving certificate, delegated
// authentication and authorization, discovery and the handler.
func (s *Server) build() (*genericapiserver.GenericAPIServer, error) {
	o := s.opts
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

	cfg := genericapiserver.NewRecommendedConfig(s.codecs)
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
	rev := o.Reviewer
	if rev == nil {
		kube, err := kubernetesClient(o.Kubeconfig)
		if err != nil {
			return nil, err
		}
		rev = SubjectAccessReviewer{Client: kube.AuthorizationV1().SubjectAccessReviews()}
	}
	installDiscovery(generic)
	generic.Handler.NonGoRestfulMux.HandlePrefix(GroupVersionPath+"/", simulationAccess(rev, s.handler))
	return generic, nil
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

// kubernetesClient is a client of the API server kubeconfig names (empty: in-cluster).
func kubernetesClient(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("configuring the client for SubjectAccessReviews: %w", err)
	}
	return kubernetes.NewForConfig(cfg)
}
