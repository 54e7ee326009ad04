package quota

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/quotagate/quotagate/api/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// placesWorld is a core holding gated pods in every kind of place: team-a's Budget b
// is full, so its pods wait inadmissible (second also in Budget gpu, which has room)
// and huge is parked; team-b's retry backs off after a failed ungate; lonely (no
// budget, uncovered pods held) and g-0 (a group of two with one member, no budget) are
// held.
func placesWorld(t *testing.T) *AdmissionQueue {
	t.Helper()
	q, _ := newTestQueue(WithHoldUncovered(true))
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=4").Obj())
	q.UpsertBudget(makeBudget("team-a", "gpu").Hard("cpu=20").Selector("kind", "gpu").Obj())
	q.UpsertBudget(makeBudget("team-b", "b").Hard("cpu=2").Obj())
	q.UpsertPod(makePod("running").Req("cpu=4").Ungated().Pod())
	for _, p := range []*podBuilder{
		makePod("first").Created(0).Req("cpu=1"),
		makePod("second").Created(1).Req("cpu=1").Label("kind", "gpu"),
		makePod("third").Created(2).Req("cpu=1"),
		makePod("huge").Created(3).Req("cpu=5"),
		makePod("lonely").NS("team-c").Req("cpu=1"),
		member("g-0", "g", 2, 0).NS("team-d"),
		makePod("retry").NS("team-b").Req("cpu=1").RV(1),
	} {
		q.UpsertPod(p.Pod())
	}
	adm := q.Admit()
	if len(adm) != 1 || adm[0].Pod.Name != "retry" {
		t.Fatalf("admitted %v, want retry alone", adm)
	}
	// The ungate attempt failed, and a newer view shows the pod still gated: it is
	// given back and backs off.
	q.Done("retry", Unknown, "1")
	q.UpsertPod(makePod("retry").NS("team-b").Req("cpu=1").RV(2).Pod())
	return q
}

