//go:build e2e

package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/test/localcluster"
)

// testTenantSeesQueue is the question a tenant asks first, answered with nothing but
// their kubeconfig: a ServiceAccount bound to the namespace's view role runs
// `kubectl quotagate queue` and `why` (the plugin binary, which kubectl would exec),
// and reads the API with `kubectl get --raw`; one with no rights is refused. The chart's
// aggregated roles are all it takes: no role binding of quotagate's own, no
// port-forward, no token minted by hand.
func testTenantSeesQueue(t *testing.T, e env, _ *podWatcher) {
	ctx := t.Context()
	if e.inst.VisibilityAPIService() == "" {
		t.Fatal("the chart's defaults serve the visibility API, but the release has no APIService")
	}
	plugin := buildPlugin(t)
	viewer := tenantKubeconfig(t, e, "queue-viewer", "view")
	outsider := tenantKubeconfig(t, e, "outsider", "")

	var gated []string
	for _, p := range listPods(t, e, teamNS) {
		if hasGate(&p) {
			gated = append(gated, "pod/"+p.Name)
		}
	}
	if len(gated) == 0 {
		t.Fatal("no gated pod in " + teamNS + ": the step needs the closed budget's queue")
	}

	// kube-controller-manager aggregates the chart's queue-viewer role into view a
	// moment after the install: poll, as a user retrying would.
	var table string
	waitFor(t, "the tenant's `kubectl quotagate queue` to answer", time.Minute, func() (bool, string) {
		out, errOut, err := runPlugin(t, plugin, viewer, "queue", "team-a", "-n", teamNS)
		table = out
		return err == nil, errOut
	})
	t.Logf("kubectl quotagate queue team-a -n %s (as %s/queue-viewer):\n%s", teamNS, teamNS, table)

	out, errOut, err := runPlugin(t, plugin, viewer, "queue", "team-a", "-n", teamNS, "-o", "name")
	fatalIf(t, err, "queue -o name: "+errOut)
	names := strings.Fields(out)
	if diff := cmp.Diff(sorted(gated), sorted(names)); diff != "" {
		t.Errorf("the queue lists other pods than the gated ones (-gated +listed):\n%s", diff)
	}
	// Admission order: the four high-priority Jobs' pods come first.
	for i, n := range names {
		if high := strings.HasPrefix(n, "pod/high-"); high != (i < 4) {
			t.Errorf("position %d is %s: want the four high-priority pods first, then the low ones (%v)", i+1, n, names)
			break
		}
	}

	head := strings.TrimPrefix(names[0], "pod/")
	why, errOut, err := runPlugin(t, plugin, viewer, "why", head, "-n", teamNS)
	fatalIf(t, err, "why: "+errOut)
	t.Logf("kubectl quotagate why %s -n %s:\n%s", head, teamNS, why)
	for _, want := range []string{head, "team-a", "Closed", "1 of " + strconv.Itoa(len(gated))} {
		if !strings.Contains(why, want) {
			t.Errorf("`why %s` does not say %q:\n%s", head, want, why)
		}
	}

	// The plugin is quiet on a default install: what a viewer runs every day prints no
	// note, hint or stack trace on stderr.
	for _, args := range [][]string{{"budgets", "-n", teamNS}, {"queue", "-n", teamNS}, {"why", head, "-n", teamNS}} {
		out, errOut, err := runPlugin(t, plugin, viewer, args...)
		if err != nil || errOut != "" || out == "" {
			t.Errorf("kubectl quotagate %s as a viewer: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
		}
	}

	// kubectl get --raw, with the tenant's credentials.
	cfg, err := clientcmd.BuildConfigFromFlags("", viewer)
	fatalIf(t, err, "reading the tenant's kubeconfig")
	page, err := pendingPodsVia(ctx, cfg, map[string]string{"limit": "2"})
	fatalIf(t, err, "kubectl get --raw .../budgets/team-a/pendingpods?limit=2")
	if page.Total != int64(len(gated)) || len(page.Items) != 2 || page.Items[0].Name != head {
		t.Errorf("get --raw ?limit=2: total %d with %d items, first %q; want total %d, 2 items, first %s",
			page.Total, len(page.Items), firstName(page.Items), len(gated), head)
	}

	// No rights, no queue: the API answers 403, and the plugin says so.
	_, errOut, err = runPlugin(t, plugin, outsider, "queue", "team-a", "-n", teamNS)
	if err == nil || !strings.Contains(errOut, "forbidden") {
		t.Errorf("a ServiceAccount with no role binding read the queue (err %v):\n%s", err, errOut)
	}
	_, errOut, err = runPlugin(t, plugin, outsider, "why", head, "-n", teamNS)
	if err == nil || !strings.Contains(errOut, "forbidden") {
		t.Errorf("a ServiceAccount with no role binding asked why %s waits (err %v):\n%s", head, err, errOut)
	}
	testTenantSimulates(t, e, plugin, viewer)
}

// testTenantSimulates asks the installed chart's what-if: an editor of the namespace (the
// chart aggregates create on podsimulations into edit) learns that a pod created now
// would wait in the closed Budget, and nothing is created; a viewer, who may not create
// pods, is refused.
func testTenantSimulates(t *testing.T, e env, plugin, viewer string) {
	editor := tenantKubeconfig(t, e, "what-if-editor", "edit")
	file := filepath.Join(t.TempDir(), "pod.yaml")
	fatalIf(t, os.WriteFile(file, []byte(`apiVersion: v1
kind: Pod
metadata:
  name: what-if
spec:
  containers:
  - name: c
    image: registry.k8s.io/pause:3.10
    resources: {requests: {cpu: 100m}}
`), 0o600), "writing pod.yaml")
	var out string
	waitFor(t, "the editor's `kubectl quotagate simulate` to answer", time.Minute, func() (bool, string) {
		o, errOut, err := runPlugin(t, plugin, editor, "simulate", "-f", file, "-n", teamNS)
		out = o
		return err == nil, errOut
	})
	t.Logf("kubectl quotagate simulate -f pod.yaml -n %s (as %s/what-if-editor):\n%s", teamNS, teamNS, out)
	for _, want := range []string{"what-if", "Budget " + teamNS + "/team-a", "nothing was created"} {
		if !strings.Contains(out, want) {
			t.Errorf("simulate does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Admitted") {
		t.Errorf("simulate admits a pod into the closed Budget:\n%s", out)
	}
	_, err := e.cs.CoreV1().Pods(teamNS).Get(t.Context(), "what-if", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("after the simulation, get pod what-if: %v, want NotFound", err)
	}
	_, errOut, err := runPlugin(t, plugin, viewer, "simulate", "-f", file, "-n", teamNS)
	if err == nil || !strings.Contains(errOut, "you may not simulate pods in namespace "+teamNS) {
		t.Errorf("a viewer simulated a pod (err %v):\n%s", err, errOut)
	}
}

var pluginOnce struct {
	sync.Once
	path string
	err  error
}

// buildPlugin builds kubectl-quotagate once per test binary, as `make build` does.
func buildPlugin(t *testing.T) string {
	t.Helper()
	pluginOnce.Do(func() {
		wd, err := os.Getwd()
		if err != nil {
			pluginOnce.err = err
			return
		}
		root, err := localcluster.RepoRoot(wd)
		if err != nil {
			pluginOnce.err = err
			return
		}
		dir, err := os.MkdirTemp("", "quotagate-e2e-plugin-")
		if err != nil {
			pluginOnce.err = err
			return
		}
		pluginOnce.path = filepath.Join(dir, "kubectl-quotagate")
		cmd := exec.Command("go", "build", "-o", pluginOnce.path, "./cmd/kubectl-quotagate")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			pluginOnce.err = err
			t.Logf("go build ./cmd/kubectl-quotagate:\n%s", out)
		}
	})
	fatalIf(t, pluginOnce.err, "building kubectl-quotagate")
	return pluginOnce.path
}

// tenantKubeconfig writes a kubeconfig for ServiceAccount team-a/name, bound in team-a
// to the ClusterRole role ("" for no binding at all), and returns its path.
func tenantKubeconfig(t *testing.T, e env, name, role string) string {
	t.Helper()
	return tenantKubeconfigIn(t, e, teamNS, name, role)
}

// tenantKubeconfigIn is tenantKubeconfig for a ServiceAccount of namespace ns, bound in ns.
func tenantKubeconfigIn(t *testing.T, e env, ns, name, role string) string {
	t.Helper()
	ctx := t.Context()
	cfg, err := e.cluster.ServiceAccountConfig(ctx, ns, name, 0)
	fatalIf(t, err, "a token for ServiceAccount "+name)
	if role != "" {
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-" + role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
		}
		_, err := e.cs.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{})
		fatalIf(t, err, "binding "+name+" to "+role)
	}
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	fatalIf(t, e.cluster.WriteKubeconfig(cfg, path), "writing the kubeconfig of "+name)
	return path
}

// runPlugin runs the plugin with a kubeconfig, as `kubectl quotagate ARGS` does.
func runPlugin(t *testing.T, plugin, kubeconfig string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), plugin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func firstName(items []visv1.PendingPod) string {
	if len(items) == 0 {
		return ""
	}
	return items[0].Name
}
