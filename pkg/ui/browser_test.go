package ui_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
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
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quotagate/quotagate/api/v1alpha1"
	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/cmd/kubectl-quotagate/app"
	"github.com/quotagate/quotagate/internal/localcluster"
	"github.com/quotagate/quotagate/internal/localinstall"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/pkg/gates"
)

// The browser tests run `kubectl quotagate ui` (the plugin's command, in-process) on a
// local control plane with quotagate installed by its chart, and drive Debian's
// Chromium, headless, with chromedp. One control plane, one installation and one
// browser serve every test of this file; each test opens its own tab.

// chromium is Debian's package's browser; `make browser` installs it.
const chromium = "/usr/bin/chromium"

// screenshotsEnv names a directory: when set, the tests save the main views there as
// PNG (make ui-screenshots).
const screenshotsEnv = "QUOTAGATE_UI_SCREENSHOTS"

type world struct {
	cluster *localcluster.Cluster
	inst    *localinstall.Installation
	admin   client.Client
	browser context.Context
	// axe is axe-core's script, injected into pages to check their accessibility.
	axe  string
	stop func()
}

// axeVersion is the axe-core (npm package) the tests check the views with. It is
// fetched with npm at test setup into the user's cache directory, never committed.
const axeVersion = "4.14.1"

// axeSource returns axe-core's axe.min.js, from the cache or fetched with `npm pack`.
func axeSource() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "quotagate", "axe-core-"+axeVersion)
	js := filepath.Join(dir, "axe.min.js")
	if b, err := os.ReadFile(js); err == nil {
		return string(b), nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	cmd := exec.Command("npm", "pack", "axe-core@"+axeVersion, "--pack-destination", dir, "--silent")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("fetching axe-core %s with npm pack (the browser tests check accessibility with it; they need npm and the npm registry): %w", axeVersion, err)
	}
	lines := strings.Fields(string(out))
	if len(lines) == 0 {
		return "", fmt.Errorf("npm pack axe-core@%s printed no file name", axeVersion)
	}
	tgz := filepath.Join(dir, lines[len(lines)-1])
	defer func() { _ = os.Remove(tgz) }()
	f, err := os.Open(tgz)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return "", err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err != nil {
			return "", fmt.Errorf("reading %s for package/axe.min.js: %w", tgz, err)
		}
		if h.Name != "package/axe.min.js" {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(js, b, 0o644); err != nil {
			return "", err
		}
		return string(b), nil
	}
}

// checkAccessibility runs axe-core on the page and fails the test on any serious or
// critical violation.
func checkAccessibility(t *testing.T, ctx context.Context, w *world, view string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](w.axe)); err != nil {
		t.Fatalf("loading axe-core into %s: %v", view, err)
	}
	violations, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`axe.run(document, {resultTypes: ["violations"]}).then(r =>
		r.violations.filter(v => v.impact === "serious" || v.impact === "critical")
			.map(v => v.impact + " " + v.id + ": " + v.help + " at " + v.nodes.map(n => n.target.join(" ")).join(", ")))`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("running axe-core on %s: %v", view, err)
	}
	for _, v := range violations {
		t.Errorf("%s: %s", view, v)
	}
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
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0), Containers: []corev1.Container{{
			Name: "c", Image: "registry.example/app:1",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		}}},
	}
}

func teamBudget(ns string) *v1alpha1.Budget {
	return &v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "quota"},
		Spec: v1alpha1.BudgetSpec{Parent: "org", Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("1")}}}
}

// createWorld: ClusterBudget org, parent of Budgets team-a/quota and team-b/quota of
// 1 CPU each; three pods of 1 CPU in team-a (one admitted, two queued) and two in
// team-b; tenant-a may view team-a, nobody may view nothing.
func createWorld(ctx context.Context, c client.Client) error {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{v1alpha1.EnabledLabel: "true"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b", Labels: map[string]string{v1alpha1.EnabledLabel: "true"}}},
		&v1alpha1.ClusterBudget{ObjectMeta: metav1.ObjectMeta{Name: "org"},
			Spec: v1alpha1.ClusterBudgetSpec{BudgetSpec: v1alpha1.BudgetSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("10")}}}},
		teamBudget("team-a"), teamBudget("team-b"),
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
	for _, p := range []*corev1.Pod{cpuPod("team-a", "a-1"), cpuPod("team-a", "a-2"), cpuPod("team-a", "a-3"),
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
	return poll(ctx, func(ctx context.Context) (bool, error) {
		var b v1alpha1.Budget
		err := c.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "quota"}, &b)
		return err == nil && b.Status.GatedPods == 2 && b.Status.AdmittedPods == 1, nil
	})
}

