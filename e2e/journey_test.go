//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/test/localinstall"
)

const (
	teamNS    = "team-a"
	budgetCPU = "4"
	budgetPod = 10
	drainWait = 3 * time.Minute
)

// TestUserJourney follows README.md's user ("Quick start"): install the chart, opt a
// namespace in, give it a Budget, submit a burst of Jobs, watch them queue and drain
// within the budget, then upgrade and uninstall quotagate without stranding a pod.
//
// It runs with the webhook in both certificate modes: quotagate's own (the chart's
// default, the manager's rotator, for real, with no cert-manager in the cluster) and
// cert-manager's (emulated, see test/localinstall); and with the admission policy, which
// auto picks here. The renewal step is cert-manager's; TestSelfManagedCertificates renews
// and rotates the self-managed one.
func TestUserJourney(t *testing.T) {
	modes := []struct {
		name   string
		values map[string]any
	}{
		{"default install", nil},
		{"cert-manager", map[string]any{"certManager": map[string]any{"enabled": true}}},
		// The chart's default admission mode, auto, on a control plane that serves
		// MutatingAdmissionPolicy: the API server gates, no webhook runs.
		{"admission policy", map[string]any{"admission": map[string]any{"mode": "auto"}}},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) { journey(t, localinstall.Options{Values: m.values}) })
	}
}

// renewalStep renews the serving certificate through cert-manager's Certificate.
const renewalStep = "the serving certificate renews with no failed create"

// reclaimStep: a team takes back the quota it lent (journey_reclaim_test.go).
const reclaimStep = "a team takes back what it lent, through a PodDisruptionBudget"

// flavorsStep: quota per kind of node (journey_flavors_test.go).
const flavorsStep = "pods fill the preferred flavor, fall back to the next, and run on their flavor's nodes"

func journey(t *testing.T, opts localinstall.Options) {
	began := time.Now()
	e := setUpWith(t, opts)
	selfManaged := e.inst.SelfManagedCerts()
	if _, chosen := opts.Values["certManager"]; !chosen && !selfManaged {
		t.Fatalf("the default install uses cert-manager, want quotagate's own certificate")
	}
	policy := e.inst.AdmissionMode() == localinstall.AdmissionPolicy
	if auto := opts.Values["admission"] != nil; auto != policy {
		t.Fatalf("admission mode %q installed with values %v, want policy exactly when auto", e.inst.AdmissionMode(), opts.Values)
	}
	t.Logf("Control plane up and quotagate installed (admission mode %s) in %v", e.inst.AdmissionMode(), time.Since(began).Round(time.Millisecond))
	ctx := t.Context()

	fatalIf(t, e.c.Create(ctx, enabledNamespace(teamNS)), "creating namespace")
	// The renewal and uninstall steps stream pods into an opted-in namespace of their own.
	fatalIf(t, e.c.Create(ctx, enabledNamespace(streamNS)), "creating namespace "+streamNS)
	fatalIf(t, e.c.Create(ctx, churnBudget(streamNS)), "creating the Budget of "+streamNS)
	fatalIf(t, e.c.Create(ctx, priorityClass("high", 1000)), "creating PriorityClass")
	fatalIf(t, e.c.Create(ctx, priorityClass("low", 10)), "creating PriorityClass")
	// Closed first, so that the whole burst is queued before anything is admitted and
	// the admission order can be checked.
	fatalIf(t, e.c.Create(ctx, budget(teamNS, "team-a", v1alpha1.StateClosed, corev1.ResourceList{
		corev1.ResourceRequestsCPU: resource.MustParse(budgetCPU),
		corev1.ResourcePods:        *resource.NewQuantity(budgetPod, resource.DecimalSI),
	})), "creating Budget")
	w := watchPods(ctx, t, e.cs, teamNS, budgetCPU, budgetPod)

	specs := burst()
	for _, s := range specs {
		fatalIf(t, e.c.Create(ctx, job(teamNS, s)), "creating Job "+s.name)
	}

	steps := []struct {
		name string
		run  func(t *testing.T, e env, w *podWatcher)
	}{
		{"the admission step gates every new pod", testGatedOnCreation},
		{"a user cannot remove the gate", testGuard},
		{"a tenant sees the queue with their own credentials", testTenantSeesQueue},
		{"a tenant reads windows but cannot open one", testTenantCannotOpenWindows},
		{"the burst drains within the budget, by priority", testDrain},
		{"the manager's metrics", testMetrics},
		{flavorsStep, testFlavors},
		{reclaimStep, testReclaim},
		{renewalStep, testCertificateRenewal},
		{"helm upgrade keeps queued pods queued", testUpgrade},
		{"helm uninstall releases every gated pod", testUninstall},
	}
	for _, s := range steps {
		if s.name == renewalStep && selfManaged {
			continue // cert-manager's renewal
		}
		if (!selfManaged || policy) && (s.name == reclaimStep || s.name == flavorsStep) {
			continue // shown once, with the default install
		}
		if !t.Run(s.name, func(t *testing.T) { s.run(t, e, w) }) {
			t.FailNow()
		}
	}
	t.Logf("The journey took %v", time.Since(began).Round(time.Millisecond))
}

