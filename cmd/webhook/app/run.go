package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/quotagate/quotagate/internal/version"
	"github.com/quotagate/quotagate/pkg/admission"
	"github.com/spf13/cobra"
)

// shutdownTimeout bounds how long the health server waits for its requests
// in flight; the webhook and metrics servers wait up to a minute.
const shutdownTimeout = 30 * time.Second

// NewCommand returns the webhook's root command, flags and `version` subcommand as
// the manager's: it validates the flags, sets up logging and serves until the
// command's context ends.
func NewCommand() *cobra.Command {
	o := NewOptions()
	var showVersion bool
	cmd := &cobra.Command{
		Use:           "webhook",
		Short:         "quotagate's admission webhook: adds the scheduling gate to new pods of opted-in namespaces",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: false,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if showVersion {
				return version.Print(cmd.OutOrStdout(), "")
			}
			if err := o.Validate(); err != nil {
				return err
			}
			logger := zap.New(zap.UseFlagOptions(&o.Zap))
			log.SetLogger(logger)
			return Serve(log.IntoContext(cmd.Context(), logger), o)
		},
	}
	o.AddFlags(cmd.Flags())
	cmd.Flags().BoolVar(&showVersion, "version", false, "Print the version and exit (as the version subcommand does).")
	cmd.AddCommand(version.NewCommand())
	return cmd
}

// Serve runs the webhook, metrics and health servers until ctx ends or one
// of them fails, then shuts them all down, letting requests in flight finish.
func Serve(ctx context.Context, o *Options) error {
	return serve(ctx, o, nil)
}

// serve is Serve with extra handlers on the webhook server, for tests.
func serve(ctx context.Context, o *Options, extra map[string]http.Handler) error {
	logger := log.FromContext(ctx)
	m, err := admission.NewMetrics(metrics.Registry)
	if err != nil {
		return err
	}
	if err := version.Register(metrics.Registry); err != nil {
		return err
	}

	hooks := webhook.NewServer(webhook.Options{
		Host:    o.Host,
		Port:    o.Port,
		CertDir: o.CertDir,
		TLSOpts: []func(*tls.Config){func(c *tls.Config) {
			c.MinVersion = tls.VersionTLS12
			if !o.EnableHTTP2 {
				c.NextProtos = []string{"http/1.1"}
			}
		}},
	})
	exempt, err := o.exemptDaemonSets()
	if err != nil {
		return fmt.Errorf("--exempt-daemonsets: %w", err)
	}
	var d drain
	hooks.Register(admission.Path, d.wrap(admission.NewWebhook(admission.NewPodGater(o.Gate, m, exempt...))))
	for path, h := range extra {
		hooks.Register(path, d.wrap(h))
	}

	metricsSrv, err := metricsserver.NewServer(metricsserver.Options{BindAddress: o.MetricsBindAddress}, nil, nil)
	if err != nil {
		return fmt.Errorf("creating metrics server: %w", err)
	}

	g, gctx := errgroup.WithContext(ctx)
	// The webhook and health servers stop after the drain when ctx ends (a shutdown),
	// at once when another server failed.
	serving, stopServing := context.WithCancel(context.WithoutCancel(gctx))
	defer stopServing()
	var started atomic.Bool // the webhook server started: it had a certificate
	g.Go(func() error {
		<-gctx.Done()
		if ctx.Err() != nil && started.Load() {
			logger.Info("Draining before the webhook stops", "for", o.ShutdownDrain)
			d.run(o.ShutdownDrain)
		}
		stopServing()
		return nil
	})
	g.Go(func() error {
		if !waitForCert(gctx, o.CertDir) {
			return nil
		}
		started.Store(true)
		if err := hooks.Start(serving); err != nil {
			return fmt.Errorf("serving webhook on port %d: %w", o.Port, err)
		}
		return nil
	})
	if metricsSrv != nil {
		g.Go(func() error {
			if err := metricsSrv.Start(gctx); err != nil {
				return fmt.Errorf("serving metrics: %w", err)
			}
			return nil
		})
	}
	if o.HealthProbeBindAddress != "0" {
		g.Go(func() error {
			return serveHealth(serving, o.HealthProbeBindAddress, d.ready(hooks.StartedChecker()))
		})
	}
	logger.Info("Starting webhook", "port", o.Port, "certDir", o.CertDir, "gate", o.Gate, "exemptDaemonSets", o.ExemptDaemonSets)
	err = g.Wait()
	logger.Info("Webhook stopped")
	return err
}

// serveHealth serves /healthz (the process is up) and /readyz (the webhook
// server answers TLS handshakes) on addr until ctx ends.
func serveHealth(ctx context.Context, addr string, webhookReady healthz.Checker) error {
	mux := http.NewServeMux()
	live := &healthz.Handler{Checks: map[string]healthz.Checker{"ping": healthz.Ping}}
	ready := &healthz.Handler{Checks: map[string]healthz.Checker{"webhook": webhookReady}}
	mux.Handle("/healthz", http.StripPrefix("/healthz", live))
	mux.Handle("/healthz/", http.StripPrefix("/healthz", live))
	mux.Handle("/readyz", http.StripPrefix("/readyz", ready))
	mux.Handle("/readyz/", http.StripPrefix("/readyz", ready))

	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listening for health probes on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		done <- srv.Shutdown(sctx)
	}()
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving health probes on %s: %w", addr, err)
	}
	if err := <-done; err != nil {
		return fmt.Errorf("shutting down health probes: %w", err)
	}
	return nil
}