func TestPodWaitByName(t *testing.T) {
	q := placesWorld(t)
	teamA := BudgetKey{Namespace: "team-a", Name: "b"}
	gpu := BudgetKey{Namespace: "team-a", Name: "gpu"}
	tests := map[string]struct {
		namespace, name string
		want            *PodWait // nil: not found
	}{
		"waits in one budget": {namespace: "team-a", name: "third", want: &PodWait{
			Places: []PodPlace{{Budget: teamA, Position: 3, Total: 4, Queue: QueueInadmissible}},
			Reason: Reason{Code: CodeInsufficient, Message: "requests.cpu: 1 requested, 0 free in Budget team-a/b; position 3 of 4"},
		}},
		"waits in two budgets, a place in each": {namespace: "team-a", name: "second", want: &PodWait{
			Places: []PodPlace{
				{Budget: teamA, Position: 2, Total: 4, Queue: QueueInadmissible},
				{Budget: gpu, Position: 1, Total: 1, Queue: QueueInadmissible},
			},
			Reason: Reason{Code: CodeInsufficient, Message: "requests.cpu: 1 requested, 0 free in Budget team-a/b; position 2 of 4"},
		}},
		"parked, never fits": {namespace: "team-a", name: "huge", want: &PodWait{
			Places: []PodPlace{{Budget: teamA, Position: 4, Total: 4, Queue: QueueParked}},
			Reason: Reason{Code: CodeNeverFits, Message: "requests.cpu: 5 requested, more than the 4 hard of Budget team-a/b: it can never fit"},
		}},
		"backs off after a failed ungate": {namespace: "team-b", name: "retry", want: &PodWait{
			Places:  []PodPlace{{Budget: BudgetKey{Namespace: "team-b", Name: "b"}, Position: 1, Total: 1, Queue: QueueBackoff}},
			RetryAt: ptr.To(t0.Add(100 * time.Millisecond)),
			Reason:  Reason{Code: CodeBackoff, Message: "backoff until 2026-01-01T00:00:00.1Z after a failed ungate"},
		}},
		"held: no budget covers it": {namespace: "team-c", name: "lonely", want: &PodWait{
			Held:   true,
			Reason: Reason{Code: CodeUncovered, Message: "no Budget or ClusterBudget covers it, and uncovered pods are held"},
		}},
		"held: its group is incomplete": {namespace: "team-d", name: "g-0", want: &PodWait{
			Held:   true,
			Reason: Reason{Code: CodeGroupIncomplete, Message: "group g: 1 of 2 members exist"},
		}},
		"admitted: not gated":             {namespace: "team-a", name: "running"},
		"no such pod":                     {namespace: "team-a", name: "ghost"},
		"a gated pod's name, other place": {namespace: "team-b", name: "first"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := q.Reader().PodWaitByName(tc.namespace, tc.name)
			if tc.want == nil {
				if ok {
					t.Fatalf("found %+v, want not found", got)
				}
				return
			}
			if !ok {
				t.Fatalf("%s/%s not found", tc.namespace, tc.name)
			}
			if got.Pod.Namespace != tc.namespace || got.Pod.Name != tc.name {
				t.Errorf("answered for pod %s", got.Pod)
			}
			ignore := cmpopts.IgnoreFields(PodWait{}, "Pod", "Group", "Priority", "Requests", "Created")
			if diff := cmp.Diff(*tc.want, got, ignore, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestPodWaitAgreesWithSnapshot: for every pod a snapshot shows, PodWaitByName and
// PodWait give the same places (position, total, queue) and the same reason, whatever
// the order the core keeps its queues in.
func TestPodWaitAgreesWithSnapshot(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=4").Strict().Obj())
	q.UpsertBudget(makeBudget("team-a", "gpu").Hard("cpu=20").Selector("kind", "gpu").Obj())
	q.UpsertBudget(makeBudget("", "org").Hard("cpu=30").Obj())
	q.UpsertPod(makePod("running").Req("cpu=4").Ungated().Pod())
	for _, p := range []*podBuilder{
		makePod("low-early").Created(0).Req("cpu=1"),
		makePod("high-late").Priority(10).Created(9).Req("cpu=1"),
		makePod("mid").Priority(5).Created(3).Req("cpu=1").Label("kind", "gpu"),
		makePod("same-time-b").Created(4).Req("cpu=1"),
		makePod("same-time-a").Created(4).Req("cpu=1").Label("kind", "gpu"),
		member("g-1", "g", 2, 6),
		member("g-0", "g", 2, 2),
		makePod("huge").Created(1).Req("cpu=8"),
	} {
		q.UpsertPod(p.Pod())
	}
	q.Admit()
	want := map[PodRef][]PodPlace{}
	reasons := map[PodRef]Reason{}
	for _, bq := range q.Reader().Snapshot().Budgets {
		for _, p := range bq.Pods {
			want[p.Pod] = append(want[p.Pod], PodPlace{Budget: bq.Budget, Position: p.Position, Total: len(bq.Pods), Queue: p.Queue})
			reasons[p.Pod] = p.Reason
		}
	}
	if len(want) != 8 {
		t.Fatalf("the snapshot shows %d gated pods, want 8", len(want))
	}
	byBudget := cmpopts.SortSlices(func(a, b PodPlace) bool { return a.Budget.String() < b.Budget.String() })
	for ref, places := range want {
		got, ok := q.Reader().PodWaitByName(ref.Namespace, ref.Name)
		if !ok {
			t.Errorf("%s: not found by name", ref)
			continue
		}
		if diff := cmp.Diff(places, got.Places, byBudget); diff != "" {
			t.Errorf("%s: places differ from the snapshot's (-snapshot +PodWaitByName):\n%s", ref, diff)
		}
		if diff := cmp.Diff(reasons[ref], got.Reason); diff != "" {
			t.Errorf("%s: reason differs from the snapshot's (-snapshot +PodWaitByName):\n%s", ref, diff)
		}
		byUID, ok := q.Reader().PodWait(ref.UID)
		if !ok {
			t.Errorf("%s: not found by UID", ref)
			continue
		}
		if diff := cmp.Diff(got, byUID); diff != "" {
			t.Errorf("%s: PodWait by UID differs from by name (-name +uid):\n%s", ref, diff)
		}
	}
}

// A gated pod no budget covers, in a core that does not hold uncovered pods, waits in
// no queue: the next Admit lets it go. It is not found, as a snapshot does not show it.
func TestPodWaitUncoveredNotHeld(t *testing.T) {
	q, _ := newTestQueue(WithHoldUncovered(false))
	q.UpsertPod(makePod("free").Req("cpu=1").Pod())
	if w, ok := q.Reader().PodWaitByName("team-a", "free"); ok {
		t.Errorf("found %+v", w)
	}
	if w, ok := q.Reader().PodWait("free"); ok {
		t.Errorf("found by UID %+v", w)
	}
	if s := q.Reader().Snapshot(); len(s.Held) != 0 || len(s.Budgets) != 0 {
		t.Errorf("the snapshot shows it: %+v", s)
	}
}

// A pod deleted and created again under the same name before the deletion was seen:
// the newer one answers.
func TestPodWaitByNameNewerTwin(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=1").Obj())
	q.UpsertPod(makePod("running").Req("cpu=1").Ungated().Pod())
	old := makePod("twin").Created(0).Req("cpu=1").Obj()
	old.UID = "old"
	q.UpsertPod(NewPod(old, v1alpha1.SchedulingGate, t0))
	newer := makePod("twin").Created(5).Req("cpu=1").Obj()
	newer.UID = "new"
	q.UpsertPod(NewPod(newer, v1alpha1.SchedulingGate, t0))
	got, ok := q.Reader().PodWaitByName("team-a", "twin")
	if !ok || got.Pod.UID != "new" {
		t.Fatalf("got %v (found %v), want the pod with UID new", got.Pod, ok)
	}
	if diff := cmp.Diff([]PodPlace{{Budget: BudgetKey{Namespace: "team-a", Name: "b"}, Position: 2, Total: 2, Queue: QueueActive}}, got.Places); diff != "" {
		t.Errorf("places (-want +got):\n%s", diff)
	}
}

// BenchmarkPodWait: where one pod waits in a budget of 50,000 gated pods, by counting
// (PodWaitByName), against the first page of that queue (Page, which sorts it).
func BenchmarkPodWait(b *testing.B) {
	q, _ := newTestQueue()
	fill(q, 1, 50000)
	q.Admit()
	pod := benchPod("ns-0", 40000, 1000)
	b.Run("PodWaitByName", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if w, ok := q.Reader().PodWaitByName(pod.Namespace, pod.Name); !ok || len(w.Places) != 1 {
				b.Fatalf("%s: found %v, places %v", pod.Name, ok, w.Places)
			}
		}
	})
	b.Run("Page limit 1", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if p, ok := q.Reader().Page(BudgetKey{Namespace: "ns-0", Name: "b"}, 0, 1); !ok || len(p.Pods) != 1 {
				b.Fatalf("page: %v %v", ok, len(p.Pods))
			}
		}
	})
}

// Twins that come and go: whichever of them is forgotten first, the other is still
// found, and neither once both are gone.
func TestPodWaitByNameAfterDeletes(t *testing.T) {
	for _, first := range []string{"old", "new"} {
		t.Run("forget "+first+" first", func(t *testing.T) {
			q, _ := newTestQueue()
			q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=1").Obj())
			q.UpsertPod(makePod("running").Req("cpu=1").Ungated().Pod())
			for i, uid := range []string{"old", "new"} {
				p := makePod("twin").Created(i).Req("cpu=1").Obj()
				p.UID = types.UID(uid)
				q.UpsertPod(NewPod(p, v1alpha1.SchedulingGate, t0))
			}
			q.DeletePod(types.UID(first))
			got, ok := q.Reader().PodWaitByName("team-a", "twin")
			if !ok || got.Pod.UID == types.UID(first) {
				t.Fatalf("after forgetting %s: got %v (found %v)", first, got.Pod, ok)
			}
			q.DeletePod(got.Pod.UID)
			if _, ok := q.Reader().PodWaitByName("team-a", "twin"); ok {
				t.Fatal("found a pod after both twins were deleted")
			}
		})
	}
}