func testGatedOnCreation(t *testing.T, e env, _ *podWatcher) {
	ctx := t.Context()
	want := len(burst())
	waitFor(t, "every Job's pod to exist", time.Minute, func() (bool, string) {
		pods := listPods(t, e, teamNS)
		return len(pods) == want, fmt.Sprintf("%d pods", len(pods))
	})
	for _, pod := range listPods(t, e, teamNS) {
		var gates []string
		for _, g := range pod.Spec.SchedulingGates {
			gates = append(gates, g.Name)
		}
		if diff := cmp.Diff([]string{v1alpha1.SchedulingGate}, gates); diff != "" {
			t.Errorf("pod %s scheduling gates (-want +got):\n%s", pod.Name, diff)
		}
	}
	waitFor(t, "kube-scheduler to report every pod SchedulingGated", time.Minute, func() (bool, string) {
		for _, pod := range listPods(t, e, teamNS) {
			if r := scheduledReason(&pod); r != corev1.PodReasonSchedulingGated {
				return false, fmt.Sprintf("pod %s: PodScheduled reason %q", pod.Name, r)
			}
		}
		rows, err := table(ctx, e.admin, "/api/v1/namespaces/"+teamNS+"/pods")
		if err != nil {
			return false, err.Error()
		}
		for name, row := range rows {
			if row["Status"] != "SchedulingGated" {
				return false, fmt.Sprintf("kubectl get pods shows %s %s", name, row["Status"])
			}
		}
		return true, ""
	})
	waitFor(t, "kubectl get budgets to show the queue", time.Minute, func() (bool, string) {
		return budgetRow(t, e, "Closed", "0", fmt.Sprint(want))
	})
	waitFor(t, "every pod to have a Waiting event saying the budget is closed", time.Minute, func() (bool, string) {
		for _, pod := range listPods(t, e, teamNS) {
			if !hasEvent(t, e, &pod, "BudgetClosed") {
				return false, "no BudgetClosed event on pod " + pod.Name
			}
		}
		return true, ""
	})
}

func testDrain(t *testing.T, e env, w *podWatcher) {
	ctx := t.Context()
	setBudgetState(t, e, v1alpha1.StateOpen)
	specs := burst()
	waitFor(t, "every Job to complete", drainWait, func() (bool, string) {
		return jobsComplete(t, e, teamNS, len(specs))
	})
	states, ungated, peakCPU, peakPods, violations := w.snapshot()
	for _, v := range violations {
		t.Errorf("Budget exceeded %s", v)
	}
	if peakCPU.Cmp(resource.MustParse(budgetCPU)) != 0 {
		t.Errorf("peak admitted CPU %s, want the whole budget %s used at some point", peakCPU.String(), budgetCPU)
	}
	t.Logf("Peak admitted: %s CPU in %d pods (hard %s CPU, %d pods)", peakCPU.String(), peakPods, budgetCPU, budgetPod)

	// The four high-priority Jobs were created last but are admitted first.
	if len(ungated) < 4 {
		t.Fatalf("only %d pods seen ungated", len(ungated))
	}
	var first []string
	for _, name := range ungated[:4] {
		first = append(first, strings.SplitN(name, "-", 2)[0])
	}
	if diff := cmp.Diff([]string{"high", "high", "high", "high"}, first); diff != "" {
		t.Errorf("first four admitted %v, want the high-priority ones (-want +got):\n%s", ungated[:4], diff)
	}

	// Every pod went SchedulingGated -> (Pending) -> Running -> Succeeded.
	order := []string{"SchedulingGated", "Pending", "Running", "Succeeded"}
	for name, seen := range states {
		if seen[0] != "SchedulingGated" || seen[len(seen)-1] != "Succeeded" || !slices.Contains(seen, "Running") || !inOrder(seen, order) {
			t.Errorf("pod %s went %s, want SchedulingGated -> Pending -> Running -> Succeeded", name, strings.Join(seen, " -> "))
		}
	}

	// Events: low-priority pods waited for quota; the Budget's Admitted events (one per
	// 10 s at most, no event on the admitted pods) count every pod.
	pods := listPods(t, e, teamNS)
	waitFor(t, "the Budget's Admitted events to count every pod", time.Minute, func() (bool, string) {
		return budgetAdmittedEvents(t, e, len(pods))
	})
	for _, pod := range pods {
		if hasEvent(t, e, &pod, "Admitted") {
			t.Errorf("pod %s has an Admitted event; pods get none by default", pod.Name)
		}
		if strings.HasPrefix(pod.Name, "low-") && !hasEvent(t, e, &pod, "InsufficientQuota") {
			t.Errorf("pod %s waited behind the high-priority pods but has no InsufficientQuota event", pod.Name)
		}
		if pod.Annotations[v1alpha1.AdmittedAtAnnotation] == "" || pod.Annotations[v1alpha1.AdmittedByAnnotation] != teamNS+"/team-a" {
			t.Errorf("pod %s annotations %v, want %s and %s=team-a/team-a", pod.Name, pod.Annotations, v1alpha1.AdmittedAtAnnotation, v1alpha1.AdmittedByAnnotation)
		}
	}
	waitFor(t, "kubectl get budgets to show an empty, open budget", time.Minute, func() (bool, string) {
		return budgetRow(t, e, "Open", "0", "0")
	})
	var b v1alpha1.Budget
	fatalIf(t, e.c.Get(ctx, client.ObjectKey{Namespace: teamNS, Name: "team-a"}, &b), "reading Budget")
	if used := b.Status.Used[corev1.ResourceRequestsCPU]; !used.IsZero() {
		t.Errorf("status.used requests.cpu = %s after the burst, want 0", used.String())
	}
}

