package app

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// A closed parent closes its children: budgets shows why, and why gives the parent's
// sentence.
func TestClosedByParent(t *testing.T) {
	org := clusterBudget("org", "requests.cpu=8", nil)
	org.Spec.State = v1alpha1.StateClosed
	w := newWorld(t, t0.Add(time.Minute),
		[]*corev1.Namespace{namespace("team-a", true)},
		[]*v1alpha1.Budget{budget("team-a", "team-a", "requests.cpu=4", "org")},
		[]*v1alpha1.ClusterBudget{org},
		[]*corev1.Pod{makePod("team-a", "train").Req("cpu=1").Created(30).Obj()})
	if len(w.admitted) != 0 {
		t.Fatalf("a closed parent admitted %v", w.admitted)
	}

	out, _, err := run(t, w.env(nil), "budgets", "-n", "team-a")
	if err != nil {
		t.Fatalf("budgets: %v", err)
	}
	want := `BUDGET                 STATE                     ADMITTED   GATED   OLDEST WAIT   RESOURCE       USED/HARD   USAGE
Budget team-a/team-a   Closed (ClosedByParent)   0          1       9m30s         requests.cpu   0/4         [░░░░░░░░░░]
ClusterBudget org      Closed                    0          1       9m30s         requests.cpu   0/8         [░░░░░░░░░░]
`
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("budgets (-want +got):\n%s", diff)
	}

	out, _, err = run(t, w.env(nil), "why", "team-a/train")
	if err != nil {
		t.Fatalf("why: %v", err)
	}
	want = `Pod team-a/train is waiting for 9m30s (gate quotagate.io/budget)
Reason: ClusterBudget org is Closed (parent of Budget team-a/team-a)
BUDGET                 POSITION   QUEUE
Budget team-a/team-a   1 of 1     active
ClusterBudget org      1 of 1     active
`
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("why (-want +got):\n%s", diff)
	}
}
