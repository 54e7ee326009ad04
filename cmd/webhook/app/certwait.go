package app

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
)

// certPollInterval is how often waitForCert looks for the certificate files.
const certPollInterval = time.Second

// waitForCert returns true once certDir holds tls.crt and tls.key, false if ctx ends first. With
// cert-manager the Secret exists before the pod starts; when the manager issues the
// certificate itself (docs/certificates.md) the chart's Secret starts empty and the
// kubelet fills the volume once the certificate is written. Until then the webhook does
// not serve and /readyz fails, so the pod gets no traffic.
func waitForCert(ctx context.Context, certDir string) bool {
	files := []string{filepath.Join(certDir, "tls.crt"), filepath.Join(certDir, "tls.key")}
	t := time.NewTicker(certPollInterval)
	defer t.Stop()
	logged := false
	for {
		missing := ""
		for _, f := range files {
			if _, err := os.Stat(f); err != nil {
				missing = f
				break
			}
		}
		if missing == "" {
			return true
		}
		if !logged {
			log.FromContext(ctx).Info("Waiting for the serving certificate; not serving until it is there", "missing", missing)
			logged = true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}
