// Command baremanager is the floor of the peers benchmark's memory figure: a
// controller-runtime manager that watches every pod, as a quota manager must, through a
// controller that does nothing with them (its cache drops managed fields, as most do). Its resident memory, measured beside
// quotagate's with the same pods, is the least a manager built on controller-runtime and
// client-go holds for them.
//
// It serves /healthz and /readyz on --health-probe-bind-address; /readyz/pods?min=N
// answers 200 once its cache holds at least N pods.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "baremanager: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	probeAddr := flag.String("health-probe-bind-address", "127.0.0.1:8081", "where /healthz and /readyz are served")
	flag.Parse()
	cfg, err := ctrl.GetConfig() // --kubeconfig, a flag of controller-runtime's
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Cache:                  cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: *probeAddr,
	})
	if err != nil {
		return err
	}
	nothing := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, nil })
	if err := ctrl.NewControllerManagedBy(mgr).Named("pods").For(&corev1.Pod{}).Complete(nothing); err != nil {
		return err
	}
	informer, err := mgr.GetCache().GetInformer(context.Background(), &corev1.Pod{})
	if err != nil {
		return err
	}
	var pods atomic.Int64
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { pods.Add(1) },
		DeleteFunc: func(any) { pods.Add(-1) },
	}); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("pods", func(req *http.Request) error {
		if !informer.HasSynced() {
			return errors.New("the pod cache has not synced")
		}
		if s := req.URL.Query().Get("min"); s != "" {
			want, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return fmt.Errorf("min=%q: %w", s, err)
			}
			if got := pods.Load(); got < want {
				return fmt.Errorf("%d pods in the cache, want at least %d", got, want)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
