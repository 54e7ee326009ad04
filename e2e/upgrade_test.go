//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/test/localcluster"
	"github.com/quotagate/quotagate/test/localinstall"
)

// keepCertManager keeps the previous release's certificates from cert-manager (0.2.0's
// default; docs/upgrading.md): switching to quotagate's own is a change of CA, with its
// window of failed creates (docs/certificates.md), which these tests do not measure.
var keepCertManager = map[string]any{"certManager": map[string]any{"enabled": true}}

const (
	upgradeNS      = "upgrade-team"
	upgradeChurnNS = "upgrade-churn"
	upgradeBudget  = "team"
	upgradeHard    = 3 // pods the Budget admits before the upgrade
	upgradePods    = 5 // pods created: upgradeHard admitted, the rest gated
)

// TestUpgradeFromPreviousRelease is `helm upgrade` from the previous release
// (hack/upgrade-from: its packaged chart and its binaries) to the working tree's packaged
// chart and binaries, with a full Budget, admitted pods and gated pods, and pods created
// through the webhook all along. The upgrade keeps the Budgets, keeps gated pods gated
// (none released early, none stranded), leaves admitted pods alone but for recording the
// labels they were admitted with, keeps the webhook's certificates and caBundle, and
// fails no pod create; afterwards the release and the manager say they are the new
// version.
func TestUpgradeFromPreviousRelease(t *testing.T) {
	began := time.Now()
	ctx := logr.NewContext(t.Context(), testr.NewWithOptions(t, testr.Options{Verbosity: 1}))
	wd, err := os.Getwd()
	fatalIf(t, err, "finding the repository")
	root, err := localcluster.RepoRoot(wd)
	fatalIf(t, err, "finding the repository")
	work := t.TempDir()
	prev, next := versions(t, root, previousRef(t, root), work)
	t.Logf("Built %s (chart %s) and %s (chart %s) in %v", prev.appVersion, prev.chartVersion,
		next.appVersion, next.chartVersion, time.Since(began).Round(time.Millisecond))

	// The churn during the upgrade creates pods for as long as the upgrade takes (429 and
	// 454 pods in two 18 s upgrades on a loaded 2-core machine): with the default 4 x 110
	// pod slots the last Budget pods admitted at the end had no node left and never ran.
	// Room for the churn keeps the test about quotagate, not about node capacity.
	cluster := localcluster.StartForTest(t, localcluster.Options{NodeMaxPods: 1000})
	inst, err := localinstall.Install(ctx, cluster, localinstall.Options{ChartPath: prev.chart, BinDir: prev.binDir, RepoRoot: root})
	fatalIf(t, err, "installing "+filepath.Base(prev.chart))
	cleanUpInstall(t, inst)
	checkRelease(t, inst, prev, 1)
	e := envFor(t, cluster, inst)
	t.Logf("Control plane up and %s installed at %v", filepath.Base(prev.chart), time.Since(began).Round(time.Millisecond))

	// A full Budget: upgradeHard pods admitted, the rest gated.
	fatalIf(t, e.c.Create(ctx, enabledNamespace(upgradeNS)), "creating namespace")
	fatalIf(t, e.c.Create(ctx, enabledNamespace(upgradeChurnNS)), "creating namespace")
	fatalIf(t, e.c.Create(ctx, churnBudget(upgradeChurnNS)), "creating the Budget of "+upgradeChurnNS)
	fatalIf(t, e.c.Create(ctx, budget(upgradeNS, upgradeBudget, v1alpha1.StateOpen, corev1.ResourceList{
		corev1.ResourcePods: *resource.NewQuantity(upgradeHard, resource.DecimalSI),
	})), "creating Budget")
	for n := range upgradePods {
		fatalIf(t, e.c.Create(ctx, longPod(upgradeNS, fmt.Sprintf("pod-%d", n))), "creating a pod")
	}
	var admitted, gated []corev1.Pod
	waitFor(t, "the Budget to be full", time.Minute, func() (bool, string) {
		admitted, gated = admittedAndGated(t, e, upgradeNS)
		return len(admitted) == upgradeHard && len(gated) == upgradePods-upgradeHard,
			fmt.Sprintf("%d admitted and running, %d gated", len(admitted), len(gated))
	})
	budgets := budgetSpecs(t, e)
	certs := webhookCerts(t, e, inst)

	// Pods are created through the webhook before, during and after the upgrade; the
	// watcher notes any gated pod that loses its gate.
	released := watchReleases(ctx, t, e, upgradeNS, gated)
	stream := startPodStream(ctx, e.cs, upgradeChurnNS, "upgrade")
	defer stream.Stop()
	waitFor(t, "pods created through the old webhook", time.Minute, func() (bool, string) {
		created, _, _, _ := stream.counts()
		return created >= 10, fmt.Sprintf("%d created", created)
	})
	upgradeBegan := time.Now()
	// The upgrade keeps the webhook: this test follows its certificates and pods across
	// the upgrade. With admission.mode auto a 1.36+ cluster switches to the policy:
	// TestUpgradeFromWebhookToPolicy.
	keepWebhook := map[string]any{"admission": map[string]any{"mode": localinstall.AdmissionWebhook}}
	maps.Copy(keepWebhook, keepCertManager)
	fatalIf(t, inst.UpgradeTo(ctx, next.chart, next.binDir, keepWebhook), "helm upgrade to "+filepath.Base(next.chart))
	t.Logf("Upgraded to %s in %v", filepath.Base(next.chart), time.Since(upgradeBegan).Round(time.Millisecond))
	createdAtUpgrade, _, _, _ := stream.counts()
	// The new manager leads once it admits the new churn pods.
	waitFor(t, "pods created through the new webhook to be admitted", time.Minute, func() (bool, string) {
		created, _, _, _ := stream.counts()
		a, g := admittedAndGated(t, e, upgradeChurnNS)
		return created >= createdAtUpgrade+10 && len(a) > createdAtUpgrade, fmt.Sprintf("%d created, %d admitted, %d gated", created, len(a), len(g))
	})
	stream.Stop()
	stream.checkAllGatedBut(t, "the upgrade", previousWebhookStop(inst, prev))

	checkRelease(t, inst, next, 2)
	checkVersion(t, e, inst, next.appVersion)
	if diff := cmp.Diff(budgets, budgetSpecs(t, e)); diff != "" {
		t.Errorf("The upgrade changed the Budgets (-before +after):\n%s", diff)
	}
	checkCertsKept(t, e, inst, certs, webhookCerts(t, e, inst))
	// The one change to an admitted pod: the new manager records the labels the previous
	// release admitted it with (docs/upgrading.md, "A charge is fixed at admission"), one
	// patch per pod, soon after it leads.
	want := recordedLabels(podFacts(admitted))
	var nowAdmitted, nowGated []corev1.Pod
	waitFor(t, "the admitted pods' labels to be recorded", time.Minute, func() (bool, string) {
		nowAdmitted, nowGated = admittedAndGated(t, e, upgradeNS)
		diff := cmp.Diff(want, podFacts(nowAdmitted))
		return diff == "", "the admitted pods (-want +got):\n" + diff
	})
	if diff := cmp.Diff(podFacts(gated), podFacts(nowGated)); diff != "" {
		t.Errorf("The upgrade changed the gated pods (-before +after):\n%s", diff)
	}
	if r := released(); len(r) > 0 {
		t.Errorf("Gated pods were released while the Budget was full: %v", r)
	}

	// Nothing is stranded: with room in the Budget, the new manager admits every pod.
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"hard":{"pods":"%d"}}}`, upgradePods)))
	fatalIf(t, e.c.Patch(ctx, &v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: upgradeNS, Name: upgradeBudget}}, patch), "raising the Budget")
	waitFor(t, "every pod to be admitted once the Budget has room", time.Minute, func() (bool, string) {
		pods := listPods(t, e, upgradeNS)
		a, g := splitAdmitted(pods)
		return len(a) == upgradePods, fmt.Sprintf("%d admitted and running, %d gated, %d ungated and not running yet", len(a), len(g), len(pods)-len(a)-len(g))
	})
	t.Logf("Done in %v", time.Since(began).Round(time.Millisecond))
}

// checkRelease checks what `helm status` says: the version's chart, deployed, at
// revision.
func checkRelease(t *testing.T, inst *localinstall.Installation, v version, revision int) {
	t.Helper()
	got, err := inst.ReleaseStatus()
	fatalIf(t, err, "reading the release")
	want := localinstall.ReleaseInfo{Revision: revision, Status: "deployed", Chart: "quotagate", ChartVersion: v.chartVersion, AppVersion: v.appVersion}
	if got != want {
		t.Errorf("helm status: %+v, want %+v", got, want)
	}
}

// checkVersion checks that the running manager and webhook are version v: by
// quotagate_build_info, and by `manager version` of the binary the manager runs.
func checkVersion(t *testing.T, e env, inst *localinstall.Installation, v string) {
	t.Helper()
	ctx := t.Context()
	out, err := exec.CommandContext(ctx, inst.ManagerBinary(), "version").CombinedOutput()
	fatalIf(t, err, "manager version")
	if !strings.HasPrefix(string(out), v+" ") {
		t.Errorf("manager version: %q, want %s", out, v)
	}
	fatalIf(t, e.c.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-reads-quotagate"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: inst.Release() + "-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: inst.Namespace(), Name: "prometheus"}},
	}), "binding the metrics-reader ClusterRole")
	prom, err := e.cluster.ServiceAccountConfig(ctx, inst.Namespace(), "prometheus", 0)
	fatalIf(t, err, "getting prometheus's credentials")
	for _, target := range []struct{ name, url, token string }{
		{"manager", inst.ManagerMetricsURL(), prom.BearerToken},
		{"webhook", inst.WebhookMetricsURL(), ""},
	} {
		series := fmt.Sprintf("quotagate_build_info{version=%q}", v)
		waitFor(t, "the "+target.name+" to report "+v, 30*time.Second, func() (bool, string) {
			code, samples, err := scrape(ctx, target.url, target.token)
			for s, val := range samples {
				if strings.HasPrefix(s, "quotagate_build_info{") && strings.Contains(s, fmt.Sprintf("version=%q", v)) && val == "1" {
					return true, ""
				}
			}
			return false, fmt.Sprintf("HTTP %d, %v: no %s 1", code, err, series)
		})
	}
}

// longPod is a small bare pod that kwok runs until it is deleted.
func longPod(namespace, name string) *corev1.Pod {
	pod := streamPod(namespace, name)
	pod.Labels = map[string]string{"app": "upgrade"}
	pod.Annotations = nil
	return pod
}

// admittedAndGated are the pods of namespace that are admitted (no gate, Running) and
// those that carry the gate.
func admittedAndGated(t *testing.T, e env, namespace string) (admitted, gated []corev1.Pod) {
	t.Helper()
	return splitAdmitted(listPods(t, e, namespace))
}

// splitAdmitted picks out of pods the gated ones and the admitted ones that run (or
// ran); the rest are ungated and not running yet.
func splitAdmitted(pods []corev1.Pod) (admitted, gated []corev1.Pod) {
	for _, pod := range pods {
		switch {
		case hasGate(&pod):
			gated = append(gated, pod)
		case pod.Status.Phase == corev1.PodRunning || pod.Status.Phase == corev1.PodSucceeded:
			admitted = append(admitted, pod)
		}
	}
	return admitted, gated
}

// podFact is what the upgrade must leave as it was on a pod.
type podFact struct {
	UID         types.UID
	Node        string
	Phase       corev1.PodPhase
	Gates       []corev1.PodSchedulingGate
	Labels      map[string]string
	Annotations map[string]string
}

func podFacts(pods []corev1.Pod) map[string]podFact {
	out := map[string]podFact{}
	for _, p := range pods {
		out[p.Name] = podFact{UID: p.UID, Node: p.Spec.NodeName, Phase: p.Status.Phase, Gates: p.Spec.SchedulingGates, Labels: p.Labels, Annotations: p.Annotations}
	}
	return out
}

// recordedLabels is facts with what the new manager adds to a pod an earlier release
// admitted: its labels, in its admitted-labels annotation.
func recordedLabels(facts map[string]podFact) map[string]podFact {
	out := map[string]podFact{}
	for name, f := range facts {
		annotations := maps.Clone(f.Annotations)
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[v1alpha1.AdmittedLabelsAnnotation] = quota.AdmittedLabelsText(f.Labels)
		f.Annotations = annotations
		out[name] = f
	}
	return out
}

// budgetSpecs are the specs of every Budget, by namespace/name.
func budgetSpecs(t *testing.T, e env) map[string]v1alpha1.BudgetSpec {
	t.Helper()
	var list v1alpha1.BudgetList
	fatalIf(t, e.c.List(t.Context(), &list), "listing Budgets")
	out := map[string]v1alpha1.BudgetSpec{}
	for _, b := range list.Items {
		out[b.Namespace+"/"+b.Name] = b.Spec
	}
	return out
}

// watchReleases watches namespace and returns a function that lists the pods of gated
// that have been seen without the gate since.
func watchReleases(ctx context.Context, t *testing.T, e env, namespace string, gated []corev1.Pod) func() []string {
	t.Helper()
	watched := map[string]bool{}
	for _, p := range gated {
		watched[p.Name] = true
	}
	w, err := e.cs.CoreV1().Pods(namespace).Watch(ctx, metav1.ListOptions{})
	fatalIf(t, err, "watching pods")
	t.Cleanup(w.Stop)
	var mu sync.Mutex
	var released []string
	go func() {
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Error || !watched[pod.Name] || hasGate(pod) {
				continue
			}
			mu.Lock()
			released = append(released, fmt.Sprintf("%s at %s", pod.Name, time.Now().Format(time.StampMilli)))
			mu.Unlock()
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), released...)
	}
}
