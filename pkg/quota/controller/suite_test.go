package controller_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/pkg/quota/controller"
	"github.com/quotagate/quotagate/test/localcluster"
)

// One local control plane serves every test of this package; each test works in
// namespaces of its own and runs its own manager, under the manager's ServiceAccount
// and the ClusterRole generated from the RBAC markers, so RBAC is what is tested.

var (
	cluster   *localcluster.Cluster
	admin     client.Client
	clientset kubernetes.Interface
	managerSA *rest.Config
	nsCounter atomic.Int64
)

const (
	systemNamespace = "quotagate-system"
	managerName     = "quotagate-manager"
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	level := zapcore.ErrorLevel // keep test output readable
	if os.Getenv("QUOTAGATE_TEST_VERBOSE") != "" {
		level = zapcore.Level(-4)
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.Level(level)))
	ctx := context.Background()
	// The tests share the cluster and leave their running pods behind (a namespace
	// each, never deleted: the manager of a later test must cope with them). Nodes of
	// the default size filled up once the package had enough tests, and later tests'
	// pods stayed Pending for want of node room: size them for the whole package.
	// The Workload API is served, so that PodGroups can be tested (podgroups_live_test.go).
	c, err := localcluster.Start(ctx, localcluster.Options{Nodes: 2, NodeCPU: "1024", NodeMemory: "8Ti", NodeMaxPods: 2000, Dir: mustTempDir(), WorkloadAPI: true, CompositePodGroups: true})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the local control plane: %v\n", err)
		return 1
	}
	defer func() { _ = c.Stop() }()
	cluster = c
	if err := setup(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "setting up: %v\n", err)
		return 1
	}
	return m.Run()
}

func mustTempDir() string {
	d, err := os.MkdirTemp("", "quotagate-controller-test-")
	if err != nil {
		panic(err)
	}
	return d
}

// repoRoot is the module's root: go test runs a package's tests in its directory.
func repoRoot() string {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		panic(err)
	}
	return root
}

func setup(ctx context.Context) error {
	scheme := clientgoscheme.Scheme
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	cfg := cluster.Config()
	if err := testbed.InstallCRDs(cfg, repoRoot()); err != nil {
		return err
	}
	var err error
	if admin, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	if clientset, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	// The manager's identity: the ServiceAccount bound to the generated ClusterRole.
	objs, err := testbed.ManagerIdentity(repoRoot(), systemNamespace, managerName)
	if err != nil {
		return err
	}
	objs = append(objs,
		// Leader election, as the chart grants it in the release namespace.
		&rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: managerName + "-leader-election", Namespace: systemNamespace},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"},
				Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: managerName + "-leader-election", Namespace: systemNamespace},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: managerName + "-leader-election"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: managerName, Namespace: systemNamespace}},
		},
	)
	for name, value := range map[string]int32{"qg-high": 1000, "qg-mid": 500, "qg-low": 100} {
		objs = append(objs, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value})
	}
	for _, o := range objs {
		if err := admin.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	managerSA, err = cluster.ServiceAccountConfig(ctx, systemNamespace, managerName, time.Hour)
	if err != nil {
		return fmt.Errorf("getting the manager's token: %w", err)
	}
	return nil
}

// runningManager is one manager process, in-process.
type runningManager struct {
	ctrl   *controller.Controller
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// stop stops the manager and waits for it to return.
func (m *runningManager) stop(t *testing.T) {
	t.Helper()
	m.once.Do(func() {
		m.cancel()
		select {
		case err := <-m.done:
			if err != nil {
				t.Errorf("manager returned: %v", err)
			}
		case <-time.After(45 * time.Second):
			t.Errorf("manager did not stop within 45s")
		}
	})
}

// startManager runs a manager as the quotagate-manager ServiceAccount until the test
// ends (or stop is called). leaderElect uses a Lease in quotagate-system.
func startManager(t *testing.T, mutate func(*controller.Options), leaderElect bool) *runningManager {
	t.Helper()
	return startManagerWithConfig(t, rest.CopyConfig(managerSA), mutate, leaderElect)
}

// startManagerWithConfig is startManager with the manager's rest config, a copy of
// managerSA's (a test may wrap its transport).
func startManagerWithConfig(t *testing.T, cfg *rest.Config, mutate func(*controller.Options), leaderElect bool) *runningManager {
	t.Helper()
	opts := controller.DefaultOptions()
	opts.Workers = 8
	// Preemption waits a second, not the default 30: the tests that preempt go through
	// the cooldown without waiting half a minute each.
	opts.PreemptionCooldown = time.Second
	if mutate != nil {
		mutate(&opts)
	}
	cfg.QPS, cfg.Burst = 200, 400
	q, mgr, err := controller.NewManager(cfg, opts, ctrl.Options{
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		LeaderElection:                leaderElect,
		LeaderElectionNamespace:       systemNamespace,
		LeaderElectionID:              "quotagate-test-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")),
		LeaderElectionReleaseOnCancel: true,
		// The event broadcaster's shutdown waits for queued events that can no longer
		// be sent; do not let it hold a stopping manager for the default 30 s.
		GracefulShutdownTimeout: ptr.To(5 * time.Second),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &runningManager{ctrl: q, cancel: cancel, done: make(chan error, 1)}
	go func() { m.done <- mgr.Start(ctx) }()
	t.Cleanup(func() { m.stop(t) })
	return m
}

// newNamespace creates a namespace for the test; enabled opts it in.
func newNamespace(t *testing.T, enabled bool) string {
	t.Helper()
	name := fmt.Sprintf("qg-%d-%s", nsCounter.Add(1), strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")))
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-")
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if enabled {
		ns.Labels = map[string]string{v1alpha1.EnabledLabel: "true"}
	}
	if err := admin.Create(t.Context(), ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return name
}
