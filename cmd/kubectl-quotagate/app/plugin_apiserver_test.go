package app

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/test/localcluster"
)

// TestCommandsOnRealAPIServer runs the plugin's completion, -l, -w, --dry-run, usage and
// error style against a real kube-apiserver, with an in-process manager that admits
// pods, writes budgets' status and serves its snapshot (plain HTTP, read with
// --manager-url), as the cluster admin and as a tenant whose roles are in team-a only.
func TestCommandsOnRealAPIServer(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	cluster := localcluster.StartForTest(t, localcluster.Options{Nodes: 1})
	cfg := cluster.Config()
	root, err := localcluster.RepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	if err := testbed.InstallCRDs(cfg, root); err != nil {
		t.Fatal(err)
	}
	admin, err := client.New(cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	port := testbed.FreePort(t)
	startManager(t, cfg, metricsserver.Options{BindAddress: fmt.Sprintf("127.0.0.1:%d", port)})
	managerURL := fmt.Sprintf("http://127.0.0.1:%d", port)

	teamA, teamB := budget("team-a", "team-a", "requests.cpu=2,pods=10", "org"), budget("team-b", "team-b", "requests.cpu=4", "org")
	org := clusterBudget("org", "requests.cpu=8", nil)
	teamA.Labels, teamB.Labels, org.Labels = map[string]string{"tier": "gold"}, map[string]string{"tier": "silver"}, map[string]string{"tier": "gold"}
	create(t, admin, namespace("team-a", true), namespace("team-b", true), teamA, teamB, org,
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "team-viewer"},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"budgets"}, Verbs: []string{"get", "list", "watch"}},
				{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
			},
		},
		roleBinding("team-a", "team-viewer", "tenant"))
	// team-a: 2 CPUs. a1 and a2 take 1.5; a3 (1 CPU) and a4 (1 CPU) wait.
	for _, p := range []struct{ name, cpu, app string }{{"a1", "1", "train"}, {"a2", "500m", "web"}} {
		pod := apiPod(p.name, p.cpu)
		pod.Labels = map[string]string{"app": p.app}
		createPod(t, admin, pod)
		waitAdmitted(t, admin, "team-a", p.name)
	}
	for _, p := range []struct{ name, app string }{{"a3", "train"}, {"a4", "web"}} {
		pod := apiPod(p.name, "1")
		pod.Labels = map[string]string{"app": p.app}
		createPod(t, admin, pod)
	}
	b1 := apiPod("b1", "1")
	b1.Namespace = "team-b"
	createPod(t, admin, b1)
	waitAdmitted(t, admin, "team-b", "b1")
	waitStatus(t, admin, "team-a", "1500m", 2)

	kubeconfig := cluster.KubeconfigPath()
	tenantConfig := kubeconfigInNamespace(t, kubeconfig, "team-a")
	asAdmin := func(args ...string) []string {
		return append([]string{"--kubeconfig", kubeconfig, "--manager-url", managerURL}, args...)
	}
	asTenant := func(args ...string) []string {
		return append([]string{"--kubeconfig", tenantConfig, "--as", "tenant", "--manager-url", managerURL}, args...)
	}

	t.Run("completion", func(t *testing.T) {
		tests := map[string]struct {
			args []string
			want string
		}{
			"a tenant's budgets":             {asTenant("__complete", "queue", ""), "team-a\n"},
			"a tenant's pods":                {asTenant("__complete", "why", "a"), "a1\na2\na3\na4\n"},
			"a tenant's namespace":           {asTenant("__complete", "budgets", "-n", ""), "team-a\n"},
			"the admin's budgets":            {asAdmin("__complete", "-n", "team-a", "usage", ""), "clusterbudget/org\nteam-a\n"},
			"the admin's budgets of team-b":  {asAdmin("__complete", "close", "team-b/"), "team-b/team-b\n"},
			"the admin's ClusterBudgets":     {asAdmin("__complete", "open", "cbdg/"), "cbdg/org\n"},
			"the admin's pods of team-b":     {asAdmin("__complete", "why", "team-b/"), "team-b/b1\n"},
			"the admin's namespaces":         {asAdmin("__complete", "queue", "--namespace", "team-"), "team-a\nteam-b\n"},
			"a second argument":              {asAdmin("__complete", "usage", "team-a/team-a", ""), ""},
			"--dry-run's values":             {asAdmin("__complete", "close", "--dry-run", ""), "client\nnone\nserver\n"},
			"a tenant's namespace, as -n=ns": {asTenant("__complete", "why", "-n", "team"), "team-a\n"},
		}
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				out, _, err := runReal(t, tc.args...)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want+":4\n", out); diff != "" {
					t.Errorf("%v (-want +got):\n%s", tc.args, diff)
				}
			})
		}
	})

	t.Run("the completion binary, as kubectl runs it", func(t *testing.T) {
		dir := buildPluginBinaries(t, root)
		out := runCompletionBinary(t, dir, "--kubeconfig", tenantConfig, "--as", "tenant", "why", "")
		if diff := cmp.Diff("a1\na2\na3\na4\n:4\n", out); diff != "" {
			t.Errorf("kubectl_complete-quotagate why '' (-want +got):\n%s", diff)
		}
	})

	t.Run("-l", func(t *testing.T) {
		out, _, err := runReal(t, asAdmin("budgets", "-A", "-l", "tier=gold", "-o", "name")...)
		if diff := cmp.Diff("team-a/budget.quotagate.io/team-a\nclusterbudget.quotagate.io/org\n", out); diff != "" || err != nil {
			t.Errorf("budgets -A -l tier=gold: %v (-want +got):\n%s", err, diff)
		}
		out, _, err = runReal(t, asTenant("queue", "team-a", "-l", "app=train", "-o", "name")...)
		if diff := cmp.Diff("pod/a3\n", out); diff != "" || err != nil {
			t.Errorf("queue team-a -l app=train: %v (-want +got):\n%s", err, diff)
		}
		if _, _, err := runReal(t, asAdmin("budgets", "-l", "tier in (gold")...); err == nil || !strings.Contains(err.Error(), `invalid selector "tier in (gold"`) {
			t.Errorf("budgets -l with a bad selector: got %v", err)
		}
	})

	t.Run("--dry-run leaves the budget as it was", func(t *testing.T) {
		for _, tc := range []struct{ mode, want string }{{"client", " (dry run)"}, {"server", " (server dry run)"}} {
			out, _, err := runReal(t, asAdmin("close", "team-a/team-a", "--dry-run="+tc.mode)...)
			if want := "Budget team-a/team-a: spec.state set to Closed" + tc.want + "\n"; out != want || err != nil {
				t.Errorf("close --dry-run=%s: %v, %q; want %q", tc.mode, err, out, want)
			}
			var b v1alpha1.Budget
			if err := admin.Get(t.Context(), client.ObjectKey{Namespace: "team-a", Name: "team-a"}, &b); err != nil || b.Spec.State != v1alpha1.StateOpen {
				t.Errorf("after close --dry-run=%s: spec.state %q (%v), want Open", tc.mode, b.Spec.State, err)
			}
		}
		// The API server authorizes a dry run as the write it stands for.
		_, _, err := runReal(t, asTenant("close", "team-a", "--dry-run=server")...)
		if err == nil || !strings.Contains(err.Error(), `User "tenant" cannot patch resource "budgets"`) {
			t.Errorf("close --dry-run=server as the tenant: got %v, want the API server's refusal", err)
		}
	})

	t.Run("usage adds up to the budget's status", func(t *testing.T) {
		out, errOut, err := runReal(t, asTenant("usage", "team-a", "--sort-by", "cpu")...)
		want := "Budget team-a/team-a: 2 pods charged; hard pods=10, requests.cpu=2\n" +
			"POD     PODS   REQUESTS.CPU\n" +
			"a1      1      1\n" +
			"a2      1      500m\n" +
			"TOTAL   2      1500m\n"
		if diff := cmp.Diff(want, out); diff != "" || err != nil || errOut != "" {
			t.Errorf("usage team-a --sort-by cpu: %v (-want +got):\n%s\nstderr: %s", err, diff, errOut)
		}
		for _, key := range []string{"team-a/team-a", "clusterbudget/org"} {
			out, _, err := runReal(t, asAdmin("usage", key, "-o", "json")...)
			if err != nil {
				t.Fatalf("usage %s -o json: %v", key, err)
			}
			var got BudgetUsage
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("decoding usage %s: %v\n%s", key, err, out)
			}
			for name, total := range got.Total {
				if used := got.StatusUsed[name]; total.Cmp(used) != 0 {
					t.Errorf("usage %s: total %s=%s, status.used %s", key, name, total.String(), used.String())
				}
			}
			if cpu := got.Total[corev1.ResourceRequestsCPU]; key == "clusterbudget/org" && (len(got.Pods) != 3 || cpu.Cmp(resource.MustParse("2500m")) != 0) {
				t.Errorf("usage clusterbudget/org: %d pods, total %v; want a1, a2 and b1, 2500m", len(got.Pods), got.Total)
			}
		}
		if _, _, err := runReal(t, asTenant("usage", "clusterbudget/org")...); err == nil || !strings.Contains(err.Error(), `reading ClusterBudget org: clusterbudgets.quotagate.io "org" is forbidden`) {
			t.Errorf("usage clusterbudget/org as the tenant: got %v", err)
		}
	})

	t.Run("errors print as kubectl's", func(t *testing.T) {
		tests := map[string]struct {
			args []string
			want string
		}{
			"a pod that does not exist": {asTenant("why", "nope"), "error: reading pod team-a/nope: pods \"nope\" not found\n"},
			"an unknown flag":           {asTenant("queue", "--bogus"), "error: unknown flag: --bogus\nSee 'kubectl quotagate queue -h' for help and examples\n"},
		}
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				var out, errOut strings.Builder
				code := Run(t.Context(), streamsTo(&out, &errOut), tc.args)
				if code != 1 || errOut.String() != tc.want || out.String() != "" {
					t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and stderr %q", tc.args, code, out.String(), errOut.String(), tc.want)
				}
			})
		}
	})

	t.Run("-w", func(t *testing.T) {
		testWatch(t, admin, asTenant)
	})

	// Without --manager-* (a default install, whose manager serves its snapshot to
	// bearer tokens only), budgets reads nothing it cannot and says nothing on stderr.
	t.Run("budgets names no manager and prints no note", func(t *testing.T) {
		out, errOut, err := runReal(t, "--kubeconfig", kubeconfig, "budgets", "-A")
		if err != nil || errOut != "" {
			t.Fatalf("budgets -A: %v\nstderr:\n%s", err, errOut)
		}
		for _, want := range []string{"Budget team-a/team-a", "ClusterBudget org"} {
			if !strings.Contains(out, want) {
				t.Errorf("budgets -A does not show %s:\n%s", want, out)
			}
		}
	})

	t.Run("ui --open opens the URL it prints", func(t *testing.T) {
		testUIOpens(t, kubeconfig)
	})
}

