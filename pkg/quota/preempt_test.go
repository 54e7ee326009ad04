package quota

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// victimNames returns the victims decided since the last call, sorted, and checks that
// each names its preemptor and is still needed.
func victimNames(t *testing.T, q *AdmissionQueue) []string {
	t.Helper()
	var out []string
	for _, p := range q.Preemptions() {
		if !q.PreemptionNeeded(p.Victim.UID) {
			t.Errorf("%s was just chosen, but is not needed", p.Victim)
		}
		if p.Preemptor.Name == "" || p.VictimMessage == "" || p.PreemptorMessage == "" {
			t.Errorf("preemption of %s does not say for whom or why: %+v", p.Victim, p)
		}
		out = append(out, p.Victim.Name)
	}
	slices.Sort(out)
	return out
}

// family is ClusterBudget org (hard cpu=8) over Budget team-a/a (hard cpu=4, may borrow
// 4) and Budget team-b/b (hard cpu=4), with b as given.
func family(q *AdmissionQueue, b *budgetBuilder) {
	q.UpsertBudget(makeBudget("", "org").Hard("cpu=8").Obj())
	q.UpsertBudget(makeBudget("team-a", "a").Hard("cpu=4").Borrow("cpu=4").Parent("org").Obj())
	q.UpsertBudget(b.Hard("cpu=4").Parent("org").Obj())
}

