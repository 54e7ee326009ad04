package figures

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/bench/report"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/test/localcluster"
)

const (
	systemNamespace = "quotagate-system"
	managerName     = "quotagate-manager"

	// HoldGate keeps pods that only measure quotagate's own gate out of the scheduler:
	// without it, every released pod would add scheduling load to the API server.
	HoldGate = "bench.quotagate.io/hold"
	// BaselineGate is the gate the bare client removes. The manager does not own it, so
	// the baseline runs beside a live manager that leaves those pods alone.
	BaselineGate = "bench.quotagate.io/baseline"

	// BenchLabel marks every pod the benchmark creates.
	BenchLabel = "bench.quotagate.io/pod"

	// ThisProcess names this process, which runs the manager, the webhook and the bare
	// clients, in CPU figures.
	ThisProcess = "bench (manager or bare client)"

	// createWorkers is how many pod creates are in flight at once when filling a queue.
	createWorkers = 32
	// waitTimeout bounds every wait for the cluster or the manager to act.
	waitTimeout = 5 * time.Minute
)

// Env is the cluster and the identities every figure uses.
type Env struct {
	Cluster *localcluster.Cluster
	root    string
	// Client is the administrator without a client-side rate limit: it creates, watches
	// and deletes pods.
	Client kubernetes.Interface
	Admin  client.Client
	// ManagerSA is the manager's ServiceAccount, bound to config/rbac/role.yaml.
	ManagerSA *rest.Config
	// bare is the baselines' releaser: the manager's identity, so the API server's
	// priority and fairness and the gate guard treat it as they treat the manager, with
	// no client-side rate limit.
	bare kubernetes.Interface
	// Meter reads the CPU time of the control plane's processes and of this one.
	Meter CPUMeter
	nsSeq int
	// manager is the manager running in this process, if any.
	manager *runningManager
	// Writes counts what every manager this Env starts writes.
	Writes ManagerWrites
	// pace, when set, spaces the samples of the reaction chain and of TakeTurns: before
	// each, a pause drawn uniformly from 0 to 2×pace, so that the samples fall at every
	// moment of what the manager does on its own timers (figure 8: its estimator's
	// passes) instead of all between two of them.
	pace     time.Duration
	paceRand *rand.Rand
}

// pause waits before a sample, when the env paces them (pace).
func (e *Env) pause(ctx context.Context) error {
	if e.pace <= 0 {
		return nil
	}
	if e.paceRand == nil {
		e.paceRand = rand.New(rand.NewPCG(1, 2))
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Duration(e.paceRand.Int64N(int64(2 * e.pace)))):
		return nil
	}
}

// StartEnv starts a local control plane with room for every pod the run creates,
// installs the CRDs and the manager's RBAC, and gets the manager's token.
func StartEnv(ctx context.Context, root, dir string) (*Env, error) {
	c, err := localcluster.Start(ctx, localcluster.Options{
		Nodes: 4, NodeCPU: "1000", NodeMemory: "4Ti", NodeMaxPods: 1000, Dir: dir,
		// Deleting a batch between measurements is not measured: let it go faster.
		ExtraArgs: map[string][]string{localcluster.KubeAPIServer: {"--delete-collection-workers=8"}},
	})
	if err != nil {
		return nil, fmt.Errorf("starting the local control plane: %w", err)
	}
	e := &Env{Cluster: c, root: root, Meter: CPUMeter{ThisProcess: os.Getpid()}}
	for name, pid := range c.Pids() {
		e.Meter[name] = pid
	}
	if err := e.setup(ctx); err != nil {
		_ = c.Stop()
		return nil, err
	}
	return e, nil
}

func (e *Env) setup(ctx context.Context) error {
	scheme := clientgoscheme.Scheme
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	cfg := e.Cluster.Config()
	cfg.QPS, cfg.Burst = -1, 0 // no client-side throttle
	if err := testbed.InstallCRDs(cfg, e.root); err != nil {
		return err
	}
	var err error
	if e.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if e.Admin, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	objs, err := testbed.ManagerIdentity(e.root, systemNamespace, managerName)
	if err != nil {
		return err
	}
	// The shipped gate guard runs on every pod update, so both the manager's and the
	// bare client's patches pay for it, as they would in an installation.
	guard, err := testbed.GateGuard(e.root)
	if err != nil {
		return err
	}
	objs = append(objs, guard...)
	for _, o := range objs {
		if err := e.Admin.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	if e.ManagerSA, err = e.Cluster.ServiceAccountConfig(ctx, systemNamespace, managerName, 2*time.Hour); err != nil {
		return fmt.Errorf("getting the manager's token: %w", err)
	}
	bare := rest.CopyConfig(e.ManagerSA)
	bare.QPS, bare.Burst = -1, 0
	if e.bare, err = kubernetes.NewForConfig(bare); err != nil {
		return err
	}
	return nil
}

// NewNamespace creates a namespace named after what it is for; optedIn labels it
// quotagate.io/enabled=true. It returns once the default ServiceAccount exists, without
// which the API server refuses pods.
func (e *Env) NewNamespace(ctx context.Context, what string, optedIn bool) (string, error) {
	e.nsSeq++
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", what, e.nsSeq)}}
	if optedIn {
		ns.Labels = map[string]string{v1alpha1.EnabledLabel: "true"}
	}
	if err := e.Admin.Create(ctx, ns); err != nil {
		return "", fmt.Errorf("creating namespace %s: %w", ns.Name, err)
	}
	err := Poll(ctx, func(ctx context.Context) (bool, error) {
		_, err := e.Client.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return "", fmt.Errorf("waiting for the default ServiceAccount of %s: %w", ns.Name, err)
	}
	return ns.Name, nil
}

// CreateBudget creates a Budget named "budget" in ns limiting requests.cpu to cpu.
func (e *Env) CreateBudget(ctx context.Context, ns, cpu string) error {
	b := &v1alpha1.Budget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "budget"},
		Spec:       v1alpha1.BudgetSpec{Hard: corev1.ResourceList{"requests.cpu": resource.MustParse(cpu)}},
	}
	if err := e.Admin.Create(ctx, b); err != nil {
		return fmt.Errorf("creating budget in %s: %w", ns, err)
	}
	return nil
}