// poll polls cond every 100 ms; the 2-minute bound only keeps a broken setup from
// hanging the run.
func poll(ctx context.Context, cond func(context.Context) (bool, error)) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, cond)
}

var servingURL = regexp.MustCompile(`Serving the quotagate UI at (\S+)`)

// serveUI runs `kubectl quotagate ui` with args against the world's cluster until the
// test ends, and returns the URL it printed.
func serveUI(t *testing.T, w *world, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut testbed.Output
	cmd := app.NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append([]string{"ui", "--kubeconfig", w.cluster.KubeconfigPath()}, args...))
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("kubectl quotagate ui %v: %v", args, err)
		}
	})
	var url string
	err := poll(t.Context(), func(context.Context) (bool, error) {
		select {
		case err := <-done:
			done <- err
			return false, fmt.Errorf("it ended: %v; stderr: %s", err, errOut.String())
		default:
		}
		if m := servingURL.FindStringSubmatch(out.String()); m != nil {
			url = m[1]
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("kubectl quotagate ui %v did not print its URL: %v", args, err)
	}
	return url
}

// tab opens a browser tab for the test.
func tab(t *testing.T, w *world) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(w.browser)
	t.Cleanup(cancel)
	return ctx
}

// waitPage waits until the JavaScript predicate holds on the page, checked at every
// change of the DOM (the pushed views replace <main>); the bound is a safety net.
func waitPage(t *testing.T, ctx context.Context, what, predicate string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](predicate,
		chromedp.WithPollingMutation(), chromedp.WithPollingTimeout(2*time.Minute))); err != nil {
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body ? document.body.innerText : ''"))
		t.Fatalf("waiting for %s: %v\nThe page says:\n%s", what, err, text)
	}
}

func navigate(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("opening %s: %v", url, err)
	}
}

func pageHTML(t *testing.T, ctx context.Context) string {
	t.Helper()
	html, err := chromedp.Run(ctx, chromedp.Evaluate[string]("document.documentElement.outerHTML"))
	if err != nil {
		t.Fatal(err)
	}
	return html
}

