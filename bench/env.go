package main

import (
	"context"
	"fmt"
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
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/test/localcluster"
)

const (
	systemNamespace = "quotagate-system"
	managerName     = "quotagate-manager"

	// holdGate keeps pods that only measure quotagate's own gate out of the scheduler:
	// without it, every released pod would add scheduling load to the API server.
	holdGate = "bench.quotagate.io/hold"
	// baselineGate is the gate the bare client removes. The manager does not own it, so
	// the baseline runs beside a live manager that leaves those pods alone.
	baselineGate = "bench.quotagate.io/baseline"

	// benchLabel marks every pod the benchmark creates.
	benchLabel = "bench.quotagate.io/pod"

	// thisProcess names this process, which runs the manager, the webhook and the bare
	// clients, in CPU figures.
	thisProcess = "bench (manager or bare client)"

	// createWorkers is how many pod creates are in flight at once when filling a queue.
	createWorkers = 32
	// waitTimeout bounds every wait for the cluster or the manager to act.
	waitTimeout = 5 * time.Minute
)

// env is the cluster and the identities every figure uses.
type env struct {
	cluster *localcluster.Cluster
	root    string
	// client is the administrator without a client-side rate limit: it creates, watches
	// and deletes pods.
	client kubernetes.Interface
	admin  client.Client
	// managerSA is the manager's ServiceAccount, bound to config/rbac/role.yaml.
	managerSA *rest.Config
	// bare is the baselines' releaser: the manager's identity, so the API server's
	// priority and fairness and the gate guard treat it as they treat the manager, with
	// no client-side rate limit.
	bare kubernetes.Interface
	// meter reads the CPU time of the control plane's processes and of this one.
	meter cpuMeter
	nsSeq int
	// manager is the manager running in this process, if any.
	manager *runningManager
}

// startEnv starts a local control plane with room for every pod the run creates,
// installs the CRDs and the manager's RBAC, and gets the manager's token.
func startEnv(ctx context.Context, root, dir string) (*env, error) {
	c, err := localcluster.Start(ctx, localcluster.Options{
		Nodes: 4, NodeCPU: "1000", NodeMemory: "4Ti", NodeMaxPods: 1000, Dir: dir,
		// Deleting a batch between measurements is not measured: let it go faster.
		ExtraArgs: map[string][]string{localcluster.KubeAPIServer: {"--delete-collection-workers=8"}},
	})
	if err != nil {
		return nil, fmt.Errorf("starting the local control plane: %w", err)
	}
	e := &env{cluster: c, root: root, meter: cpuMeter{thisProcess: os.Getpid()}}
	for name, pid := range c.Pids() {
		e.meter[name] = pid
	}
	if err := e.setup(ctx); err != nil {
		_ = c.Stop()
		return nil, err
	}
	return e, nil
}

func (e *env) setup(ctx context.Context) error {
	scheme := clientgoscheme.Scheme
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	cfg := e.cluster.Config()
	cfg.QPS, cfg.Burst = -1, 0 // no client-side throttle
	if err := testbed.InstallCRDs(cfg, e.root); err != nil {
		return err
	}
	var err error
	if e.client, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if e.admin, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
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
		if err := e.admin.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	if e.managerSA, err = e.cluster.ServiceAccountConfig(ctx, systemNamespace, managerName, 2*time.Hour); err != nil {
		return fmt.Errorf("getting the manager's token: %w", err)
	}
	bare := rest.CopyConfig(e.managerSA)
	bare.QPS, bare.Burst = -1, 0
	if e.bare, err = kubernetes.NewForConfig(bare); err != nil {
		return err
	}
	return nil
}