func TestReclaim(t *testing.T) {
	type pod struct {
		name     string
		cpu      string
		priority int32
	}
	for name, tc := range map[string]struct {
		b       *budgetBuilder
		a       []pod // team-a's pods, admitted in this order (borrowing past cpu=4)
		bWants  []pod // team-b's pods, created after
		victims []string
		code    ReasonCode // why team-b's first pod waits
	}{
		"the most recently admitted borrowing pods make room": {
			b:       makeBudget("team-b", "b"),
			a:       []pod{{"a1", "1", 0}, {"a2", "1", 0}, {"a3", "1", 0}, {"a4", "1", 0}, {"a5", "1", 0}, {"a6", "1", 0}, {"a7", "1", 0}, {"a8", "1", 0}},
			bWants:  []pod{{"b1", "1", 0}, {"b2", "1", 0}},
			victims: []string{"a7", "a8"},
			code:    CodeNoLendable,
		},
		"lowest priority first among the borrowing pods, however old": {
			b:       makeBudget("team-b", "b"),
			a:       []pod{{"a1", "1", 5}, {"a2", "1", 5}, {"a3", "1", 5}, {"a4", "1", 5}, {"a5", "1", 0}, {"a6", "1", 5}, {"a7", "1", 5}, {"a8", "1", 5}},
			bWants:  []pod{{"b1", "1", 0}},
			victims: []string{"a5"},
			code:    CodeNoLendable,
		},
		"the set is minimal: a small victim the big one makes room without is spared": {
			b:       makeBudget("team-b", "b"),
			a:       []pod{{"a1", "4", 0}, {"a2", "3", 0}, {"a3", "1", 0}},
			bWants:  []pod{{"b1", "3", 0}},
			victims: []string{"a2"},
			code:    CodeNoLendable,
		},
		"reclaim: Never waits for borrowed pods to end": {
			b:      makeBudget("team-b", "b").Reclaim(v1alpha1.ReclaimNever),
			a:      []pod{{"a1", "4", 0}, {"a2", "4", 0}},
			bWants: []pod{{"b1", "1", 0}},
			code:   CodeNoLendable,
		},
		"an unknown reclaim value (past an older CRD) evicts nobody": {
			b:      makeBudget("team-b", "b").Reclaim("Always"),
			a:      []pod{{"a1", "4", 0}, {"a2", "4", 0}},
			bWants: []pod{{"b1", "1", 0}},
			code:   CodeNoLendable,
		},
		"reclaim: LowerPriority spares pods of equal priority": {
			b:      makeBudget("team-b", "b").Reclaim(v1alpha1.ReclaimLowerPriority),
			a:      []pod{{"a1", "4", 0}, {"a2", "4", 0}},
			bWants: []pod{{"b1", "1", 0}},
			code:   CodeNoLendable,
		},
		"reclaim: LowerPriority takes pods of lower priority": {
			b:       makeBudget("team-b", "b").Reclaim(v1alpha1.ReclaimLowerPriority),
			a:       []pod{{"a1", "4", 0}, {"a2", "4", 0}},
			bWants:  []pod{{"b1", "1", 10}},
			victims: []string{"a2"},
			code:    CodeNoLendable,
		},
		"a pod that would borrow itself reclaims nothing": {
			b:      makeBudget("team-b", "b").Borrow("cpu=4"),
			a:      []pod{{"a1", "4", 0}, {"a2", "4", 0}},
			bWants: []pod{{"b1", "5", 0}},
			code:   CodeNoLendable,
		},
		"a sibling keeps its hard: a smaller pod within the borrowed part goes, not the borrowing one": {
			// team-a runs 5 of its hard 4; the 4-CPU pod carries quotagate.io/borrowing,
			// but evicting it would leave team-a 1 CPU.
			b:       makeBudget("team-b", "b"),
			a:       []pod{{"a1", "1", 0}, {"a2", "4", 0}},
			bWants:  []pod{{"b1", "4", 0}},
			victims: []string{"a1"},
			code:    CodeNoLendable,
		},
		"a sibling keeps its hard even for a pod of higher priority": {
			b:       makeBudget("team-b", "b"),
			a:       []pod{{"a1", "1", 9}, {"a2", "4", 0}},
			bWants:  []pod{{"b1", "4", 0}},
			victims: []string{"a1"},
			code:    CodeNoLendable,
		},
		"nobody goes when every victim would take the sibling below its hard": {
			// A pod of 5 under hard 4: 1 CPU borrowed, 4 its own. The lender waits for
			// it to end.
			b:      makeBudget("team-b", "b"),
			a:      []pod{{"a1", "5", 0}},
			bWants: []pod{{"b1", "4", 0}},
			code:   CodeNoLendable,
		},
		"several small victims rather than one that takes the sibling below its hard": {
			b:       makeBudget("team-b", "b"),
			a:       []pod{{"a1", "1", 0}, {"a2", "1", 0}, {"a3", "4", 0}},
			bWants:  []pod{{"b1", "4", 0}},
			victims: []string{"a1", "a2"},
			code:    CodeNoLendable,
		},
		"a budget within its hard is not a victim": {
			b:      makeBudget("team-b", "b"),
			a:      []pod{{"a1", "1", 0}, {"a2", "1", 0}},
			bWants: []pod{{"b1", "4", 0}, {"b2", "1", 0}},
			code:   CodeInsufficient, // b2 is over b's own hard; b1 was admitted
		},
	} {
		t.Run(name, func(t *testing.T) {
			q, clk := newTestQueue(victimsAtOnce)
			family(q, tc.b)
			for i, p := range tc.a {
				q.UpsertPod(makePod(p.name).NS("team-a").Created(i).Priority(p.priority).Req("cpu=" + p.cpu).Pod())
				if got := admitNames(q); len(got) != 1 {
					t.Fatalf("team-a's %s: admitted %v", p.name, got)
				}
				clk.Step(1e9)
			}
			for i, p := range tc.bWants {
				q.UpsertPod(makePod(p.name).NS("team-b").Created(100 + i).Priority(p.priority).Req("cpu=" + p.cpu).Pod())
			}
			admitted := admitNames(q)
			if diff := cmp.Diff(tc.victims, victimNames(t, q)); diff != "" {
				t.Fatalf("victims (-want +got):\n%s", diff)
			}
			var waiting Pod
			for _, p := range tc.bWants {
				if !slices.Contains(admitted, p.name) {
					waiting = makePod(p.name).NS("team-b").Pod()
					break
				}
			}
			if code, _ := q.Reader().WaitCode(waiting.UID); code != tc.code {
				r, _ := q.Reader().WaitReason(waiting.UID)
				t.Errorf("%s waits with %s (%s), want %s", waiting.Name, code, r.Message, tc.code)
			}
			if len(tc.victims) == 0 {
				return
			}
			// Asked again (the periodic flush), the core takes no more: the room is coming.
			clk.Step(2 * DefaultFlushInterval)
			if got := admitNames(q); len(got) != 0 {
				t.Errorf("admitted %v before the victims ended", got)
			}
			if got := victimNames(t, q); len(got) != 0 {
				t.Errorf("a second evaluation chose more victims: %v", got)
			}
			// The victims end (evicted): the room goes to team-b, not back to team-a.
			for _, v := range tc.victims {
				q.DeletePod(makePod(v).NS("team-a").Pod().UID)
			}
			got := admitNames(q)
			if !slices.Contains(got, waiting.Name) || slices.ContainsFunc(got, func(n string) bool { return strings.HasPrefix(n, "a") }) {
				t.Errorf("after the victims ended, admitted %v; want %s and no pod of team-a", got, waiting.Name)
			}
		})
	}
}

func TestReclaimCountsPodsAlreadyLeaving(t *testing.T) {
	q, _ := newTestQueue(victimsAtOnce)
	family(q, makeBudget("team-b", "b"))
	for i := range 8 {
		q.UpsertPod(makePod("a" + string(rune('1'+i))).NS("team-a").Created(i).Req("cpu=1").Pod())
	}
	if got := admitNames(q); len(got) != 8 {
		t.Fatalf("team-a admitted %v, want 8 pods", got)
	}
	// a1 is terminating, within its grace period: it still counts, and will end.
	leaving := makePod("a1").NS("team-a").Created(0).Req("cpu=1").Ungated().Obj()
	leaving.DeletionTimestamp = &metav1.Time{Time: t0}
	leaving.DeletionGracePeriodSeconds = new(int64(30))
	q.UpsertPod(NewPod(leaving, v1alpha1.SchedulingGate, t0))
	q.UpsertPod(makePod("b1").NS("team-b").Created(100).Req("cpu=1").Pod())
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v while the family is full", got)
	}
	if got := victimNames(t, q); len(got) != 0 {
		t.Errorf("evicted %v though a terminating pod makes the room", got)
	}
	// A second pod of team-b needs a victim: one, not two.
	q.UpsertPod(makePod("b2").NS("team-b").Created(101).Req("cpu=1").Pod())
	q.UpsertPod(makePod("b1").NS("team-b").Created(100).Priority(1).Req("cpu=1").Pod()) // wake the family
	admitNames(q)
	if got := victimNames(t, q); len(got) != 1 {
		t.Errorf("victims %v, want one: a1 leaving makes room for the other", got)
	}
}