// kubeconfigInNamespace writes a copy of the kubeconfig whose context's namespace is
// ns, as a tenant's kubeconfig usually is, and returns its path.
func kubeconfigInNamespace(t *testing.T, path, ns string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Contexts[cfg.CurrentContext].Namespace = ns
	out := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// waitAdmitted waits until the manager has removed the gate of pod ns/name.
func waitAdmitted(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	testbed.Poll(t, pollTimeout, "pod "+ns+"/"+name+" to be admitted", func(context.Context) (bool, error) {
		var p corev1.Pod
		err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &p)
		return err == nil && len(p.Spec.SchedulingGates) == 0, testbed.NotYet(err)
	})
}

// waitStatus waits until Budget ns/ns's status says cpu used and gated pods.
func waitStatus(t *testing.T, c client.Client, ns, cpu string, gated int32) {
	t.Helper()
	testbed.Poll(t, pollTimeout, fmt.Sprintf("Budget %s/%s to use %s CPU with %d gated", ns, ns, cpu, gated), func(context.Context) (bool, error) {
		var b v1alpha1.Budget
		err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: ns}, &b)
		used := b.Status.Used[corev1.ResourceRequestsCPU]
		return err == nil && used.Cmp(resource.MustParse(cpu)) == 0 && b.Status.GatedPods == gated, testbed.NotYet(err)
	})
}