// newNamespace creates a namespace named after what it is for; optedIn labels it
// quotagate.io/enabled=true. It returns once the default ServiceAccount exists, without
// which the API server refuses pods.
func (e *env) newNamespace(ctx context.Context, what string, optedIn bool) (string, error) {
	e.nsSeq++
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", what, e.nsSeq)}}
	if optedIn {
		ns.Labels = map[string]string{v1alpha1.EnabledLabel: "true"}
	}
	if err := e.admin.Create(ctx, ns); err != nil {
		return "", fmt.Errorf("creating namespace %s: %w", ns.Name, err)
	}
	err := poll(ctx, func(ctx context.Context) (bool, error) {
		_, err := e.client.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return "", fmt.Errorf("waiting for the default ServiceAccount of %s: %w", ns.Name, err)
	}
	return ns.Name, nil
}

// createBudget creates a Budget named "budget" in ns limiting requests.cpu to cpu.
func (e *env) createBudget(ctx context.Context, ns, cpu string) error {
	b := &v1alpha1.Budget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "budget"},
		Spec:       v1alpha1.BudgetSpec{Hard: corev1.ResourceList{"requests.cpu": resource.MustParse(cpu)}},
	}
	if err := e.admin.Create(ctx, b); err != nil {
		return fmt.Errorf("creating budget in %s: %w", ns, err)
	}
	return nil
}

// setBudgetCPU changes the budget's requests.cpu limit.
func (e *env) setBudgetCPU(ctx context.Context, ns, cpu string) error {
	patch := fmt.Appendf(nil, `{"spec":{"hard":{"requests.cpu":%q}}}`, cpu)
	b := &v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "budget"}}
	if err := e.admin.Patch(ctx, b, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		return fmt.Errorf("raising budget in %s: %w", ns, err)
	}
	return nil
}

// waitGated waits until the manager's status of the budget in ns counts n gated pods:
// the manager has seen them all and decided they do not fit.
func (e *env) waitGated(ctx context.Context, ns string, n int) error {
	err := poll(ctx, func(ctx context.Context) (bool, error) {
		b := &v1alpha1.Budget{}
		if err := e.admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "budget"}, b); err != nil {
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
func (e *env) countEvents(ctx context.Context, ns string) (int, error) {
	l, err := e.client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("listing the events of %s: %w", ns, err)
	}
	return len(l.Items), nil
}

// waitEventsSettled waits until the count of events in ns holds still for a second:
// the manager has sent the events of the pods it parked, as it would have long before a
// release in real life, so they are not counted against the release.
func (e *env) waitEventsSettled(ctx context.Context, ns string) (int, error) {
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

// podSpec describes the pods of one batch.
type podSpec struct {
	prefix string
	cpu    string
	gates  []string
	// labels are added to the bench's own label.
	labels map[string]string
}

func (s podSpec) pod(ns string, i int) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns,
			Name:      fmt.Sprintf("%s-%05d", s.prefix, i),
			Labels:    map[string]string{benchLabel: s.prefix},
		},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{
				Name: "c", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse(s.cpu),
					corev1.ResourceMemory: resource.MustParse("1Mi"),
				}},
			}},
		},
	}
	for k, v := range s.labels {
		pod.Labels[k] = v
	}
	for _, g := range s.gates {
		pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: g})
	}
	return pod
}

// createPods creates pods from..to-1 of a batch, createWorkers at a time.
func (e *env) createPods(ctx context.Context, ns string, s podSpec, from, to int) error {
	next := make(chan int)
	errs := make(chan error, createWorkers)
	var wg sync.WaitGroup
	for range createWorkers {
		wg.Go(func() {
			for i := range next {
				if _, err := e.client.CoreV1().Pods(ns).Create(ctx, s.pod(ns, i), metav1.CreateOptions{}); err != nil {
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

// deletePods deletes every pod of ns at once (grace period 0, so bound pods go too)
// and waits until none is left, so the next measurement starts on a quiet API server.
func (e *env) deletePods(ctx context.Context, ns string) error {
	pods := e.client.CoreV1().Pods(ns)
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("deleting the pods of %s: %w", ns, err)
	}
	err := poll(ctx, func(ctx context.Context) (bool, error) {
		l, err := pods.List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil && len(l.Items) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the pods of %s to be gone: %w", ns, err)
	}
	return nil
}

// poll checks cond every 50 ms until it holds, for at most waitTimeout.
func poll(ctx context.Context, cond wait.ConditionWithContextFunc) error {
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, waitTimeout, true, cond)
}
