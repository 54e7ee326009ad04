package ui_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quotagate/quotagate/api/v1alpha1"
	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/gates"
	"github.com/quotagate/quotagate/test/localcluster"
	"github.com/quotagate/quotagate/test/localinstall"
)

type world struct {
	cluster *localcluster.Cluster
	inst    *localinstall.Installation
	admin   client.Client
	browser context.Context
	// axe is axe-core's script, injected into pages to check their accessibility.
	axe  string
	stop func()
}

var (
	setupOnce sync.Once
	shared    *world
	setupErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		shared.stop()
	}
	os.Exit(code)
}

// setUp starts the shared world once, for the first test that needs it.
func setUp(t *testing.T) *world {
	t.Helper()
	setupOnce.Do(func() { shared, setupErr = start() })
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	return shared
}

func start() (w *world, err error) {
	if _, err := os.Stat(chromium); err != nil {
		return nil, fmt.Errorf("the browser tests need Debian's Chromium at %s: run `make browser` (apt-get install chromium): %w", chromium, err)
	}
	ctrllog.SetLogger(logr.Discard())
	axe, err := axeSource()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "quotagate-ui-test-")
	if err != nil {
		return nil, err
	}
	w = &world{axe: axe}
	var stops []func()
	w.stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
		_ = os.RemoveAll(dir)
	}
	defer func() {
		if err != nil {
			w.stop()
		}
	}()
	ctx := context.Background()
	if w.cluster, err = localcluster.Start(ctx, localcluster.Options{Nodes: 1, Dir: filepath.Join(dir, "cluster")}); err != nil {
		return nil, err
	}
	stops = append(stops, func() { _ = w.cluster.Stop() })
	if w.inst, err = localinstall.Install(ctx, w.cluster, localinstall.Options{}); err != nil {
		return nil, fmt.Errorf("installing quotagate: %w", err)
	}
	stops = append(stops, func() { _ = w.inst.Stop() })
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), v1alpha1.AddToScheme(scheme)); err != nil {
		return nil, err
	}
	if w.admin, err = client.New(w.cluster.Config(), client.Options{Scheme: scheme}); err != nil {
		return nil, err
	}
	if err := createWorld(ctx, w.admin); err != nil {
		return nil, err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("headless", true), chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(filepath.Join(dir, "chromium")),
		chromedp.WindowSize(1280, 900))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	stops = append(stops, cancelAlloc, cancelBrowser)
	if err := chromedp.Do(browser); err != nil {
		return nil, fmt.Errorf("starting %s: %w", chromium, err)
	}
	w.browser = browser
	return w, nil
}

func cpuPod(ns, name string) *corev1.Pod {
	return podtest.New(name).NS(ns).GracePeriod(0).Container("c", "registry.example/app:1").Req("cpu=1").Obj()
}

func teamBudget(ns string) *v1alpha1.Budget {
	return &v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "quota"},
		Spec: v1alpha1.BudgetSpec{Parent: "org", Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("1")}}}
}

// gpuFlavor is a Flavor of nodes labelled gpu.product=name.
func gpuFlavor(name string) *v1alpha1.Flavor {
	return &v1alpha1.Flavor{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.FlavorSpec{NodeLabels: map[string]string{"gpu.product": name}}}
}

// gpuBudget is Budget team-a/gpus: 2 GPUs on h100, then 4 on a100, for the pods
// labelled app=train (there are none: it changes no other budget's queue).
func gpuBudget() *v1alpha1.Budget {
	gpus := func(n string) corev1.ResourceList {
		return corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse(n)}
	}
	return &v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "gpus"},
		Spec: v1alpha1.BudgetSpec{
			Hard:        corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("8")},
			PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "train"}},
			Flavors:     []v1alpha1.FlavorQuota{{Name: "h100", Hard: gpus("2")}, {Name: "a100", Hard: gpus("4")}},
		}}
}

