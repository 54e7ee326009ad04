package controller

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// NewManager is the one way to build a quota manager: the controller (New(opts)), a
// controller-runtime manager for cfg with mo, and the controller set up with it. Of mo
// it sets Cache to CacheOptions (the controller depends on it: a caller's Cache, any
// field of it, is refused rather than quietly replaced), Scheme when nil (client-go's
// types and quotagate's), and adds the controller's debug handlers to the metrics
// server's. The manager serves the controller's ReadyCheck as readyz and a ping as
// healthz. Start the manager to run the controller.
func NewManager(cfg *rest.Config, opts Options, mo ctrl.Options) (*Controller, manager.Manager, error) {
	if !reflect.ValueOf(mo.Cache).IsZero() {
		return nil, nil, errors.New("the manager's cache options are the controller's own (CacheOptions); leave them unset")
	}
	c, err := New(opts)
	if err != nil {
		return nil, nil, err
	}
	if mo.Scheme == nil {
		if mo.Scheme, err = Scheme(); err != nil {
			return nil, nil, err
		}
	}
	mo.Cache = CacheOptions()
	extra := maps.Clone(mo.Metrics.ExtraHandlers)
	if extra == nil {
		extra = map[string]http.Handler{}
	}
	for path, h := range c.DebugHandlers() {
		if _, taken := extra[path]; taken {
			return nil, nil, fmt.Errorf("the metrics server's extra handler %s is the controller's", path)
		}
		extra[path] = h
	}
	mo.Metrics.ExtraHandlers = extra
	mgr, err := ctrl.NewManager(cfg, mo)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the manager: %w", err)
	}
	if err := c.SetupWithManager(mgr); err != nil {
		return nil, nil, fmt.Errorf("setting up the quota controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, nil, err
	}
	if err := mgr.AddReadyzCheck("readyz", c.ReadyCheck); err != nil {
		return nil, nil, err
	}
	return c, mgr, nil
}

// Scheme returns a scheme of the types the manager reads: client-go's and quotagate's.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}
