package quota

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// TestUnknownNamespaceHolds: a pod whose event arrives before its namespace's is held,
// never released, whether uncovered pods are held or not: until the namespace's
// labels are known, neither its opt-in nor the ClusterBudgets that select it are. Once
// the namespace arrives, its pods are decided with its labels (a ClusterBudget of 1
// CPU admits one pod of 1 CPU, not nine).
func TestUnknownNamespaceHolds(t *testing.T) {
	for _, hold := range []bool{true, false} {
		t.Run(fmt.Sprintf("hold uncovered %v", hold), func(t *testing.T) {
			q, _ := newTestQueue(WithHoldUncovered(hold))
			gold := labels.SelectorFromSet(labels.Set{"tier": "gold"})
			q.UpsertBudget(makeBudget("", "gold").Hard("cpu=1").Namespaces(gold).Obj())
			for i := range 9 {
				q.UpsertPod(makePod(fmt.Sprintf("p%d", i)).NS("new").Created(i).Req("cpu=1").Pod())
			}
			if got := admitNames(q); len(got) != 0 {
				t.Fatalf("admitted %v in a namespace the core has not seen", got)
			}
			r, _ := q.Reader().WaitReason("p0")
			want := Reason{Code: CodeNamespaceUnknown, Message: "namespace new has not been seen yet: which budgets cover it is decided once it is"}
			if diff := cmp.Diff(want, r); diff != "" {
				t.Errorf("wait reason (-want +got):\n%s", diff)
			}
			if w, ok := q.Reader().PodWait("p0"); !ok || !w.Held {
				t.Errorf("PodWait = %+v, %v; want held", w, ok)
			}

			q.SetNamespace("new", map[string]string{v1alpha1.EnabledLabel: "true", "tier": "gold"})
			if diff := cmp.Diff([]string{"p0"}, admitNames(q)); diff != "" {
				t.Errorf("once the namespace is known (-want +got):\n%s", diff)
			}
			if diff := listDiff(parseList("requests.cpu=1"), mustStatus(t, q, BudgetKey{Name: "gold"}).Used); diff != "" {
				t.Errorf("gold used (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUnknownNamespaceHoldsCoveredPods: a Budget of the namespace covers its pods
// whatever the namespace's labels, but a ClusterBudget may select it too: the pods
// wait (parked in the Budget's queue, blocking nothing) until the namespace is known.
func TestUnknownNamespaceHoldsCoveredPods(t *testing.T) {
	q, _ := newTestQueue()
	gold := labels.SelectorFromSet(labels.Set{"tier": "gold"})
	q.UpsertBudget(makeBudget("", "gold").Hard("cpu=1").Namespaces(gold).Obj())
	q.UpsertBudget(makeBudget("new", "b").Hard("cpu=10").Obj())
	q.UpsertPod(makePod("p1").NS("new").Created(1).Req("cpu=1").Pod())
	q.UpsertPod(makePod("p2").NS("new").Created(2).Req("cpu=1").Pod())
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v in a namespace the core has not seen", got)
	}
	if code, _ := q.Reader().WaitCode("p1"); code != CodeNamespaceUnknown {
		t.Errorf("wait code %s, want %s", code, CodeNamespaceUnknown)
	}
	q.SetNamespace("new", map[string]string{v1alpha1.EnabledLabel: "true", "tier": "gold"})
	if diff := cmp.Diff([]string{"p1"}, admitNames(q)); diff != "" {
		t.Errorf("once the namespace is known (-want +got):\n%s", diff)
	}
}

// TestGroupInUnknownNamespaceHolds: a group's members are held with their namespace.
func TestGroupInUnknownNamespaceHolds(t *testing.T) {
	q, _ := newTestQueue(WithHoldUncovered(false))
	for _, name := range []string{"g1", "g2"} {
		q.UpsertPod(makePod(name).NS("new").Group("g", 2).Req("cpu=1").Pod())
	}
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v in a namespace the core has not seen", got)
	}
	q.SetNamespace("new", map[string]string{v1alpha1.EnabledLabel: "true"})
	if diff := cmp.Diff([]string{"g1", "g2"}, admitNames(q)); diff != "" {
		t.Errorf("once the namespace is known, uncovered and released (-want +got):\n%s", diff)
	}
}

// TestNamespaceLabelBeforeDecision: a namespace label change and a new pod in one batch
// of events: the pod is decided with the new labels.
func TestNamespaceLabelBeforeDecision(t *testing.T) {
	q, _ := newTestQueue(WithHoldUncovered(false))
	gold := labels.SelectorFromSet(labels.Set{"tier": "gold"})
	q.UpsertBudget(makeBudget("", "gold").Hard("cpu=1").Namespaces(gold).Obj())
	q.UpsertPod(makePod("p1").Created(1).Req("cpu=1").Pod())
	q.UpsertPod(makePod("p2").Created(2).Req("cpu=1").Pod())
	q.SetNamespace("team-a", map[string]string{v1alpha1.EnabledLabel: "true", "tier": "gold"})
	if diff := cmp.Diff([]string{"p1"}, admitNames(q)); diff != "" {
		t.Errorf("admitted (-want +got):\n%s", diff)
	}
}

// TestUncoveredGroupMemberParksGroup: with uncovered pods held, a group with a member
// no budget covers waits whole, parked, and blocks no StrictFIFO queue meanwhile.
func TestUncoveredGroupMemberParksGroup(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "web").Hard("cpu=10").Selector("app", "web").Strict().Obj())
	q.UpsertPod(makePod("g1").Created(1).Label("app", "web").Group("g", 2).Req("cpu=1").Pod())
	q.UpsertPod(makePod("g2").Created(1).Group("g", 2).Req("cpu=1").Pod())
	q.UpsertPod(makePod("after").Created(2).Label("app", "web").Req("cpu=1").Pod())
	if diff := cmp.Diff([]string{"after"}, admitNames(q)); diff != "" {
		t.Errorf("admitted (-want +got):\n%s", diff)
	}
	r, _ := q.Reader().WaitReason("g1")
	want := Reason{Code: CodeUncovered, Message: "group g: no Budget or ClusterBudget covers member g2, and uncovered pods are held"}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("wait reason (-want +got):\n%s", diff)
	}
	q.UpsertPod(makePod("g2").Created(1).Label("app", "web").Group("g", 2).Req("cpu=1").Pod())
	if diff := cmp.Diff([]string{"g1", "g2"}, admitNames(q)); diff != "" {
		t.Errorf("once covered (-want +got):\n%s", diff)
	}
}

// TestNamespaceOptOutReleases: removing the opt-in label lets the namespace's gated
// pods go without quota; they are still charged.
func TestNamespaceOptOutReleases(t *testing.T) {
	q, _ := newTestQueue()
	q.SetNamespace("team-a", map[string]string{v1alpha1.EnabledLabel: "true"})
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=1").Obj())
	q.UpsertPod(makePod("p1").Created(1).Req("cpu=1").Pod())
	q.UpsertPod(makePod("p2").Created(2).Req("cpu=1").Pod())
	if diff := cmp.Diff([]string{"p1"}, admitNames(q)); diff != "" {
		t.Fatalf("admitted (-want +got):\n%s", diff)
	}
	q.SetNamespace("team-a", map[string]string{})
	adm := q.Admit()
	if len(adm) != 1 || adm[0].Pod.Name != "p2" || adm[0].Reason.Code != CodeNamespaceNotEnabled {
		t.Fatalf("Admit = %+v, want p2 released", adm)
	}
	if diff := cmp.Diff("namespace team-a is not labelled quotagate.io/enabled=true: released without quota", adm[0].Reason.Message); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
	if diff := listDiff(parseList("requests.cpu=2"), mustStatus(t, q, BudgetKey{Namespace: "team-a", Name: "b"}).Used); diff != "" {
		t.Errorf("used (-want +got):\n%s", diff)
	}
}

// TestNamespaceSelector: a ClusterBudget follows namespace labels as they change (with
// uncovered pods admitted, so that leaving the selector shows).
func TestNamespaceSelector(t *testing.T) {
	q, _ := newTestQueue(WithHoldUncovered(false))
	sel, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}})
	if err != nil {
		t.Fatal(err)
	}
	q.UpsertBudget(makeBudget("", "gold").Hard("pods=0").Namespaces(sel).Obj())
	q.SetNamespace("team-a", map[string]string{v1alpha1.EnabledLabel: "true", "tier": "gold"})
	q.UpsertPod(makePod("p").Pod())
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v past pods=0", got)
	}
	q.SetNamespace("team-a", map[string]string{v1alpha1.EnabledLabel: "true"})
	if diff := cmp.Diff([]string{"p"}, admitNames(q)); diff != "" {
		t.Errorf("after the namespace left the selector (-want +got):\n%s", diff)
	}
}
