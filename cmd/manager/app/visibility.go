package app

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/quotagate/quotagate/pkg/quota/controller"
	"github.com/quotagate/quotagate/pkg/visibility"
)

// VisibilityOptions configure the visibility API server (docs/visibility.md).
type VisibilityOptions struct {
	// BindAddress is host:port of the HTTPS server; "0" disables it.
	BindAddress string
	// CertDir holds tls.crt, tls.key and ca.crt; empty means --webhook-cert-dir.
	CertDir string
	// AdvertiseHost is the address standbys reach this replica at; empty means
	// $POD_IP.
	AdvertiseHost string
	// Lease names the Lease the leader publishes its address in; empty means
	// <leader-election-id>-visibility.
	Lease string
	// APIService is the APIService whose caBundle the certificate rotator keeps.
	APIService string
	// Simulations bound each what-if (podsimulations) request.
	Simulations visibility.SimulationLimits
}

func defaultVisibilityOptions() VisibilityOptions {
	return VisibilityOptions{BindAddress: "0", AdvertiseHost: os.Getenv("POD_IP"), Simulations: visibility.DefaultSimulationLimits()}
}

func addVisibilityFlags(f *pflag.FlagSet, v *VisibilityOptions) {
	f.StringVar(&v.BindAddress, "visibility-bind-address", v.BindAddress, "Address of the visibility.quotagate.io API server (HTTPS, served through kube-apiserver), e.g. :8443; 0 (the default) disables it.")
	f.StringVar(&v.CertDir, "visibility-cert-dir", v.CertDir, "Directory with the visibility server's tls.crt, tls.key and ca.crt (default: --webhook-cert-dir).")
	f.StringVar(&v.AdvertiseHost, "visibility-advertise-host", v.AdvertiseHost, "Host (the pod's IP) that standby replicas forward visibility requests to when this replica leads (default $POD_IP).")
	f.StringVar(&v.Lease, "visibility-lease", v.Lease, "Lease the leader publishes its visibility address in (default <leader-election-id>-visibility).")
	f.StringVar(&v.APIService, "visibility-apiservice", v.APIService, "APIService whose caBundle the certificate rotator keeps (with --webhook-cert-secret).")
}

// addSimulationFlags adds the flags that bound what-ifs (podsimulations): the size and
// time of one request and how many run at once (v), and the CPU they take together (c).
func addSimulationFlags(f *pflag.FlagSet, v *visibility.SimulationLimits, c *controller.Options) {
	f.Int64Var(&v.MaxBodyBytes, "simulation-max-body-bytes", v.MaxBodyBytes, "The largest PodSimulation body the visibility API reads; a larger one is refused (413).")
	f.IntVar(&v.MaxPods, "simulation-max-pods", v.MaxPods, "The most pods one PodSimulation may ask about (its spec.count); more is refused (422).")
	f.IntVar(&v.MaxContainers, "simulation-max-containers", v.MaxContainers, "The most containers (init, sidecar and app containers of its template, times its spec.count) one PodSimulation may ask about; more is refused (422).")
	f.DurationVar(&v.Timeout, "simulation-timeout", v.Timeout, "How long one pod simulation may run: past it, it answers where the pods would wait without their estimated starts, or 504 when even that is not known.")
	f.IntVar(&v.Concurrency, "simulation-concurrency", v.Concurrency, "How many pod simulations run at once, at most one per namespace; a request beyond is answered 429 with Retry-After at once.")
	f.Float64Var(&c.SimulationCPU, "simulation-cpu", c.SimulationCPU, "The share of one CPU that pod simulations take together at most, beside the admission loop (0.5: half a CPU); 0 sets no bound.")
}

// addVisibility adds the visibility server (every replica) and the leader's address
// publisher (the leader) to mgr.
func addVisibility(mgr manager.Manager, cfg *rest.Config, q *controller.Controller, o Options) error {
	v := o.Visibility
	if v.BindAddress == "0" {
		return nil
	}
	host, portStr, err := net.SplitHostPort(v.BindAddress)
	if err != nil {
		return fmt.Errorf("--visibility-bind-address %q: %w", v.BindAddress, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return fmt.Errorf("--visibility-bind-address %q: the port is not a number", v.BindAddress)
	}
	if v.CertDir == "" {
		v.CertDir = o.Certs.CertDir
	}
	if v.Lease == "" {
		v.Lease = o.LeaderElectionID + "-visibility"
	}
	var standby *visibility.Forwarder
	self := ""
	if v.AdvertiseHost != "" {
		self = "https://" + net.JoinHostPort(v.AdvertiseHost, portStr)
		if err := mgr.Add(&visibility.Publisher{Reader: mgr.GetAPIReader(), Writer: mgr.GetClient(), Namespace: o.LeaderElectionNamespace, Name: v.Lease, URL: self}); err != nil {
			return err
		}
		if standby, err = visibility.NewForwarder(cfg, mgr.GetAPIReader(), o.LeaderElectionNamespace, v.Lease, self, v.CertDir); err != nil {
			return fmt.Errorf("setting up forwarding to the leader: %w", err)
		}
	}
	srvOpts := visibility.Options{BindAddress: net.ParseIP(host), Port: port, CertDir: v.CertDir, Kubeconfig: os.Getenv("KUBECONFIG"), Estimates: q, Simulator: q,
		SimulationLimits: v.Simulations}
	if srvOpts.BindAddress == nil {
		srvOpts.BindAddress = net.IPv4zero
	}
	var h http.Handler
	if standby != nil {
		h = standby
	}
	srv, err := visibility.New(srvOpts, q.Queues(), q, h)
	if err != nil {
		return err
	}
	ctrl.Log.WithName("visibility").Info("Serving visibility.quotagate.io", "address", v.BindAddress, "advertise", self)
	return mgr.Add(srv)
}