func TestPreemptionNeeded(t *testing.T) {
	q, _ := newTestQueue(victimsAtOnce)
	family(q, makeBudget("team-b", "b"))
	q.UpsertPod(makePod("a0").NS("team-a").Req("cpu=4").Pod())
	q.UpsertPod(makePod("a1").NS("team-a").Created(1).Req("cpu=4").Pod())
	admitNames(q)
	q.UpsertPod(makePod("b1").NS("team-b").Created(10).Req("cpu=1").Pod())
	admitNames(q)
	if got := victimNames(t, q); !slices.Equal(got, []string{"a1"}) {
		t.Fatalf("victims %v, want a1", got)
	}
	// The pod that needed the room is deleted: the eviction is no longer needed.
	q.DeletePod(makePod("b1").NS("team-b").Pod().UID)
	if q.PreemptionNeeded(makePod("a1").NS("team-a").Pod().UID) {
		t.Error("a1 is still to be evicted after the pod it made room for was deleted")
	}
	if q.PreemptionNeeded("never-chosen") {
		t.Error("an unknown pod is to be evicted")
	}
}

func TestPreemptWithinBudget(t *testing.T) {
	for name, tc := range map[string]struct {
		budget   *budgetBuilder
		priority int32
		victims  []string
	}{
		"lower priority pods make room, most recent first": {
			budget:   makeBudget("team-a", "a").PreemptLowerPriority(),
			priority: 10,
			victims:  []string{"low2"},
		},
		"equal priority is never preempted": {
			budget:   makeBudget("team-a", "a").PreemptLowerPriority(),
			priority: 1,
		},
		"off by default": {
			budget:   makeBudget("team-a", "a"),
			priority: 10,
		},
	} {
		t.Run(name, func(t *testing.T) {
			q, clk := newTestQueue(victimsAtOnce)
			q.UpsertBudget(tc.budget.Hard("cpu=3").Obj())
			for i, n := range []string{"high", "low1", "low2"} {
				prio := int32(1)
				if n == "high" {
					prio = 20
				}
				q.UpsertPod(makePod(n).Created(i).Priority(prio).Req("cpu=1").Pod())
				admitNames(q)
				clk.Step(1e9)
			}
			q.UpsertPod(makePod("urgent").Created(10).Priority(tc.priority).Req("cpu=1").Pod())
			if got := admitNames(q); len(got) != 0 {
				t.Fatalf("admitted %v into a full budget", got)
			}
			if diff := cmp.Diff(tc.victims, victimNames(t, q)); diff != "" {
				t.Errorf("victims (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPreemptionTakesAGroupWhole(t *testing.T) {
	q, _ := newTestQueue(victimsAtOnce)
	family(q, makeBudget("team-b", "b"))
	q.UpsertPod(makePod("a0").NS("team-a").Req("cpu=4").Pod())
	admitNames(q)
	for _, n := range []string{"g1", "g2"} {
		q.UpsertPod(makePod(n).NS("team-a").Created(5).Group("train", 2).Req("cpu=2").Pod())
	}
	if got := admitNames(q); len(got) != 2 {
		t.Fatalf("the group: admitted %v", got)
	}
	q.UpsertPod(makePod("b1").NS("team-b").Created(10).Req("cpu=1").Pod())
	admitNames(q)
	if diff := cmp.Diff([]string{"g1", "g2"}, victimNames(t, q)); diff != "" {
		t.Errorf("victims (-want +got):\n%s", diff)
	}
}

// A member that runs without having passed its queue and carries a value beyond
// counting still belongs to its group: the group goes whole, that member with it.
func TestPreemptionTakesARunningUncountableMemberWithItsGroup(t *testing.T) {
	q, _ := newTestQueue(victimsAtOnce)
	family(q, makeBudget("team-b", "b"))
	q.UpsertPod(makePod("a0").NS("team-a").Req("cpu=4").Pod())
	admitNames(q)
	q.UpsertPod(makePod("g1").NS("team-a").Created(5).Group("train", 2).Req("cpu=2").Lim("memory=1e25").Ungated().Pod())
	q.UpsertPod(makePod("g2").NS("team-a").Created(5).Group("train", 2).Req("cpu=2").Pod())
	admitNames(q)
	q.UpsertPod(makePod("b1").NS("team-b").Created(10).Req("cpu=1").Pod())
	admitNames(q)
	if diff := cmp.Diff([]string{"g1", "g2"}, victimNames(t, q)); diff != "" {
		t.Errorf("victims (-want +got):\n%s", diff)
	}
}
