package app

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/admission"
	"github.com/spf13/pflag"
)

// Options are the webhook's settings, one flag each.
type Options struct {
	// Port the webhook server listens on.
	Port int
	// CertDir holds tls.crt and tls.key; they are re-read when they change.
	CertDir string
	// MetricsBindAddress is where /metrics is served; "0" disables it.
	MetricsBindAddress string
	// HealthProbeBindAddress is where /healthz and /readyz are served; "0"
	// disables them.
	HealthProbeBindAddress string
	// Gate is the scheduling gate added to new pods.
	Gate string
	// ExemptDaemonSets are namespace/name of the DaemonSets whose pods the
	// DaemonSet controller creates ungated; keep them equal to the list in
	// the webhook configuration's matchConditions.
	ExemptDaemonSets []string
	// EnableHTTP2 lets clients speak HTTP/2 to the webhook server. Off by
	// default, as in kubebuilder's scaffold, against HTTP/2 stream floods
	// (CVE-2023-44487, CVE-2023-39325).
	EnableHTTP2 bool
	// Host is the address the webhook server listens on; empty means all.
	Host string
	// ShutdownDrain is how long the webhook keeps answering after it is told to stop,
	// each answer closing its connection, before it stops (drain).
	ShutdownDrain time.Duration
	// Zap configures the logger (--zap-log-level and friends).
	Zap zap.Options
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		Port:                   9443,
		CertDir:                filepath.Join("/tmp", "k8s-webhook-server", "serving-certs"),
		MetricsBindAddress:     ":8080",
		HealthProbeBindAddress: ":8081",
		Gate:                   v1alpha1.SchedulingGate,
		ShutdownDrain:          DefaultShutdownDrain,
	}
}

// AddFlags binds o to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.Port, "port", o.Port, "Port the webhook server listens on.")
	fs.StringVar(&o.CertDir, "cert-dir", o.CertDir,
		"Directory with the serving certificate (tls.crt) and key (tls.key); re-read when they change.")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress,
		`Address the Prometheus metrics are served on; "0" disables them.`)
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress,
		`Address /healthz and /readyz are served on; "0" disables them.`)
	fs.StringVar(&o.Host, "host", o.Host, "Address the webhook server listens on (default: all addresses).")
	fs.StringVar(&o.Gate, "gate", o.Gate, "Scheduling gate added to new pods.")
	fs.StringSliceVar(&o.ExemptDaemonSets, "exempt-daemonsets", o.ExemptDaemonSets,
		"DaemonSets (namespace/name, comma-separated) whose pods the DaemonSet controller creates without the gate; "+
			"every other DaemonSet's pods are gated. The same list as in the webhook configuration's matchConditions.")
	fs.DurationVar(&o.ShutdownDrain, "shutdown-drain", o.ShutdownDrain,
		"How long the webhook keeps answering after SIGTERM, each answer telling the API server to close its connection, "+
			"so that no call meets a connection closed under it; /readyz fails meanwhile. 0 stops at once.")
	fs.BoolVar(&o.EnableHTTP2, "enable-http2", o.EnableHTTP2,
		"Let clients use HTTP/2 for the webhook server (off: HTTP/1.1 only).")
	gofs := flag.NewFlagSet("", flag.ExitOnError)
	o.Zap.BindFlags(gofs)
	fs.AddGoFlagSet(gofs)
}

// Validate reports every invalid setting at once.
func (o *Options) Validate() error {
	var errs []error
	if o.Port < 1 || o.Port > 65535 {
		errs = append(errs, fmt.Errorf("--port %d: must be 1 to 65535", o.Port))
	}
	if o.CertDir == "" {
		errs = append(errs, errors.New("--cert-dir: must not be empty"))
	}
	if msgs := validation.IsQualifiedName(o.Gate); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--gate %q: %s", o.Gate, strings.Join(msgs, "; ")))
	}
	if o.ShutdownDrain < 0 {
		errs = append(errs, fmt.Errorf("--shutdown-drain %v: must not be negative", o.ShutdownDrain))
	}
	if _, err := o.exemptDaemonSets(); err != nil {
		errs = append(errs, fmt.Errorf("--exempt-daemonsets: %w", err))
	}
	return errors.Join(errs...)
}

// exemptDaemonSets parses ExemptDaemonSets, reporting every bad entry.
func (o *Options) exemptDaemonSets() ([]admission.DaemonSetRef, error) {
	var refs []admission.DaemonSetRef
	var errs []error
	for _, s := range o.ExemptDaemonSets {
		ref, err := admission.ParseDaemonSetRef(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		refs = append(refs, ref)
	}
	return refs, errors.Join(errs...)
}