// setBudgetCPU changes the budget's requests.cpu limit.
func (e *Env) setBudgetCPU(ctx context.Context, ns, cpu string) error {
	patch := fmt.Appendf(nil, `{"spec":{"hard":{"requests.cpu":%q}}}`, cpu)
	b := &v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "budget"}}
	if err := e.Admin.Patch(ctx, b, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		return fmt.Errorf("raising budget in %s: %w", ns, err)
	}
	return nil
}

// WaitGated waits until the manager's status of the budget in ns counts n gated pods:
// the manager has seen them all and decided they do not fit.
func (e *Env) WaitGated(ctx context.Context, ns string, n int) error {
	err := Poll(ctx, func(ctx context.Context) (bool, error) {
		b := &v1alpha1.Budget{}
		if err := e.Admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "budget"}, b); err != nil {
			return false, nil
		}
		return int(b.Status.GatedPods) == n, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the budget in %s to count %d gated pods: %w", ns, n, err)
	}
	return nil
}

// countEvents counts the events in ns.
func (e *Env) countEvents(ctx context.Context, ns string) (int, error) {
	l, err := e.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("listing the events of %s: %w", ns, err)
	}
	return len(l.Items), nil
}

// WaitEventsSettled waits until the count of events in ns holds still for a second:
// the manager has sent the events of the pods it parked, as it would have long before a
// release in real life, so they are not counted against the release.
func (e *Env) WaitEventsSettled(ctx context.Context, ns string) (int, error) {
	last, stable := -1, 0
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		n, err := e.countEvents(ctx, ns)
		if err != nil {
			return false, err
		}
		if n == last {
			stable++
		} else {
			last, stable = n, 0
		}
		return stable >= 4, nil
	})
	if err != nil {
		return 0, fmt.Errorf("waiting for the events of %s to settle: %w", ns, err)
	}
	return last, nil
}

// PodSpec describes the pods of one batch.
type PodSpec struct {
	Prefix string
	CPU    string
	Gates  []string
	// Labels are added to the bench's own label.
	Labels map[string]string
}

func (s PodSpec) Pod(ns string, i int) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns,
			Name:      fmt.Sprintf("%s-%05d", s.Prefix, i),
			Labels:    map[string]string{BenchLabel: s.Prefix},
		},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{
				Name: "c", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse(s.CPU),
					corev1.ResourceMemory: resource.MustParse("1Mi"),
				}},
			}},
		},
	}
	for k, v := range s.Labels {
		pod.Labels[k] = v
	}
	for _, g := range s.Gates {
		pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: g})
	}
	return pod
}

// CreatePods creates pods from..to-1 of a batch, createWorkers at a time.
func (e *Env) CreatePods(ctx context.Context, ns string, s PodSpec, from, to int) error {
	next := make(chan int)
	errs := make(chan error, createWorkers)
	var wg sync.WaitGroup
	for range createWorkers {
		wg.Go(func() {
			for i := range next {
				if _, err := e.Client.CoreV1().Pods(ns).Create(ctx, s.Pod(ns, i), metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("creating pod %d in %s: %w", i, ns, err)
					return
				}
			}
		})
	}
	var err error
feed:
	for i := from; i < to; i++ {
		select {
		case next <- i:
		case err = <-errs:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	if err != nil {
		return err
	}
	return <-errs
}

// DeletePods deletes every pod of ns at once (grace period 0, so bound pods go too)
// and waits until none is left, so the next measurement starts on a quiet API server.
//
// Tens of thousands of pods outlast the API server's request timeout (60 s): the call
// fails with the collection half deleted. It is asked again for what is left, as long
// as each call leaves fewer pods than the one before.
func (e *Env) DeletePods(ctx context.Context, ns string) error {
	pods := e.Client.CoreV1().Pods(ns)
	left := math.MaxInt
	for {
		err := pods.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
		if err == nil {
			break
		}
		l, lerr := pods.List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if lerr != nil || len(l.Items) >= left || ctx.Err() != nil {
			return fmt.Errorf("deleting the pods of %s: %w", ns, err)
		}
		left = len(l.Items)
		report.Logf("  deleting the pods of %s: %v; %d left, asking again", ns, err, left)
	}
	err := Poll(ctx, func(ctx context.Context) (bool, error) {
		l, err := pods.List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil && len(l.Items) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the pods of %s to be gone: %w", ns, err)
	}
	return nil
}

// Poll checks cond every 50 ms until it holds, for at most waitTimeout.
func Poll(ctx context.Context, cond wait.ConditionWithContextFunc) error {
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, waitTimeout, true, cond)
}

// WaitReady polls url until it answers 200.
func WaitReady(ctx context.Context, url string) error {
	return Poll(ctx, func(context.Context) (bool, error) { return AnswersOK(url), nil })
}

// AnswersOK reports whether a GET of url answers 200 (a health or readiness endpoint).
func AnswersOK(url string) bool {
	resp, err := http.Get(url)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
