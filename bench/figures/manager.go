package figures

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/quotagate/quotagate/cmd/manager/app"
	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/quota/controller"
	"github.com/quotagate/quotagate/pkg/visibility"
)

// runningManager is the quotagate manager running in this process.
type runningManager struct {
	ctrl   *controller.Controller
	cancel context.CancelFunc
	done   chan error

	stopOnce sync.Once
	stopErr  error
}

// ManagerSettings are the flags the benchmark runs the manager with: cmd/manager's
// defaults, so the figures are what an installation gets out of the box.
type ManagerSettings struct {
	QPS     float64 `json:"kubeAPIQPS"`
	Burst   int     `json:"kubeAPIBurst"`
	Workers int     `json:"workers"`
	// EstimatesOff runs the manager with --estimate-interval=0: no estimates (figure 8's
	// off arm).
	EstimatesOff bool `json:"estimatesOff,omitempty"`
	// EstimateInterval, when set, is the manager's --estimate-interval (the estimates
	// benchmark's -estimates-interval); unset, its default.
	EstimateInterval time.Duration `json:"estimateInterval,omitempty"`
}

func DefaultManagerSettings() ManagerSettings {
	o := app.DefaultOptions()
	return ManagerSettings{QPS: o.QPS, Burst: o.Burst, Workers: o.Controller.Workers}
}

// startManager runs a manager as the quotagate-manager ServiceAccount, with the
// settings of cmd/manager's defaults, and returns once its informers have synced.
// With discardEvents the controller's event recorder drops every event: a diagnostic
// that measures what the manager's events cost the API server.
func (e *Env) startManager(ctx context.Context, s ManagerSettings, discardEvents bool) (*runningManager, error) {
	opts := app.DefaultOptions().Controller
	opts.Workers = s.Workers
	if s.EstimateInterval > 0 {
		opts.EstimateInterval = s.EstimateInterval
	}
	if s.EstimatesOff {
		opts.EstimateInterval = 0
	}
	// As cmd/manager does: the figures read the manager's metrics from this registry.
	opts.Registerer = crmetrics.Registry
	if discardEvents {
		opts.Recorder = &events.FakeRecorder{}
	}
	cfg := rest.CopyConfig(e.ManagerSA)
	cfg.QPS, cfg.Burst = float32(s.QPS), s.Burst
	cfg.Wrap(e.Writes.wrap)
	q, mgr, err := controller.NewManager(cfg, opts, ctrl.Options{
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		GracefulShutdownTimeout: ptr.To(5 * time.Second),
	})
	if err != nil {
		return nil, err
	}
	mctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m := &runningManager{ctrl: q, cancel: cancel, done: make(chan error, 1)}
	go func() { m.done <- mgr.Start(mctx) }()
	err = Poll(ctx, func(context.Context) (bool, error) {
		select {
		case err := <-m.done:
			m.done <- err // for stop
			return false, fmt.Errorf("manager stopped: %w", err)
		default:
		}
		return q.ReadyCheck(nil) == nil, nil
	})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("waiting for the manager to sync: %w", err), m.Stop())
	}
	return m, nil
}

// stop stops the manager and waits for it to return. It is idempotent.
func (m *runningManager) Stop() error {
	m.stopOnce.Do(func() {
		m.cancel()
		select {
		case m.stopErr = <-m.done:
		case <-time.After(time.Minute):
			m.stopErr = errors.New("the manager did not stop within a minute")
		}
	})
	return m.stopErr
}

// UseManager stops the manager the env runs, if any, and starts one with s (and
// discardEvents); stopManager stops it.
func (e *Env) UseManager(ctx context.Context, s ManagerSettings, discardEvents bool) error {
	if err := e.StopManager(); err != nil {
		return err
	}
	m, err := e.startManager(ctx, s, discardEvents)
	if err != nil {
		return err
	}
	e.manager = m
	return nil
}

func (e *Env) StopManager() error {
	if e.manager == nil {
		return nil
	}
	err := e.manager.Stop()
	e.manager = nil
	if err != nil {
		return fmt.Errorf("stopping the manager: %w", err)
	}
	return nil
}

// Visibility serves the visibility API (pkg/visibility's handler, estimated starts
// included) of the manager running in this process, as its server does behind
// kube-apiserver's aggregation without the authentication in front; nil when no
// manager runs.
func (e *Env) Visibility() http.Handler {
	if e.manager == nil {
		return nil
	}
	q := e.manager.ctrl
	return visibility.NewHandler(q.Queues(), clock.RealClock{}, visibility.WithEstimates(q))
}

// EstimateRecord is the track record of estimates the manager running in this process
// keeps for a budget, as kubectl quotagate why shows it; false when it has none or no
// manager runs.
func (e *Env) EstimateRecord(key quota.BudgetKey) (estimate.Record, bool) {
	if e.manager == nil {
		return estimate.Record{}, false
	}
	return e.manager.ctrl.EstimateRecord(key)
}
