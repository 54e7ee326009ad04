package quota

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/labels"
)

// TestAdmitOneRound: which pods one Admit lets through, given budgets and gated pods.
func TestAdmitOneRound(t *testing.T) {
	tests := map[string]struct {
		budgets []Budget
		pods    []Pod
		want    []string
	}{
		"order is priority, then creation, then UID": {
			budgets: []Budget{makeBudget("team-a", "b").Hard("pods=3").Obj()},
			pods: []Pod{
				makePod("late").Created(5).Pod(),
				makePod("b-same-time").Created(1).Pod(),
				makePod("a-same-time").Created(1).Pod(),
				makePod("urgent").Created(9).Priority(10).Pod(),
			},
			want: []string{"urgent", "a-same-time", "b-same-time"},
		},
		"StrictFIFO: a head that does not fit blocks the pods behind it": {
			budgets: []Budget{makeBudget("team-a", "b").Hard("cpu=4").Strict().Obj()},
			pods: []Pod{
				makePod("p1").Created(1).Req("cpu=2").Pod(),
				makePod("big").Created(2).Req("cpu=3").Pod(),
				makePod("small").Created(3).Req("cpu=1").Pod(),
			},
			want: []string{"p1"},
		},
		"BestEffortFIFO: pods behind a head that does not fit go if they fit": {
			budgets: []Budget{makeBudget("team-a", "b").Hard("cpu=4").Obj()},
			pods: []Pod{
				makePod("p1").Created(1).Req("cpu=2").Pod(),
				makePod("big").Created(2).Req("cpu=3").Pod(),
				makePod("small").Created(3).Req("cpu=1").Pod(),
				makePod("small2").Created(4).Req("cpu=1").Pod(),
			},
			want: []string{"p1", "small", "small2"},
		},
		"a pod must fit every budget that covers it": {
			budgets: []Budget{
				makeBudget("team-a", "all").Hard("cpu=10").Obj(),
				makeBudget("team-a", "gpu").Hard("nvidia.com/gpu=1").Selector("kind", "gpu").Obj(),
			},
			pods: []Pod{
				makePod("g1").Created(1).Req("cpu=1,nvidia.com/gpu=1").Label("kind", "gpu").Pod(),
				makePod("g2").Created(2).Req("cpu=1,nvidia.com/gpu=1").Label("kind", "gpu").Pod(),
				makePod("c1").Created(3).Req("cpu=1").Pod(),
			},
			want: []string{"g1", "c1"},
		},
		"a parent limits its children together": {
			budgets: []Budget{
				makeBudget("", "ml").Hard("cpu=3").Obj(),
				makeBudget("team-a", "a").Hard("cpu=2").Parent("ml").Obj(),
				makeBudget("team-b", "b").Hard("cpu=2").Parent("ml").Obj(),
			},
			pods: []Pod{
				makePod("a1").Created(1).Req("cpu=1").Pod(),
				makePod("b1").NS("team-b").Created(2).Req("cpu=1").Pod(),
				makePod("a2").Created(3).Req("cpu=1").Pod(),
				makePod("b2").NS("team-b").Created(4).Req("cpu=1").Pod(),
			},
			want: []string{"a1", "b1", "a2"},
		},
		"a pod may not overtake the head of a StrictFIFO budget that covers it": {
			budgets: []Budget{
				makeBudget("team-a", "be").Hard("cpu=10").Obj(),
				makeBudget("", "strict").Hard("cpu=3").Strict().Namespaces(labels.Everything()).Obj(),
			},
			pods: []Pod{
				makePod("first").NS("team-b").Created(1).Req("cpu=2").Pod(),
				makePod("head").NS("team-b").Created(2).Req("cpu=2").Pod(),
				makePod("behind").Created(3).Req("cpu=1").Pod(),
			},
			want: []string{"first"},
		},
		"a never-fitting pod blocks neither strategy": {
			budgets: []Budget{
				makeBudget("team-a", "strict").Hard("cpu=4").Strict().Obj(),
				makeBudget("team-b", "be").Hard("cpu=4").Obj(),
			},
			pods: []Pod{
				makePod("huge-a").Created(1).Req("cpu=5").Pod(),
				makePod("a").Created(2).Req("cpu=1").Pod(),
				makePod("huge-b").NS("team-b").Created(1).Req("cpu=5").Pod(),
				makePod("b").NS("team-b").Created(2).Req("cpu=1").Pod(),
			},
			want: []string{"a", "b"},
		},
		"only resources named in hard are limited": {
			budgets: []Budget{makeBudget("team-a", "b").Hard("memory=1Gi").Obj()},
			pods:    []Pod{makePod("p").Req("cpu=64,memory=1Gi").Pod()},
			want:    []string{"p"},
		},
		"running pods count, even over hard; new ones wait": {
			budgets: []Budget{makeBudget("team-a", "b").Hard("cpu=2").Obj()},
			pods: []Pod{
				makePod("old1").Req("cpu=2").Ungated().Pod(),
				makePod("old2").Req("cpu=2").Ungated().Pod(),
				makePod("new").Created(1).Req("cpu=1").Pod(),
			},
			want: nil,
		},
		"pods in namespaces that are not opted in still count": {
			budgets: []Budget{makeBudget("", "cluster").Hard("cpu=2").Namespaces(labels.Everything()).Obj()},
			pods: []Pod{
				makePod("elsewhere").NS("legacy").Req("cpu=2").Ungated().Pod(),
				makePod("p").Req("cpu=1").Pod(),
			},
			want: nil,
		},
		"a ClusterBudget without namespaceSelector covers only through children": {
			budgets: []Budget{makeBudget("", "parent").Hard("cpu=1").Obj()},
			pods:    []Pod{makePod("p").Req("cpu=2").Pod()},
			want:    []string{"p"},
		},
		"a budget's podSelector narrows it": {
			budgets: []Budget{makeBudget("team-a", "web").Hard("pods=0").Selector("app", "web").Obj()},
			pods: []Pod{
				makePod("web").Label("app", "web").Pod(),
				makePod("batch").Label("app", "batch").Pod(),
			},
			want: []string{"batch"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			// Uncovered pods are admitted at once: an admission shows what is not
			// covered.
			q, _ := newTestQueue(WithHoldUncovered(false))
			for _, b := range tc.budgets {
				q.UpsertBudget(b)
			}
			for _, p := range tc.pods {
				q.UpsertPod(p)
			}
			if diff := cmp.Diff(tc.want, admitNames(q)); diff != "" {
				t.Errorf("admitted (-want +got):\n%s", diff)
			}
			if got := admitNames(q); len(got) != 0 {
				t.Errorf("a second Admit with no event admitted %v", got)
			}
		})
	}
}