// textHas is a predicate: the element's text contains every string.
func textHas(selector string, want ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "(function(){ var e = document.querySelector(%q); if (!e) return false; var t = e.innerText;", selector)
	for _, s := range want {
		fmt.Fprintf(&b, " if (t.indexOf(%q) < 0) return false;", s)
	}
	b.WriteString(" return true; })()")
	return b.String()
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv(screenshotsEnv)
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestUIShowsBudgetsAndQueueLive: as the cluster admin, the page shows the budget tree
// and the queue the API server holds, in the order the visibility API gives; when the
// Budget's hard is raised, the pod the manager admits leaves the queue on the open
// page without a reload.
func TestUIShowsBudgetsAndQueueLive(t *testing.T) {
	w := setUp(t)
	url := serveUI(t, w, "-A")
	ctx := tab(t, w)
	base := strings.SplitN(url, "/?", 2)[0]

	navigate(t, ctx, url)
	waitPage(t, ctx, "the budget tree", textHas("#budget-tree", "ClusterBudget org", "Budget team-a/quota", "Budget team-b/quota",
		"requests.cpu: 1 of 1 used", "1 admitted", "2 gated"))
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); strings.Contains(loc, "token=") {
		t.Errorf("the token stays in the address bar: %s", loc)
	}
	waitPage(t, ctx, "the last hour", textHas("#throughput", "pods admitted"))
	screenshot(t, ctx, "budgets")
	checkAccessibility(t, ctx, w, "the budget tree")

	navigate(t, ctx, base+"/budgets/team-a/quota")
	waitPage(t, ctx, "the queue", `document.querySelectorAll("#queue tr[data-pod]").length === 2`)
	order, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#queue tr[data-pod]")).map(r => r.dataset.pod)`))
	if err != nil {
		t.Fatal(err)
	}
	// a-2 and a-3 are equal but for their creation, which may fall in the same second:
	// the manager's order is the truth the page must show.
	want := queueOrder(t, w, "team-a", "quota")
	if strings.Join(order, ",") != strings.Join(want, ",") {
		t.Fatalf("queue on the page %v, want %v (the visibility API's admission order)", order, want)
	}
	head, next := strings.TrimPrefix(want[0], "team-a/"), strings.TrimPrefix(want[1], "team-a/")
	waitPage(t, ctx, "the reason", textHas("#queue", "Budget team-a/quota"))
	screenshot(t, ctx, "queue")
	checkAccessibility(t, ctx, w, "the queue")

	navigate(t, ctx, base+"/pods/team-a/"+head)
	waitPage(t, ctx, "the pod page", textHas("main", "Pod team-a/"+head+" is waiting", "Gated", "Created"))
	screenshot(t, ctx, "pod")
	checkAccessibility(t, ctx, w, "the pod page")

	navigate(t, ctx, base+"/pods?q=a-&ns=team-a")
	waitPage(t, ctx, "the pod search", `document.querySelectorAll("#pods tr[data-pod]").length === 3`)
	checkAccessibility(t, ctx, w, "the pod list")

	navigate(t, ctx, base+"/budgets/team-a/quota")
	waitPage(t, ctx, "the queue", `document.querySelectorAll("#queue tr[data-pod]").length === 2`)
	// Live from here: the page is not loaded again.
	var b v1alpha1.Budget
	if err := w.admin.Get(t.Context(), client.ObjectKey{Namespace: "team-a", Name: "quota"}, &b); err != nil {
		t.Fatal(err)
	}
	b.Spec.Hard[corev1.ResourceRequestsCPU] = resource.MustParse("2")
	if err := w.admin.Update(t.Context(), &b); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, head+" to leave the queue on the page",
		`!document.querySelector('#queue tr[data-pod="team-a/`+head+`"]') && !!document.querySelector('#queue tr[data-pod="team-a/`+next+`"]')`)
	waitPage(t, ctx, next+" to be first", textHas(`#queue tr[data-pod="team-a/`+next+`"] td`, "1"))
}

// queueOrder reads a Budget's queue from the visibility API as the cluster admin:
// namespace/name of each pending pod, position 1 first.
func queueOrder(t *testing.T, w *world, ns, budget string) []string {
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
	var order []string
	for _, p := range page.Items {
		order = append(order, p.Namespace+"/"+p.Name)
	}
	if len(order) != 2 {
		t.Fatalf("the visibility API holds %v in %s/%s's queue, want two pods", order, ns, budget)
	}
	return order
}

// TestUITenantSeesOnlyItsNamespace: a user who may view team-a only sees nothing of
// team-b: not its budget, its pods or its namespace's name, in any view.
func TestUITenantSeesOnlyItsNamespace(t *testing.T) {
	w := setUp(t)
	url := serveUI(t, w, "--as", "tenant-a", "-n", "team-a")
	ctx := tab(t, w)
	base := strings.SplitN(url, "/?", 2)[0]

	navigate(t, ctx, url)
	waitPage(t, ctx, "team-a's budget", textHas("#budget-tree", "Budget team-a/quota"))
	views := []string{"/", "/pods", "/pods?q=secret", "/budgets/team-a/quota", "/pods/team-a/a-3"}
	for _, v := range views {
		navigate(t, ctx, base+v)
		waitPage(t, ctx, v, `document.getElementById("live").innerText.indexOf("Live") === 0`)
		if html := pageHTML(t, ctx); strings.Contains(html, "team-b") || strings.Contains(html, "b-secret") {
			t.Errorf("%s shows team-b to a tenant of team-a:\n%s", v, html)
		}
	}
	navigate(t, ctx, base+"/pods/team-b/b-secret-1")
	waitPage(t, ctx, "another namespace's pod to be refused", textHas("main", "No pod team-b/b-secret-1 is in the watch"))
}

// TestUIWithoutRightsSaysSo: a user who may read nothing gets a page that says so.
func TestUIWithoutRightsSaysSo(t *testing.T) {
	w := setUp(t)
	url := serveUI(t, w, "--as", "nobody", "-n", "team-a")
	ctx := tab(t, w)
	navigate(t, ctx, url)
	waitPage(t, ctx, "the refusal", textHas("main", "You may not list Budgets in namespace team-a", "You may not list pods in namespace team-a"))
}
