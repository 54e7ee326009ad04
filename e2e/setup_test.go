//go:build e2e

package e2e

import (
	"maps"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/test/localcluster"
	"github.com/quotagate/quotagate/test/localinstall"
	"github.com/quotagate/quotagate/test/supervise"
)

// env is what every step of the journey works with.
type env struct {
	cluster *localcluster.Cluster
	inst    *localinstall.Installation
	admin   *rest.Config
	cs      kubernetes.Interface
	c       client.Client
}

func setUp(t *testing.T) env { t.Helper(); return setUpWith(t, localinstall.Options{}) }

// cleanUpInstall stops inst when the test ends, reporting a process that failed during
// it, and the end of every log when the test failed.
func cleanUpInstall(t *testing.T, inst *localinstall.Installation) {
	t.Cleanup(func() {
		if err := inst.Err(); err != nil {
			t.Errorf("A quotagate process failed during the test: %v", err)
		}
		if t.Failed() {
			supervise.ReportLogs(t, 40, inst.LogPaths()...)
		}
		if err := inst.Stop(); err != nil {
			t.Errorf("Stopping quotagate: %v", err)
		}
	})
}

// setUpWith starts a control plane and installs quotagate with opts. Unless opts set
// admission.mode, the release runs the webhook: the suites test the webhook's
// certificates, faults and metrics, and TestUserJourney runs the admission policy too
// (the chart's default, auto, picks it on this control plane).
func setUpWith(t *testing.T, opts localinstall.Options) env {
	t.Helper()
	if _, set := opts.Values["admission"]; !set {
		opts.Values = maps.Clone(opts.Values)
		if opts.Values == nil {
			opts.Values = map[string]any{}
		}
		opts.Values["admission"] = map[string]any{"mode": localinstall.AdmissionWebhook}
	}
	ctrllog.SetLogger(logr.Discard()) // controller-runtime's client has nothing to say here
	cluster := localcluster.StartForTest(t, localcluster.Options{})
	ctx := logr.NewContext(t.Context(), testr.NewWithOptions(t, testr.Options{Verbosity: 1}))
	inst, err := localinstall.Install(ctx, cluster, opts)
	if err != nil {
		t.Fatalf("Installing quotagate: %v", err)
	}
	cleanUpInstall(t, inst)
	return envFor(t, cluster, inst)
}

// envFor is the env of an installation, as setUp builds it.
func envFor(t *testing.T, cluster *localcluster.Cluster, inst *localinstall.Installation) env {
	t.Helper()
	ctrllog.SetLogger(logr.Discard())
	scheme := runtime.NewScheme()
	fatalIf(t, clientgoscheme.AddToScheme(scheme), "building scheme")
	fatalIf(t, v1alpha1.AddToScheme(scheme), "building scheme")
	admin := cluster.Config()
	c, err := client.New(admin, client.Options{Scheme: scheme})
	fatalIf(t, err, "building client")
	cs, err := kubernetes.NewForConfig(admin)
	fatalIf(t, err, "building clientset")
	return env{cluster: cluster, inst: inst, admin: admin, cs: cs, c: c}
}