// TestFreedCapacityWakesWaitingPods: the head that did not fit goes once capacity is
// freed, and StrictFIFO then lets the pods behind it through.
func TestFreedCapacityWakesWaitingPods(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=4").Strict().Obj())
	q.UpsertPod(makePod("p1").Created(1).Req("cpu=3").Pod())
	q.UpsertPod(makePod("p2").Created(2).Req("cpu=2").Pod())
	q.UpsertPod(makePod("p3").Created(3).Req("cpu=1").Pod())
	if diff := cmp.Diff([]string{"p1"}, admitNames(q)); diff != "" {
		t.Fatalf("first round (-want +got):\n%s", diff)
	}
	q.UpsertPod(makePod("p1").Created(1).Req("cpu=3").Ungated().Pod()) // the informer's view
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("confirming p1 admitted %v", got)
	}
	q.DeletePod("p1")
	if diff := cmp.Diff([]string{"p2", "p3"}, admitNames(q)); diff != "" {
		t.Errorf("after p1 ended (-want +got):\n%s", diff)
	}
	st := mustStatus(t, q, BudgetKey{Namespace: "team-a", Name: "b"})
	if diff := listDiff(parseList("requests.cpu=3"), st.Used); diff != "" {
		t.Errorf("used (-want +got):\n%s", diff)
	}
}