func listPods(t *testing.T, e env, namespace string) []corev1.Pod {
	t.Helper()
	pods, err := e.cs.CoreV1().Pods(namespace).List(t.Context(), metav1.ListOptions{})
	fatalIf(t, err, "listing pods")
	return pods.Items
}

func scheduledReason(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Reason
		}
	}
	return ""
}

// budgetAdmittedEvents reports whether the Admitted events of Budget team-a/team-a sum up
// to want pods ("Admitted N pods in the last ...").
func budgetAdmittedEvents(t *testing.T, e env, want int) (bool, string) {
	t.Helper()
	list, err := e.cs.CoreV1().Events(teamNS).List(t.Context(), metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.name": "team-a", "involvedObject.kind": "Budget", "reason": "Admitted"}.String(),
	})
	fatalIf(t, err, "listing the Budget's events")
	sum := 0
	var notes []string
	for _, ev := range list.Items {
		var n int
		if _, err := fmt.Sscanf(ev.Message, "Admitted %d", &n); err != nil {
			return false, fmt.Sprintf("Admitted event %q does not say how many pods", ev.Message)
		}
		sum += n
		notes = append(notes, ev.Message)
	}
	return sum == want, fmt.Sprintf("%d pods in the Admitted events %q, want %d", sum, notes, want)
}

func hasEvent(t *testing.T, e env, pod *corev1.Pod, reason string) bool {
	t.Helper()
	events, err := podEvents(t.Context(), e.cs, pod)
	fatalIf(t, err, "listing events")
	return slices.ContainsFunc(events, func(ev corev1.Event) bool { return ev.Reason == reason })
}

// budgetRow checks the team-a row of `kubectl get budgets -n team-a`.
func budgetRow(t *testing.T, e env, state, admitted, gated string) (bool, string) {
	t.Helper()
	rows, err := table(t.Context(), e.admin, "/apis/quotagate.io/v1alpha1/namespaces/"+teamNS+"/budgets")
	if err != nil {
		return false, err.Error()
	}
	row := rows["team-a"]
	// The manager writes status with a merge patch from the object it read, so a count
	// that has always been 0 is never written and the API server has no value for the
	// column (kubectl prints it empty). Read that as 0, which is what it means.
	for _, col := range []string{"Admitted", "Gated"} {
		if row[col] == "<nil>" {
			row[col] = "0"
		}
	}
	got := fmt.Sprintf("State=%s Admitted=%s Gated=%s", row["State"], row["Admitted"], row["Gated"])
	return got == fmt.Sprintf("State=%s Admitted=%s Gated=%s", state, admitted, gated), "kubectl get budgets shows " + got
}

func setBudgetState(t *testing.T, e env, s v1alpha1.BudgetState) {
	t.Helper()
	b := &v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: teamNS, Name: "team-a"}}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"state":"`+string(s)+`"}}`))
	fatalIf(t, e.c.Patch(t.Context(), b, patch), "setting the budget's state")
}

func jobsComplete(t *testing.T, e env, namespace string, want int) (bool, string) {
	t.Helper()
	var jobs batchv1.JobList
	fatalIf(t, e.c.List(t.Context(), &jobs, client.InNamespace(namespace)), "listing Jobs")
	done := 0
	var failed []string
	for _, j := range jobs.Items {
		for _, c := range j.Status.Conditions {
			if c.Status == corev1.ConditionTrue && c.Type == batchv1.JobComplete {
				done++
			}
			if c.Status == corev1.ConditionTrue && c.Type == batchv1.JobFailed {
				failed = append(failed, j.Name)
			}
		}
	}
	if len(failed) > 0 {
		t.Fatalf("Jobs failed: %v", failed)
	}
	return done == want && len(jobs.Items) == want, fmt.Sprintf("%d of %d Jobs complete", done, want)
}

// inOrder reports whether seen follows the order of states in order.
func inOrder(seen, order []string) bool {
	last := -1
	for _, s := range seen {
		i := slices.Index(order, s)
		if i < last {
			return false
		}
		last = i
	}
	return true
}
