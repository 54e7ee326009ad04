//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
)

// The namespaces of the reclaim step: a team that lends and a team that borrows.
const (
	lenderNS   = "team-lend"
	borrowerNS = "team-borrow"
)

// testReclaim is the borrowing story as a user lives it, through the installed chart:
// two teams under a ClusterBudget of 4 CPU, each with a Budget of 2. The borrowing
// team runs a Deployment of 4 pods while the other is idle, 2 of them on borrowed
// quota, with a PodDisruptionBudget that keeps 3 available. The lending team starts a
// Job of 2 pods: quotagate evicts the borrowed pods through the Eviction API, the
// first at once, the second only once the PDB allows it; the ReplicaSet re-creates the
// evicted pods, and they wait, gated, in their own budget. A watcher checks at every
// pod event of both teams that the family never runs more than 4 CPU.
func testReclaim(t *testing.T, e env, _ *podWatcher) {
	ctx := t.Context()
	for _, ns := range []string{lenderNS, borrowerNS} {
		fatalIf(t, e.c.Create(ctx, enabledNamespace(ns)), "creating namespace "+ns)
	}
	family, err := testbed.WatchUsageSelected(ctx, e.cs, "", "family=org-e2e", corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("4")})
	fatalIf(t, err, "watching the family")
	t.Cleanup(family.Stop)
	cpu := func(v string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse(v)}
	}
	fatalIf(t, e.c.Create(ctx, &v1alpha1.ClusterBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "org-e2e"},
		Spec:       v1alpha1.ClusterBudgetSpec{BudgetSpec: v1alpha1.BudgetSpec{Hard: cpu("4")}},
	}), "creating the parent ClusterBudget")
	lender := budget(lenderNS, "lend", v1alpha1.StateOpen, cpu("2"))
	lender.Spec.Parent = "org-e2e"
	borrower := budget(borrowerNS, "borrow", v1alpha1.StateOpen, cpu("2"))
	borrower.Spec.Parent, borrower.Spec.BorrowingLimit = "org-e2e", cpu("2")
	fatalIf(t, e.c.Create(ctx, lender), "creating the lender's Budget")
	fatalIf(t, e.c.Create(ctx, borrower), "creating the borrower's Budget")
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: borrowerNS, Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(3)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		},
	}
	fatalIf(t, e.c.Create(ctx, pdb), "creating the PodDisruptionBudget")

	web := job(borrowerNS, jobSpec{name: "web", cpu: "1", runFor: time.Hour}).Spec.Template
	web.Labels = map[string]string{"app": "web", "family": "org-e2e"}
	web.Spec.RestartPolicy = corev1.RestartPolicyAlways
	fatalIf(t, e.c.Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: borrowerNS, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](4),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: web,
		},
	}), "creating the borrower's Deployment")
	waitFor(t, "the borrower's 4 pods ready, 2 on borrowed quota, and the PDB allowing 1 disruption", 2*time.Minute, func() (bool, string) {
		var got policyv1.PodDisruptionBudget
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(pdb), &got); err != nil {
			return false, err.Error()
		}
		borrowing := annotated(t, e, borrowerNS, v1alpha1.BorrowingAnnotation)
		return got.Status.CurrentHealthy == 4 && got.Status.DisruptionsAllowed == 1 && borrowing == 2,
			fmt.Sprintf("PDB healthy %d, allowed %d; %d pods carry %s", got.Status.CurrentHealthy, got.Status.DisruptionsAllowed, borrowing, v1alpha1.BorrowingAnnotation)
	})

	waitFor(t, "kubectl get budgets -o wide to show what is borrowed and lent", time.Minute, func() (bool, string) {
		b, err := table(ctx, e.admin, "/apis/quotagate.io/v1alpha1/namespaces/"+borrowerNS+"/budgets")
		if err != nil {
			return false, err.Error()
		}
		l, err := table(ctx, e.admin, "/apis/quotagate.io/v1alpha1/namespaces/"+lenderNS+"/budgets")
		if err != nil {
			return false, err.Error()
		}
		got := fmt.Sprintf("borrowed %s, lent %s", b["borrow"]["Borrowed"], l["lend"]["Lent"])
		return got == `borrowed {"requests.cpu":"2"}, lent {"requests.cpu":"2"}`, got
	})

	batch := job(lenderNS, jobSpec{name: "batch", cpu: "1", runFor: time.Hour})
	batch.Spec.Parallelism, batch.Spec.Completions = ptr.To[int32](2), ptr.To[int32](2)
	batch.Spec.Template.Labels["family"] = "org-e2e"
	fatalIf(t, e.c.Create(ctx, batch), "creating the lender's Job")
	waitFor(t, "one borrowed pod preempted, the other's eviction refused by the PDB, and one of the lender's pods admitted", 2*time.Minute, func() (bool, string) {
		preempted, blocked := eventsIn(t, e, borrowerNS, "Preempted"), eventsIn(t, e, borrowerNS, "PreemptionBlocked")
		admitted := ungatedIn(t, e, lenderNS)
		return len(preempted) == 1 && len(blocked) >= 1 && admitted == 1,
			fmt.Sprintf("Preempted %v, PreemptionBlocked %v, lender's pods admitted %d", preempted, blocked, admitted)
	})

	// The PDB allows one more: the retry takes the second borrowed pod. A merge patch,
	// not an update: the disruption controller writes the PDB's status all along, and
	// an update from an older read would be refused as a conflict.
	relaxed := pdb.DeepCopy()
	relaxed.Spec.MinAvailable = ptr.To(intstr.FromInt32(2))
	fatalIf(t, e.c.Patch(ctx, relaxed, client.MergeFrom(pdb)), "relaxing the PDB")
	// Events are written apart from the eviction and the ungate, so they are waited
	// for too, not read once the pods are where they should be.
	// The victims are of another namespace, so the lender's Preempting events do not
	// name them: two on one pod make one series, so at least one event, not two.
	waitFor(t, "both of the lender's pods admitted, the borrower's re-created pods gated, Preempting events on the lender's pods", 3*time.Minute, func() (bool, string) {
		admitted := ungatedIn(t, e, lenderNS)
		gated := len(listPods(t, e, borrowerNS)) - ungatedIn(t, e, borrowerNS)
		preempting := eventsIn(t, e, lenderNS, "Preempting")
		return admitted == 2 && gated == 2 && len(preempting) >= 1 && !slices.ContainsFunc(preempting, func(m string) bool { return strings.Contains(m, borrowerNS) }),
			fmt.Sprintf("lender's pods admitted %d; borrower's pods gated %d; Preempting %v", admitted, gated, preempting)
	})
	if r := family.Report(); len(r.Violations) > 0 {
		t.Errorf("the family ran more than its parent's 4 CPU: %v", r.Violations)
	}
	// Leave nothing running that the later steps would see.
	for _, o := range []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: borrowerNS, Name: "web"}}, batch,
	} {
		fatalIf(t, e.c.Delete(t.Context(), o, client.PropagationPolicy(metav1.DeletePropagationBackground)), "cleaning up")
	}
}

// annotated counts the pods of a namespace that carry an annotation.
func annotated(t *testing.T, e env, ns, key string) int {
	n := 0
	for _, p := range listPods(t, e, ns) {
		if _, ok := p.Annotations[key]; ok && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// ungatedIn counts a namespace's pods without the gate that are not terminating.
func ungatedIn(t *testing.T, e env, ns string) int {
	n := 0
	for _, p := range listPods(t, e, ns) {
		if !hasGate(&p) && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// eventsIn lists "pod: message" of a namespace's events with a reason.
func eventsIn(t *testing.T, e env, ns, reason string) []string {
	evs, err := e.cs.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{})
	fatalIf(t, err, "listing events")
	var out []string
	for _, ev := range evs.Items {
		if ev.Reason == reason {
			out = append(out, ev.InvolvedObject.Name+": "+strings.TrimSpace(ev.Message))
		}
	}
	slices.Sort(out)
	return out
}
