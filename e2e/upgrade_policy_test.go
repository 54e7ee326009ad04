//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/test/localcluster"
	"github.com/quotagate/quotagate/test/localinstall"
)

// TestUpgradeFromWebhookToPolicy is `helm upgrade` with default values but
// certManager.enabled=true (0.2.0's default, kept as docs/upgrading.md says) from the
// previous release (hack/upgrade-from), which gated pods with its webhook, on a cluster that serves
// MutatingAdmissionPolicy (this control plane, 1.37): admission.mode auto moves the
// release to the policy in two revisions. The first upgrade switches: the policy and its
// binding are added and the webhook kept beside them (the API server loads the one and
// drops the other through informers nothing orders, so removing the webhook at once lets
// pods through ungated: 12 of 194 in one run). The next upgrade, the binding in place,
// removes the MutatingWebhookConfiguration, the webhook's Deployment and Service. Every
// pod created before, during and between both upgrades came back gated (no window in
// which a new pod of an opted-in namespace escapes the gate), gated pods stay gated until
// their Budget has room, and the new manager admits them then.
func TestUpgradeFromWebhookToPolicy(t *testing.T) {
	began := time.Now()
	ctx := logr.NewContext(t.Context(), testr.NewWithOptions(t, testr.Options{Verbosity: 1}))
	wd, err := os.Getwd()
	fatalIf(t, err, "finding the repository")
	root, err := localcluster.RepoRoot(wd)
	fatalIf(t, err, "finding the repository")
	prev, next := versions(t, root, previousRef(t, root), t.TempDir())
	t.Logf("Built %s (chart %s) and %s (chart %s) in %v", prev.appVersion, prev.chartVersion,
		next.appVersion, next.chartVersion, time.Since(began).Round(time.Millisecond))

	cluster := localcluster.StartForTest(t, localcluster.Options{NodeMaxPods: 1000})
	inst, err := localinstall.Install(ctx, cluster, localinstall.Options{ChartPath: prev.chart, BinDir: prev.binDir, RepoRoot: root})
	fatalIf(t, err, "installing "+filepath.Base(prev.chart))
	cleanUpInstall(t, inst)
	e := envFor(t, cluster, inst)
	if inst.AdmissionMode() != localinstall.AdmissionWebhook {
		t.Fatalf("%s installed admission mode %q, want the webhook", filepath.Base(prev.chart), inst.AdmissionMode())
	}
	webhookName := inst.Release() + "-webhook"
	_, err = e.cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, inst.WebhookConfiguration(), metav1.GetOptions{})
	fatalIf(t, err, "reading the previous release's webhook configuration")

	// A full Budget: one pod admitted, one gated.
	fatalIf(t, e.c.Create(ctx, enabledNamespace(upgradeNS)), "creating namespace")
	fatalIf(t, e.c.Create(ctx, enabledNamespace(upgradeChurnNS)), "creating namespace")
	fatalIf(t, e.c.Create(ctx, churnBudget(upgradeChurnNS)), "creating the Budget of "+upgradeChurnNS)
	fatalIf(t, e.c.Create(ctx, budget(upgradeNS, upgradeBudget, v1alpha1.StateOpen, corev1.ResourceList{
		corev1.ResourcePods: resource.MustParse("1"),
	})), "creating Budget")
	for n := range 2 {
		fatalIf(t, e.c.Create(ctx, longPod(upgradeNS, fmt.Sprintf("pod-%d", n))), "creating a pod")
	}
	var gated []corev1.Pod
	waitFor(t, "the Budget to be full", time.Minute, func() (bool, string) {
		var admitted []corev1.Pod
		admitted, gated = admittedAndGated(t, e, upgradeNS)
		return len(admitted) == 1 && len(gated) == 1, fmt.Sprintf("%d admitted and running, %d gated", len(admitted), len(gated))
	})
	released := watchReleases(ctx, t, e, upgradeNS, gated)

	// Pods are created all along: through the webhook, across the switch, then through
	// the policy.
	stream := startPodStream(ctx, e.cs, upgradeChurnNS, "switch")
	defer stream.Stop()
	waitFor(t, "pods created through the webhook", time.Minute, func() (bool, string) {
		created, _, _, _ := stream.counts()
		return created >= 10, fmt.Sprintf("%d created", created)
	})
	upgradeBegan := time.Now()
	fatalIf(t, inst.UpgradeTo(ctx, next.chart, next.binDir, keepCertManager), "helm upgrade to "+filepath.Base(next.chart)+" with default values")
	t.Logf("Upgraded to %s in %v", filepath.Base(next.chart), time.Since(upgradeBegan).Round(time.Millisecond))

	// Right after the upgrade: a pod in the full Budget's namespace, and one in a
	// namespace opted in only now, come back gated.
	right, err := e.cs.CoreV1().Pods(upgradeNS).Create(ctx, longPod(upgradeNS, "right-after"), metav1.CreateOptions{})
	fatalIf(t, err, "creating a pod right after the upgrade")
	if !hasGate(right) {
		t.Errorf("Pod %s created right after the upgrade came back without the gate: %v", right.Name, right.Spec.SchedulingGates)
	}
	// The first upgrade switches: the policy in place, the webhook kept beside it.
	if inst.AdmissionMode() != localinstall.AdmissionSwitching {
		t.Errorf("Admission mode after the first upgrade: %q, want switching (policy and webhook)", inst.AdmissionMode())
	}
	policy := inst.Release() + "-gate"
	kept := map[string]error{}
	_, kept["MutatingAdmissionPolicyBinding "+policy] = e.cs.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Get(ctx, policy, metav1.GetOptions{})
	_, kept["MutatingWebhookConfiguration "+webhookName] = e.cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, webhookName, metav1.GetOptions{})
	_, kept["Deployment "+webhookName] = e.cs.AppsV1().Deployments(inst.Namespace()).Get(ctx, webhookName, metav1.GetOptions{})
	for what, err := range kept {
		if err != nil {
			t.Errorf("%s after the first upgrade: %v, want it in place", what, err)
		}
	}
	createdAtSwitch, _, _, _ := stream.counts()
	waitFor(t, "pods created while both gate", time.Minute, func() (bool, string) {
		created, _, _, _ := stream.counts()
		return created >= createdAtSwitch+10, fmt.Sprintf("%d created", created)
	})
	secondBegan := time.Now()
	fatalIf(t, inst.UpgradeTo(ctx, next.chart, next.binDir, nil), "the second helm upgrade to "+filepath.Base(next.chart))
	t.Logf("Upgraded again, removing the webhook, in %v", time.Since(secondBegan).Round(time.Millisecond))

	const laterNS = "opted-in-after"
	fatalIf(t, e.c.Create(ctx, enabledNamespace(laterNS)), "creating namespace")
	waitFor(t, "the new namespace's default ServiceAccount", time.Minute, func() (bool, string) {
		_, err := e.cs.CoreV1().ServiceAccounts(laterNS).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	later, err := e.cs.CoreV1().Pods(laterNS).Create(ctx, longPod(laterNS, "new"), metav1.CreateOptions{})
	fatalIf(t, err, "creating a pod in a namespace opted in after the upgrade")
	if !hasGate(later) {
		t.Errorf("Pod %s/%s came back without the gate: %v", laterNS, later.Name, later.Spec.SchedulingGates)
	}

	createdAtUpgrade, _, _, _ := stream.counts()
	waitFor(t, "pods created through the policy to be admitted by the new manager", time.Minute, func() (bool, string) {
		created, _, _, _ := stream.counts()
		a, g := admittedAndGated(t, e, upgradeChurnNS)
		return created >= createdAtUpgrade+10 && len(a) > createdAtUpgrade, fmt.Sprintf("%d created, %d admitted, %d gated", created, len(a), len(g))
	})
	stream.Stop()
	stream.checkAllGatedBut(t, "the switch from the webhook to the policy", previousWebhookStop(inst, prev))

	// The release is the policy's now: the policy and its binding in place, the
	// webhook's configuration, Deployment and Service gone.
	checkRelease(t, inst, next, 3)
	if inst.AdmissionMode() != localinstall.AdmissionPolicy {
		t.Errorf("Admission mode after the second upgrade: %q, want the policy", inst.AdmissionMode())
	}
	if _, err := e.cs.AdmissionregistrationV1().MutatingAdmissionPolicies().Get(ctx, policy, metav1.GetOptions{}); err != nil {
		t.Errorf("MutatingAdmissionPolicy %s: %v", policy, err)
	}
	if _, err := e.cs.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Get(ctx, policy, metav1.GetOptions{}); err != nil {
		t.Errorf("MutatingAdmissionPolicyBinding %s: %v", policy, err)
	}
	gone := map[string]error{}
	_, gone["MutatingWebhookConfiguration "+webhookName] = e.cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, webhookName, metav1.GetOptions{})
	_, gone["Deployment "+webhookName] = e.cs.AppsV1().Deployments(inst.Namespace()).Get(ctx, webhookName, metav1.GetOptions{})
	_, gone["Service "+webhookName] = e.cs.CoreV1().Services(inst.Namespace()).Get(ctx, webhookName, metav1.GetOptions{})
	for what, err := range gone {
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s after the upgrade: %v, want it gone", what, err)
		}
	}

	// The gated pods stayed gated, and the new manager admits them once there is room.
	_, nowGated := admittedAndGated(t, e, upgradeNS)
	if diff := cmp.Diff([]string{gated[0].Name, "right-after"}, podNames(nowGated)); diff != "" {
		t.Errorf("Gated pods after the upgrade (-want +got):\n%s", diff)
	}
	if r := released(); len(r) > 0 {
		t.Errorf("Gated pods were released while the Budget was full: %v", r)
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"hard":{"pods":"3"}}}`))
	fatalIf(t, e.c.Patch(ctx, &v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: upgradeNS, Name: upgradeBudget}}, patch), "raising the Budget")
	waitFor(t, "every pod to be admitted once the Budget has room", time.Minute, func() (bool, string) {
		a, g := admittedAndGated(t, e, upgradeNS)
		return len(a) == 3, fmt.Sprintf("%d admitted and running, %d gated", len(a), len(g))
	})
	t.Logf("Done in %v", time.Since(began).Round(time.Millisecond))
}

func podNames(pods []corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}