// createWorld: ClusterBudget org, parent of Budgets team-a/quota and team-b/quota of
// 1 CPU each; three pods of 1 CPU in team-a (one admitted, declaring it runs 1h; two
// queued) and two in
// team-b; Budget team-a/gpus with the flavors h100 and a100; tenant-a may view team-a,
// nobody may view nothing.
func createWorld(ctx context.Context, c client.Client) error {
	objs := []client.Object{
		gpuFlavor("h100"), gpuFlavor("a100"),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{v1alpha1.EnabledLabel: "true"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b", Labels: map[string]string{v1alpha1.EnabledLabel: "true"}}},
		&v1alpha1.ClusterBudget{ObjectMeta: metav1.ObjectMeta{Name: "org"},
			Spec: v1alpha1.ClusterBudgetSpec{BudgetSpec: v1alpha1.BudgetSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("10")}}}},
		teamBudget("team-a"), teamBudget("team-b"), gpuBudget(),
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "tenant-a-view"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "tenant-a"}},
		},
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	// One at a time, in order: the queue's order is creation order at equal priority.
	// a-1, the pod that runs, declares how long it runs: the estimator then gives the
	// head of team-a/quota's queue a known start (an hour after a-1's), and the pod
	// behind it an unknown one (the head declares nothing).
	runs := cpuPod("team-a", "a-1")
	runs.Annotations = map[string]string{v1alpha1.ExpectedDurationAnnotation: "1h"}
	for _, p := range []*corev1.Pod{runs, cpuPod("team-a", "a-2"), cpuPod("team-a", "a-3"),
		cpuPod("team-b", "b-secret-1"), cpuPod("team-b", "b-secret-2")} {
		err := poll(ctx, func(ctx context.Context) (bool, error) {
			return c.Create(ctx, p.DeepCopy()) == nil, nil // the ServiceAccount may not exist yet
		})
		if err != nil {
			return fmt.Errorf("creating pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		if p.Name == "a-1" || p.Name == "b-secret-1" {
			// Admitted before the next one exists, so it is the one that runs.
			if err := poll(ctx, func(ctx context.Context) (bool, error) {
				var got corev1.Pod
				err := c.Get(ctx, client.ObjectKeyFromObject(p), &got)
				return err == nil && !gates.HasGate(&got, v1alpha1.SchedulingGate), nil
			}); err != nil {
				return fmt.Errorf("waiting for %s/%s to be admitted: %w", p.Namespace, p.Name, err)
			}
		}
	}
	if err := poll(ctx, func(ctx context.Context) (bool, error) {
		var b v1alpha1.Budget
		err := c.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "quota"}, &b)
		return err == nil && b.Status.GatedPods == 2 && b.Status.AdmittedPods == 1, nil
	}); err != nil {
		return err
	}
	return poll(ctx, func(ctx context.Context) (bool, error) {
		var b v1alpha1.Budget
		err := c.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "gpus"}, &b)
		return err == nil && len(b.Status.Flavors) == 2, nil
	})
}

// poll polls cond every 100 ms; the 2-minute bound only keeps a broken setup from
// hanging the run.
func poll(ctx context.Context, cond func(context.Context) (bool, error)) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, cond)
}

// queueOrder reads a Budget's queue from the visibility API as the cluster admin:
// namespace/name of each pending pod, position 1 first.
func queueOrder(t *testing.T, w *world, ns, budget string) []string {
	t.Helper()
	var order []string
	for _, p := range pendingPods(t, w, ns, budget) {
		order = append(order, p.Namespace+"/"+p.Name)
	}
	if len(order) != 2 {
		t.Fatalf("the visibility API holds %v in %s/%s's queue, want two pods", order, ns, budget)
	}
	return order
}

// pendingPods reads a Budget's queue from the visibility API as the cluster admin,
// position 1 first.
func pendingPods(t *testing.T, w *world, ns, budget string) []visv1.PendingPod {
	t.Helper()
	cs, err := kubernetes.NewForConfig(w.cluster.Config())
	if err != nil {
		t.Fatal(err)
	}
	path := "/apis/" + visv1.GroupName + "/v1alpha1/namespaces/" + ns + "/" + visv1.ResourceBudgets + "/" + budget + "/" + visv1.SubresourcePendingPods
	body, err := cs.CoreV1().RESTClient().Get().AbsPath(path).DoRaw(t.Context())
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	var page visv1.PendingPodList
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return page.Items
}
