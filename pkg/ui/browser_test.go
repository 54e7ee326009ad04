package ui_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/cmd/kubectl-quotagate/app"
	"github.com/quotagate/quotagate/internal/testbed"
)

// The browser tests run `kubectl quotagate ui` (the plugin's command, in-process) on a
// local control plane with quotagate installed by its chart, and drive Debian's
// Chromium, headless, with chromedp. One control plane, one installation and one
// browser (world_test.go) serve every test; each test opens its own tab.
// chromium is Debian's package's browser; `make browser` installs it.
const chromium = "/usr/bin/chromium"

// screenshotsEnv names a directory: when set, the tests save the main views there as
// PNG (make ui-screenshots).
const screenshotsEnv = "QUOTAGATE_UI_SCREENSHOTS"

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
	testbed.Poll(t, 2*time.Minute, fmt.Sprintf("kubectl quotagate ui %v to print its URL", args), func(context.Context) (bool, error) {
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
	// The head waits for a-1, which declares 1h: once the manager's estimator has run
	// (every 5 s), its start is known.
	waitPage(t, ctx, "the head's estimated start", textHas(`#queue tr[data-pod="team-a/`+head+`"] td.eta time`, "in "))
	screenshot(t, ctx, "queue")
	checkAccessibility(t, ctx, w, "the queue")

	navigate(t, ctx, base+"/pods/team-a/"+head)
	waitPage(t, ctx, "the pod page", textHas("main", "Pod team-a/"+head+" is waiting", "Gated", "Created"))
	waitPage(t, ctx, "the pod's estimated start", textHas("#pod-eta", "Estimated start: in "))
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
	// A merge patch: the manager writes the status meanwhile, so an Update could conflict.
	raised := b.DeepCopy()
	raised.Spec.Hard[corev1.ResourceRequestsCPU] = resource.MustParse("2")
	if err := w.admin.Patch(t.Context(), raised, client.MergeFrom(&b)); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, head+" to leave the queue on the page",
		`!document.querySelector('#queue tr[data-pod="team-a/`+head+`"]') && !!document.querySelector('#queue tr[data-pod="team-a/`+next+`"]')`)
	waitPage(t, ctx, next+" to be first", textHas(`#queue tr[data-pod="team-a/`+next+`"] td`, "1"))
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

// TestUITenantOpensOnItsQueue: a user who may view team-a opens the page on what
// waits in team-a: the queue of team-a/quota in admission order, above the budget tree;
// then the last hour as a chart (a bar per 5 minutes, in words for screen readers);
// and every time on the page, the live status's included, is written one way, 24-hour.
func TestUITenantOpensOnItsQueue(t *testing.T) {
	w := setUp(t)
	queue := pendingPods(t, w, "team-a", "quota")
	if len(queue) == 0 {
		t.Fatal("no pod waits in team-a/quota: the world has changed")
	}
	url := serveUI(t, w, "--as", "tenant-a", "-n", "team-a")
	ctx := tab(t, w)
	navigate(t, ctx, url)
	head := queue[0].Namespace + "/" + queue[0].Name
	waitPage(t, ctx, "team-a's queue", textHas(`#q-b-team-a-quota tr[data-pod="`+head+`"] td`, "1"))
	first, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("main > section, main > h1, main > ul").id`))
	if err != nil {
		t.Fatal(err)
	}
	if first != "ns-queues" {
		t.Errorf("the page opens on #%s, want team-a's queue (#ns-queues) first", first)
	}
	bars, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#hour-chart rect.bar").length`))
	if err != nil {
		t.Fatal(err)
	}
	if bars != 12 {
		t.Errorf("the last hour's chart has %d bars, want 12", bars)
	}
	waitPage(t, ctx, "the chart in words", textHas("figure.chart figcaption", "Bars: pods admitted per 5 minutes"))
	desc, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("hour-chart-desc").textContent`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(desc, "Admitted per 5 minutes") && desc != "No pod was admitted in the last hour." {
		t.Errorf("the chart says in words %q", desc)
	}
	// The view refreshes every 15 s for its waiting times: the status says when, as
	// the server writes times (2026-12-05 15:04:05), whatever the browser's locale.
	waitPage(t, ctx, "a live update", `/^Live: updated \d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/.test(document.getElementById("live").innerText)`)
	checkAccessibility(t, ctx, w, "a namespace's overview")
	screenshot(t, ctx, "namespace")
}

// TestUITenantSeesFlavors: a user who may view team-a sees its flavored budget's
// flavors, in the order pods try them, with each flavor's used of hard, on the budget
// tree and on the budget's own page.
func TestUITenantSeesFlavors(t *testing.T) {
	w := setUp(t)
	url := serveUI(t, w, "--as", "tenant-a", "-n", "team-a")
	ctx := tab(t, w)
	base := strings.SplitN(url, "/?", 2)[0]
	flavors := `Array.from(document.querySelectorAll("#b-team-a-gpus li.flavor, main > ul.flavors li.flavor")).map(f => f.dataset.flavor + ": " + f.innerText.replace(/\s+/g, " ").trim())`
	want := []string{
		"h100: Flavor h100 requests.nvidia.com/gpu on flavor h100: 0 of 2 used",
		"a100: Flavor a100 requests.nvidia.com/gpu on flavor a100: 0 of 4 used",
	}
	// The first view is the URL printed, whose token sets the cookie.
	for _, v := range []string{url, base + "/budgets/team-a/gpus"} {
		navigate(t, ctx, v)
		waitPage(t, ctx, "the flavors of Budget team-a/gpus on "+v, textHas("main", "Budget team-a/gpus", "Flavor h100", "Flavor a100"))
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](flavors))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: the flavors on the page are\n%s\nwant\n%s", v, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	checkAccessibility(t, ctx, w, "a flavored budget")
}

// TestUITenantSeesEstimatedStarts: a user who may view team-a sees, in the queue of
// team-a/quota, each gated pod's estimated start as the visibility API gives it: the
// time until it ("in 59m") with the absolute time in the tooltip, or "unknown: <why>";
// and the head's estimate on its own pod page.
func TestUITenantSeesEstimatedStarts(t *testing.T) {
	w := setUp(t)
	// The head waits for a-1, which declares 1h: its estimate is known once the
	// manager's estimator (every 5 s) has run.
	var queue []visv1.PendingPod
	testbed.Poll(t, time.Minute, "a known estimate for the head of team-a/quota", func(context.Context) (bool, error) {
		queue = pendingPods(t, w, "team-a", "quota")
		return len(queue) > 0 && queue[0].EstimatedStart != nil && queue[0].EstimatedStart.Median != nil, nil
	})
	url := serveUI(t, w, "--as", "tenant-a", "-n", "team-a")
	ctx := tab(t, w)
	base := strings.SplitN(url, "/?", 2)[0]
	navigate(t, ctx, url)
	waitPage(t, ctx, "team-a's budget", textHas("#budget-tree", "Budget team-a/quota"))

	navigate(t, ctx, base+"/budgets/team-a/quota")
	head := queue[0]
	cell := `#queue tr[data-pod="team-a/` + head.Name + `"] td.eta`
	waitPage(t, ctx, "the head's estimated start", `!!document.querySelector('`+cell+` time')`)
	// The estimate may move while the page loads (a first one made before a-1 ran is
	// replaced by one from its start time): the page must come to show the one the
	// visibility API gives, at the same moment.
	var median time.Time
	var absolute, text string
	testbed.Poll(t, 2*time.Minute, "the page to show the visibility API's estimated start of the head", func(context.Context) (bool, error) {
		q := pendingPods(t, w, "team-a", "quota")
		if len(q) == 0 || q[0].Name != head.Name || q[0].EstimatedStart == nil || q[0].EstimatedStart.Median == nil {
			return false, testbed.NotYet(fmt.Errorf("the visibility API gives the head %+v", q))
		}
		queue, median = q, q[0].EstimatedStart.Median.Time
		absolute = median.Local().Format("2006-01-02 15:04:05")
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => { const e = document.querySelector('`+cell+` time');
			return e ? [e.getAttribute("datetime") || "", e.title, e.innerText] : ["", "", ""]; })()`))
		if err != nil {
			return false, err
		}
		text = got[2]
		ok := got[0] == median.UTC().Format(time.RFC3339) && strings.Contains(got[1], "Estimated start "+absolute)
		return ok, testbed.NotYet(fmt.Errorf("the page gives datetime %q title %q, the API %s", got[0], got[1], median))
	})
	// The page was rendered in the last seconds: the time until the median, to the
	// minute as kubectl prints ages.
	var want []string
	for d := time.Until(median) - 2*time.Minute; d <= time.Until(median)+time.Minute; d += 30 * time.Second {
		want = append(want, "in "+duration.HumanDuration(d))
	}
	if !slices.Contains(want, text) {
		t.Errorf("the head %s starts %q on the page, want one of %q (its median is %s)", head.Name, text, want, median)
	}
	// Behind the head (unless TestUIShowsBudgetsAndQueueLive admitted it), a pod waits
	// for the head, which declares no duration: its start is unknown.
	if len(queue) == 2 {
		behind := queue[1]
		if e := behind.EstimatedStart; e == nil || e.Unknown != "NoHistory" {
			t.Fatalf("the visibility API gives %s, behind the head, the estimate %+v; want unknown for NoHistory", behind.Name, e)
		}
		waitPage(t, ctx, behind.Name+"'s unknown start", textHas(`#queue tr[data-pod="team-a/`+behind.Name+`"] td.eta`, "unknown: NoHistory"))
	}
	checkAccessibility(t, ctx, w, "a queue with estimated starts")

	// On its own page, the estimate the visibility API gives at the same moment: it
	// may have moved since the queue's page showed it (as above).
	navigate(t, ctx, base+"/pods/team-a/"+head.Name)
	testbed.Poll(t, 2*time.Minute, "the head's page to show the visibility API's estimated start", func(context.Context) (bool, error) {
		q := pendingPods(t, w, "team-a", "quota")
		if len(q) == 0 || q[0].Name != head.Name || q[0].EstimatedStart == nil || q[0].EstimatedStart.Median == nil {
			return false, testbed.NotYet(fmt.Errorf("the visibility API gives the head %+v", q))
		}
		absolute = q[0].EstimatedStart.Median.Local().Format("2006-01-02 15:04:05")
		shown, err := chromedp.Run(ctx, chromedp.Evaluate[bool](textHas("#pod-eta", "Estimated start:", "Estimated start "+absolute)))
		return err == nil && shown, testbed.NotYet(fmt.Errorf("the page does not say %q (%v)", "Estimated start "+absolute, err))
	})
	checkAccessibility(t, ctx, w, "a gated pod's page")
}

// TestUIWithoutRightsSaysSo: a user who may read nothing gets a page that says so.
func TestUIWithoutRightsSaysSo(t *testing.T) {
	w := setUp(t)
	url := serveUI(t, w, "--as", "nobody", "-n", "team-a")
	ctx := tab(t, w)
	navigate(t, ctx, url)
	waitPage(t, ctx, "the refusal", textHas("main", "You may not list Budgets in namespace team-a", "You may not list pods in namespace team-a"))
}
