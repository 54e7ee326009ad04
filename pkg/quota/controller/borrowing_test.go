package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
)

// Two teams under one parent, as a user sets them up: team A may borrow 2 CPU beyond its
// hard of 2 from team B while B is idle; its Budget's status says what it borrows, and
// the 2 pods admitted beyond its hard carry the borrowing annotation. B's
// pod then waits for its lent quota (NoLendableQuota) and gets it as soon as a
// borrowing pod of A ends, though A has an older pod waiting to borrow it. A never uses
// more than hard plus borrowingLimit.
func TestBorrowingBetweenTeams(t *testing.T) {
	parent := fmt.Sprintf("org-%d", nsCounter.Add(1))
	createClusterBudgets(t, clusterBudget(parent, "", cpu("100")))
	nsA, nsB := newNamespace(t, true), newNamespace(t, true)
	w := watchAdmissions(t, nsA, "4")
	a := budget(nsA, "a", cpu("2"), "")
	a.Spec.Parent, a.Spec.BorrowingLimit = parent, cpu("2")
	b := budget(nsB, "b", cpu("2"), "")
	b.Spec.Parent = parent
	mustCreate(t, a, b)
	startManager(t, nil, false)

	for i := range 4 {
		mustCreate(t, gatedPod(nsA, podName(i), "1"))
	}
	testbed.Poll(t, time.Minute, "team A's 4 pods admitted, 2 of them borrowed", func(context.Context) (bool, error) {
		_, u := countGated(t, nsA)
		return u == 4, nil
	})
	testbed.Poll(t, time.Minute, "team A's status borrowing 2 CPU", func(context.Context) (bool, error) {
		var got v1alpha1.Budget
		if err := admin.Get(t.Context(), client.ObjectKeyFromObject(a), &got); err != nil {
			return false, err
		}
		q := got.Status.Borrowed["requests.cpu"]
		return q.String() == "2", nil
	})
	var podsA corev1.PodList
	if err := admin.List(t.Context(), &podsA, client.InNamespace(nsA)); err != nil {
		t.Fatal(err)
	}
	borrowing := 0
	for _, p := range podsA.Items {
		if p.Annotations[v1alpha1.BorrowingAnnotation] == nsA+"/a" {
			borrowing++
		}
	}
	if borrowing != 2 {
		t.Errorf("%d of team A's pods carry %s=%s/a, want the 2 admitted beyond hard", borrowing, v1alpha1.BorrowingAnnotation, nsA)
	}
	mustCreate(t, gatedPod(nsA, "late", "1")) // over A's ceiling: waits
	mustCreate(t, gatedPod(nsB, "lender", "1"))
	ev := waitForWaitingEvent(t, nsB, "lender", "NoLendableQuota")
	t.Logf("team B's pod waits: %s", ev.Message)

	victim := gatedPod(nsA, podName(0), "1")
	if err := admin.Delete(t.Context(), victim, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	testbed.Poll(t, time.Minute, "team B's pod admitted into the quota it lent", func(context.Context) (bool, error) {
		return !isGated(t, nsB, "lender"), nil
	})
	if !isGated(t, nsA, "late") {
		t.Errorf("team A's late pod took the quota team B was waiting for")
	}
	w.waitForAdmissions(t, 4)
	w.check(t)
}
