//go:build e2e

package e2e

// The faults test's control plane, and its managers: each behind a fault proxy, killed and
// restarted at will.

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/test/faultproxy"
	"github.com/quotagate/quotagate/test/localcluster"
	"github.com/quotagate/quotagate/test/localinstall"
	"github.com/quotagate/quotagate/test/supervise"
)

func setUpFaults(t *testing.T) *faultEnv {
	t.Helper()
	ctrllog.SetLogger(logr.Discard())
	e := &faultEnv{
		jobs: envInt(t, "QUOTAGATE_FAULT_JOBS", 80), rate: envFloat(t, "QUOTAGATE_FAULT_RATE", 0.2),
		seed: uint64(envInt(t, "QUOTAGATE_FAULT_SEED", 1)), delay: envDuration(t, "QUOTAGATE_FAULT_DELAY", 10*time.Second),
		failovers: envInt(t, "QUOTAGATE_FAILOVERS", 3),
	}
	wd, err := os.Getwd()
	fatalIf(t, err, "finding the working directory")
	root, err := localcluster.RepoRoot(wd)
	fatalIf(t, err, "finding the repository")
	e.managerBin = filepath.Join(t.TempDir(), "bin")
	fatalIf(t, localinstall.BuildBinaries(t.Context(), root, e.managerBin), "building the manager")
	e.managerBin = filepath.Join(e.managerBin, "manager")

	e.cluster = localcluster.StartForTest(t, localcluster.Options{Nodes: 2})
	e.admin = e.cluster.Config()
	scheme := runtime.NewScheme()
	fatalIf(t, clientgoscheme.AddToScheme(scheme), "building scheme")
	fatalIf(t, v1alpha1.AddToScheme(scheme), "building scheme")
	e.c, err = client.New(e.admin, client.Options{Scheme: scheme})
	fatalIf(t, err, "building client")
	e.cs, err = kubernetes.NewForConfig(e.admin)
	fatalIf(t, err, "building clientset")

	fatalIf(t, testbed.InstallCRDs(e.admin, root), "installing CRDs")
	identity, err := testbed.ManagerIdentity(root, localinstall.DefaultNamespace, "quotagate-manager")
	fatalIf(t, err, "reading the manager's identity")
	election, err := testbed.LeaderElection(root)
	fatalIf(t, err, "reading the leader election RBAC")
	guard, err := testbed.GateGuard(root)
	fatalIf(t, err, "reading the gate guard")
	for _, o := range append(append(identity, election...), guard...) {
		fatalIf(t, e.c.Create(t.Context(), o), fmt.Sprintf("creating %T %s", o, o.GetName()))
	}
	e.managerSA, err = e.cluster.ServiceAccountConfig(t.Context(), localinstall.DefaultNamespace, "quotagate-manager", 2*time.Hour)
	fatalIf(t, err, "getting the manager's token")
	return e
}

// faultedManager is one manager process that reaches the API server through its own
// fault proxy. The proxy outlives the process, so a restarted manager goes through it
// again.
type faultedManager struct {
	name       string
	proxy      *faultproxy.Proxy
	kubeconfig string
	logPath    string
	args       []string
	proc       *supervise.Process
}

func (e *faultEnv) newManager(t *testing.T, name string, seed uint64, args ...string) *faultedManager {
	t.Helper()
	p, err := faultproxy.Start(faultproxy.Options{
		Target: e.admin.Host, TargetCA: e.admin.CAData,
		Rate: e.rate, Seed: seed, Delay: e.delay,
	})
	fatalIf(t, err, "starting the fault proxy")
	t.Cleanup(func() { _ = p.Close() })
	cfg, err := p.ClientConfig(e.managerSA)
	fatalIf(t, err, "building the manager's config")
	dir := t.TempDir()
	m := &faultedManager{
		name: name, proxy: p, kubeconfig: filepath.Join(dir, name+".kubeconfig"), logPath: filepath.Join(dir, name+".log"),
		args: append([]string{"--metrics-bind-address=0", "--health-probe-bind-address=0"}, args...),
	}
	fatalIf(t, e.cluster.WriteKubeconfig(cfg, m.kubeconfig), "writing the manager's kubeconfig")
	t.Cleanup(func() {
		if t.Failed() {
			supervise.ReportLogs(t, supervise.LogTailLines, m.logPath)
		}
		if m.proc != nil {
			if err := m.proc.Stop(10 * time.Second); err != nil {
				t.Errorf("Stopping %s: %v", m.name, err)
			}
		}
	})
	return m
}

func (e *faultEnv) start(t *testing.T, m *faultedManager) {
	t.Helper()
	proc, err := supervise.Start(supervise.Command{
		Name: m.name, Binary: e.managerBin, Args: m.args, LogPath: m.logPath, AppendLog: true,
		Env: []string{"KUBECONFIG=" + m.kubeconfig},
	})
	fatalIf(t, err, "starting "+m.name)
	m.proc = proc
}

// kill sends SIGKILL to the manager's process group and waits for it to exit: no
// cancelled context, no lease released, patches cut off wherever they are.
func (m *faultedManager) kill(t *testing.T) {
	t.Helper()
	fatalIf(t, syscall.Kill(-m.proc.Pid(), syscall.SIGKILL), "killing "+m.name)
	<-m.proc.Done()
	_ = m.proc.Stop(0) // the exit was ours: not a failure
}