// TestReservationsPreventOverAdmission: an admission is charged before its patch is
// confirmed, so the informer's lag cannot let more in.
func TestReservationsPreventOverAdmission(t *testing.T) {
	q, _ := newTestQueue()
	key := BudgetKey{Namespace: "team-a", Name: "b"}
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=2").Obj())
	q.UpsertPod(makePod("p1").Created(1).Req("cpu=2").Pod())
	q.UpsertPod(makePod("p2").Created(2).Req("cpu=2").Pod())
	adm := q.Admit()
	if len(adm) != 1 || adm[0].Pod.Name != "p1" {
		t.Fatalf("Admit = %+v, want p1 only", adm)
	}
	// Before Done and before the informer reports p1 ungated, nothing else fits.
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v while p1's reservation is in flight", got)
	}
	q.Done("p1", Ungated, "")
	// A stale gated view of p1 (an update older than the patch) changes nothing.
	q.UpsertPod(makePod("p1").Created(1).Req("cpu=2").Label("late", "update").Pod())
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v after a stale view of p1", got)
	}
	// The informer's ungated view confirms the reservation without charging twice.
	q.UpsertPod(makePod("p1").Created(1).Req("cpu=2").Ungated().Pod())
	st := mustStatus(t, q, key)
	if diff := listDiff(parseList("requests.cpu=2"), st.Used); diff != "" {
		t.Errorf("used (-want +got):\n%s", diff)
	}
	if st.AdmittedPods != 1 || st.GatedPods != 1 {
		t.Errorf("admitted, gated = %d, %d; want 1, 1", st.AdmittedPods, st.GatedPods)
	}
}

// TestFreeingWakesOnlyCoveringBudgets: a pod that ends moves pods only in the budgets
// it was charged to.
func TestFreeingWakesOnlyCoveringBudgets(t *testing.T) {
	moves := map[BudgetKey]int{}
	q, _ := newTestQueue(WithObserver(ObserverFunc(func(b BudgetKey, from, to Queue) {
		if from == QueueInadmissible && to == QueueActive {
			moves[b]++
		}
	})))
	for _, ns := range []string{"team-a", "team-b"} {
		q.UpsertBudget(makeBudget(ns, "b").Hard("cpu=1").Obj())
		q.UpsertPod(makePod(ns + "-running").NS(ns).Req("cpu=1").Ungated().Pod())
		q.UpsertPod(makePod(ns + "-waiting").NS(ns).Req("cpu=1").Pod())
	}
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v with both budgets full", got)
	}
	q.DeletePod("team-a-running")
	if diff := cmp.Diff([]string{"team-a-waiting"}, admitNames(q)); diff != "" {
		t.Errorf("admitted (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[BudgetKey]int{{Namespace: "team-a", Name: "b"}: 1}, moves); diff != "" {
		t.Errorf("inadmissible->active moves (-want +got):\n%s", diff)
	}
}

// TestWokenPodBlockedElsewhereLetsOthersIn: a freeing event wakes the first pod that
// fits; when that pod turns out to be blocked by another budget, the pod behind it
// still gets the freed capacity in the same Admit.
func TestWokenPodBlockedElsewhereLetsOthersIn(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=2").Obj())
	q.UpsertBudget(makeBudget("team-a", "gpu").Hard("nvidia.com/gpu=1").Selector("kind", "gpu").Obj())
	q.UpsertPod(makePod("cpu-user").Req("cpu=2").Ungated().Pod())
	q.UpsertPod(makePod("gpu-user").Req("nvidia.com/gpu=1").Label("kind", "gpu").Ungated().Pod())
	q.UpsertPod(makePod("p1").Created(1).Req("cpu=2,nvidia.com/gpu=1").Label("kind", "gpu").Pod())
	q.UpsertPod(makePod("p2").Created(2).Req("cpu=2").Pod())
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v with no room", got)
	}
	q.DeletePod("cpu-user")
	if diff := cmp.Diff([]string{"p2"}, admitNames(q)); diff != "" {
		t.Errorf("admitted (-want +got):\n%s", diff)
	}
	r, _ := q.Reader().WaitReason("p1")
	if r.Code != CodeInsufficient || !strings.Contains(r.Message, "Budget team-a/gpu") {
		t.Errorf("p1 waits with %+v, want insufficient nvidia.com/gpu in Budget team-a/gpu", r)
	}
}
