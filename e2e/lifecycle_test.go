//go:build e2e

package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/test/localinstall"
	"github.com/quotagate/quotagate/test/supervise"
)

// testUpgrade: `helm upgrade` (new manager arguments) restarts the manager, which
// finds the gated pods and keeps them gated, and the webhook keeps gating new ones.
func testUpgrade(t *testing.T, e env, _ *podWatcher) {
	ctx := t.Context()
	setBudgetState(t, e, v1alpha1.StateClosed)
	waitFor(t, "the budget to be Closed", time.Minute, func() (bool, string) { return budgetRow(t, e, "Closed", "0", "0") })
	for n := range 3 {
		fatalIf(t, e.c.Create(ctx, job(teamNS, jobSpec{name: fmt.Sprintf("queued-%d", n), cpu: "1", priority: "low", runFor: time.Second})), "creating Job")
	}
	waitFor(t, "the new Jobs to be queued", time.Minute, func() (bool, string) { return budgetRow(t, e, "Closed", "0", "3") })

	fatalIf(t, e.inst.Upgrade(ctx, map[string]any{"manager": map[string]any{"workers": 2}}), "helm upgrade")
	if !slices.Contains(e.inst.ManagerArgs(), "--workers=2") {
		t.Errorf("manager runs with %v after the upgrade, want --workers=2", e.inst.ManagerArgs())
	}
	// The restarted manager has synced and queued the gated pods...
	promCfg, err := e.cluster.ServiceAccountConfig(ctx, e.inst.Namespace(), "prometheus", 0)
	fatalIf(t, err, "getting prometheus's credentials")
	waitFor(t, "the upgraded manager to queue the gated pods", time.Minute, func() (bool, string) {
		_, s, err := scrape(ctx, e.inst.ManagerMetricsURL(), promCfg.BearerToken)
		got, _ := sumOf(s, "quotagate_queue_incoming_pods_total")
		return got >= 3, fmt.Sprintf("incoming %v, err %v", got, err)
	})
	// ...and kept them gated, and the upgraded webhook configuration still gates new pods
	// (its caBundle survived Helm's apply).
	fatalIf(t, e.c.Create(ctx, job(teamNS, jobSpec{name: "after-upgrade", cpu: "1", priority: "low", runFor: time.Second})), "creating Job")
	waitFor(t, "the budget to show four queued pods", time.Minute, func() (bool, string) { return budgetRow(t, e, "Closed", "0", "4") })
	for _, pod := range listPods(t, e, teamNS) {
		if pod.Status.Phase != corev1.PodSucceeded && !hasGate(&pod) {
			t.Errorf("pod %s is no longer gated after the upgrade", pod.Name)
		}
	}
}

// The uninstall runs while pods are created all the time in an opted-in namespace: no
// create fails (the hook deletes the webhook configuration before Helm deletes the
// webhook), and afterwards no pod anywhere carries the gate, including the pods the
// webhook gated while the hook was at work.
func testUninstall(t *testing.T, e env, _ *podWatcher) {
	ctx := t.Context()
	s := startPodStream(ctx, e.cs, streamNS, "uninstall")
	defer s.Stop()
	waitFor(t, "pods gated on creation before the uninstall", time.Minute, func() (bool, string) {
		_, gated, _, _ := s.counts()
		return gated >= 5, fmt.Sprintf("%d gated", gated)
	})
	fatalIf(t, e.inst.Uninstall(ctx), "helm uninstall")
	_, _, ungatedAtUninstall, _ := s.counts()
	waitFor(t, "pods created after the uninstall", time.Minute, func() (bool, string) {
		_, _, ungated, _ := s.counts()
		return ungated >= ungatedAtUninstall+5, fmt.Sprintf("%d created ungated", ungated)
	})
	s.Stop()
	created, gated, ungated, failures := s.counts()
	t.Logf("%d pods created during the uninstall: %d gated by the admission step, %d after it was gone, %d failed", created, gated, ungated, len(failures))
	for _, err := range failures {
		t.Errorf("a create failed during the uninstall: %v", err)
	}

	pods, err := e.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	fatalIf(t, err, "listing pods")
	for _, pod := range pods.Items {
		if hasGate(&pod) {
			t.Errorf("pod %s/%s is still gated after the uninstall", pod.Namespace, pod.Name)
		}
	}
	hook := supervise.TailFile(e.inst.LogPaths()[2], 20)
	m := regexp.MustCompile(`released (\d+) pods`).FindStringSubmatch(hook)
	if m == nil {
		t.Errorf("the pre-delete hook's log does not say how many pods it released:\n%s", hook)
	} else if n, _ := strconv.Atoi(m[1]); n < 4 {
		t.Errorf("the pre-delete hook released %d pods, want at least the 4 queued in %s:\n%s", n, teamNS, hook)
	}
	takeOut := "--webhook-configuration=" + e.inst.WebhookConfiguration()
	if e.inst.AdmissionMode() == localinstall.AdmissionPolicy {
		takeOut = "--admission-policy-binding=" + e.inst.Release() + "-gate"
	}
	if !strings.Contains(hook, takeOut) {
		t.Errorf("the pre-delete hook did not take out the admission step (%s):\n%s", takeOut, hook)
	}
	if !strings.Contains(hook, " as "+e.inst.ManagerServiceAccount()+":") {
		t.Errorf("the pre-delete hook did not run as the manager's ServiceAccount %s:\n%s", e.inst.ManagerServiceAccount(), hook)
	}
	waitFor(t, "the released Jobs to complete", drainWait, func() (bool, string) {
		return jobsComplete(t, e, teamNS, len(burst())+4)
	})
	hooks, err := e.cs.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	fatalIf(t, err, "listing webhook configurations")
	if len(hooks.Items) != 0 {
		t.Errorf("%d MutatingWebhookConfigurations left after the uninstall", len(hooks.Items))
	}
	policies, err := e.cs.AdmissionregistrationV1().MutatingAdmissionPolicies().List(ctx, metav1.ListOptions{})
	fatalIf(t, err, "listing admission policies")
	if len(policies.Items) != 0 {
		t.Errorf("%d MutatingAdmissionPolicies left after the uninstall", len(policies.Items))
	}
	fatalIf(t, e.c.Create(ctx, job(teamNS, jobSpec{name: "after-uninstall", cpu: "1", priority: "low", runFor: time.Second})), "creating Job")
	waitFor(t, "a new pod to run ungated", time.Minute, func() (bool, string) {
		return jobsComplete(t, e, teamNS, len(burst())+5)
	})
}
