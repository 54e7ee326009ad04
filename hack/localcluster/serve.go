package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/quotagate/quotagate/test/localcluster"
)

// serve runs the cluster until SIGTERM or SIGINT, or until one of its processes dies.
// It writes the ready file once the cluster is ready.
func serve(ctx context.Context, f *clusterFlags) error {
	log := funcr.New(func(prefix, args string) {
		fmt.Fprintln(os.Stderr, time.Now().Format(time.RFC3339), prefix, args)
	}, funcr.Options{Verbosity: 2})
	ctx = logr.NewContext(ctx, log)
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	c, err := localcluster.Start(ctx, f.options())
	if err != nil {
		return err
	}
	defer func() {
		if err := c.Stop(); err != nil {
			log.Error(err, "Stopping the local control plane")
		}
		log.Info("Local control plane stopped")
	}()
	ready := filepath.Join(f.stateDir, readyFile)
	if err := os.WriteFile(ready+".tmp", []byte(c.KubeconfigPath()+"\n"), 0o644); err != nil {
		return fmt.Errorf("writing ready file: %w", err)
	}
	if err := os.Rename(ready+".tmp", ready); err != nil {
		return fmt.Errorf("writing ready file: %w", err)
	}

	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			log.Info("Stopping on signal")
			return nil
		case <-ticker.C:
			if err := c.Err(); err != nil {
				log.Error(err, "A control plane process died; stopping the rest")
				return err
			}
		}
	}
}
