package controller_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/pkg/quota"
)

// A borrower's PodDisruptionBudget with maxUnavailable 0, which the built-in edit role
// may create, over all of team B's pods: every eviction is refused. Team A's budget
// (the lender) sets preemption.blockedTimeout: 3s. A's pod waits for 1 CPU that B
// borrows; quotagate tries B's borrowing pods (each refused: other victims first, never
// B's pods within its hard), and once the refusals have lasted 3 s deletes one of them
// despite the PDB, and A's pod is admitted. B keeps its hard; the family stays within
// its parent's 4 CPU at every event.
func TestBlockedTimeoutDeletesPastAPodDisruptionBudget(t *testing.T) {
	ctx := t.Context()
	parent, nsA, nsB, family := twoTeams(t)
	watchB := watchAdmissions(t, nsB, "4")
	var a v1alpha1.Budget
	if err := admin.Get(ctx, client.ObjectKey{Namespace: nsA, Name: "a"}, &a); err != nil {
		t.Fatal(err)
	}
	patched := a.DeepCopy()
	patched.Spec.Preemption = &v1alpha1.Preemption{BlockedTimeout: &metav1.Duration{Duration: 3 * time.Second}}
	if err := admin.Patch(ctx, patched, client.MergeFrom(&a)); err != nil {
		t.Fatalf("setting preemption.blockedTimeout on Budget a: %v", err)
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: nsB},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: new(intstr.FromInt32(0)),
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "b"}},
		},
	}
	mustCreate(t, pdb)
	startManager(t, nil, false)

	pod := func(ns, name, app string) *corev1.Pod { return familyPod(ns, name, app, parent) }
	admitInTurn(t, nsB, parent, "b", 4)
	// A pod not yet running may be evicted whatever its PDB says: wait until the PDB
	// guards all four.
	waitPDB(t, pdb, 4, 0)
	start := time.Now()
	mustCreate(t, pod(nsA, "a0", "a"))
	waiting := waitForWaitingEvent(t, nsA, "a0", string(quota.CodeNoLendable))
	t.Logf("%5.1fs a0: %s", time.Since(start).Seconds(), waiting.Message)
	blocked := waitForWaitingEvent(t, nsB, "", "PreemptionBlocked")
	t.Logf("%5.1fs %s: %s: %s", time.Since(start).Seconds(), blocked.InvolvedObject.Name, blocked.Reason, blocked.Message)
	forced := waitForWaitingEvent(t, nsB, "", "PreemptionForced")
	t.Logf("%5.1fs %s: %s: %s", time.Since(start).Seconds(), forced.InvolvedObject.Name, forced.Reason, forced.Message)
	if time.Since(start) < 3*time.Second {
		t.Errorf("a victim was deleted %s after a0 was created, before the 3s blockedTimeout", time.Since(start))
	}
	if v := forced.InvolvedObject.Name; v != "b2" && v != "b3" {
		t.Errorf("deleted %s despite the PDB, want one of B's borrowing pods b2, b3", v)
	}
	testbed.Poll(t, 2*time.Minute, "a0 admitted", func(context.Context) (bool, error) { return !isGated(t, nsA, "a0"), nil })
	var left []string
	for _, p := range podsOf(t, nsB) {
		if p.DeletionTimestamp == nil {
			left = append(left, p.Name)
		}
	}
	if !slices.Contains(left, "b0") || !slices.Contains(left, "b1") || len(left) != 3 {
		t.Errorf("team B runs %v, want b0, b1 (its hard) and one of b2, b3", left)
	}
	watchB.check(t)
	if r := family.Report(); len(r.Violations) > 0 {
		t.Errorf("the family exceeded the parent's 4 CPU: %v", r.Violations)
	}
}
