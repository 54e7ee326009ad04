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
}

func defaultVisibilityOptions() VisibilityOptions {
	return VisibilityOptions{BindAddress: "0", AdvertiseHost: os.Getenv("POD_IP")}
}

func addVisibilityFlags(f *pflag.FlagSet, v *VisibilityOptions) {
	f.StringVar(&v.BindAddress, "visibility-bind-address", v.BindAddress, "Address of the visibility.quotagate.io API server (HTTPS, served through kube-apiserver), e.g. :8443; 0 (the default) disables it.")
	f.StringVar(&v.CertDir, "visibility-cert-dir", v.CertDir, "Directory with the visibility server's tls.crt, tls.key and ca.crt (default: --webhook-cert-dir).")
	f.StringVar(&v.AdvertiseHost, "visibility-advertise-host", v.AdvertiseHost, "Host (the pod's IP) that standby replicas forward visibility requests to when this replica leads (default $POD_IP).")
	f.StringVar(&v.Lease, "visibility-lease", v.Lease, "Lease the leader publishes its visibility address in (default <leader-election-id>-visibility).")
	f.StringVar(&v.APIService, "visibility-apiservice", v.APIService, "APIService whose caBundle the certificate rotator keeps (with --webhook-cert-secret).")
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
	srvOpts := visibility.Options{BindAddress: net.ParseIP(host), Port: port, CertDir: v.CertDir, Kubeconfig: os.Getenv("KUBECONFIG"), Estimates: q, Simulator: q}
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
