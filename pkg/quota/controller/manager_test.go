package controller_test

import (
	"net/http"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/quotagate/quotagate/pkg/quota/controller"
)

// NewManager refuses what would quietly break the controller; the managers it builds
// run in every test of this package's suite.
func TestNewManagerRefuses(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	for _, tc := range []struct {
		name    string
		opts    func(*controller.Options)
		mo      ctrl.Options
		wantErr string
	}{{
		name:    "a cache of the caller's",
		mo:      ctrl.Options{Cache: cache.Options{DefaultTransform: cache.TransformStripManagedFields()}},
		wantErr: "cache options are the controller's own",
	}, {
		name:    "a cache field the controller's options leave unset",
		mo:      ctrl.Options{Cache: cache.Options{DefaultNamespaces: map[string]cache.Config{"team-a": {}}}},
		wantErr: "cache options are the controller's own",
	}, {
		name: "an extra handler on the controller's path",
		mo: ctrl.Options{Metrics: metricsserver.Options{ExtraHandlers: map[string]http.Handler{
			"/debug/queues": http.NotFoundHandler(),
		}}},
		wantErr: "extra handler /debug/queues is the controller's",
	}, {
		name:    "no workers",
		opts:    func(o *controller.Options) { o.Workers = 0 },
		wantErr: "workers must be at least 1",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			opts := controller.DefaultOptions()
			if tc.opts != nil {
				tc.opts(&opts)
			}
			_, _, err := controller.NewManager(cfg, opts, tc.mo)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("NewManager: error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
