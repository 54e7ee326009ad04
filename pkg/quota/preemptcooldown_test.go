package quota

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/labels"
	clocktesting "k8s.io/utils/clock/testing"
)

// churnScene is issue 46's eviction churn, in the core: ClusterBudget shared (1 CPU over
// every namespace) preempts lower priorities within it; team-b runs a pod of 1 CPU and
// priority 0 that a pod of priority 10 evicts. Each victim and each preemptor is a new
// pod.
type churnScene struct {
	t   *testing.T
	q   *AdmissionQueue
	clk *clocktesting.FakeClock
	n   int
}

func newChurnScene(t *testing.T, opts ...Option) *churnScene {
	t.Helper()
	q, clk := newTestQueue(opts...)
	q.UpsertBudget(makeBudget("", "shared").Hard("cpu=1").Namespaces(labels.Everything()).PreemptLowerPriority().Obj())
	return &churnScene{t: t, q: q, clk: clk}
}

// victim creates a running pod of team-b that fills the budget.
func (s *churnScene) victim() Pod {
	s.n++
	p := makePod(fmt.Sprintf("victim-%d", s.n)).NS("team-b").Req("cpu=1").Ungated().Pod()
	s.q.UpsertPod(p)
	return p
}

// preemptor creates a gated pod of 1 CPU and priority 10 in ns.
func (s *churnScene) preemptor(ns string) Pod {
	s.n++
	p := makePod(fmt.Sprintf("preemptor-%d", s.n)).NS(ns).Priority(10).Req("cpu=1").Pod()
	s.q.UpsertPod(p)
	return p
}

// cooldown runs Admit for a preemptor that has just been created and returns how long
// it waits before its victim is chosen: it waits with PreemptionPending and a message
// that says until when, the core wakes at that moment (NextWakeup), nothing is
// evicted a moment before, and its victim is at that moment.
func (s *churnScene) cooldown(by, victim Pod) time.Duration {
	s.t.Helper()
	start := s.clk.Now()
	s.q.Admit()
	if got := s.q.Preemptions(); len(got) != 0 {
		s.t.Fatalf("%s preempts %v at once", by.Name, got)
	}
	r, _ := s.q.Reader().WaitReason(by.UID)
	if r.Code != CodePreemptionPending || !strings.Contains(r.Message, "preemption pending: pods are evicted to make room for it in ClusterBudget shared once it has waited") {
		s.t.Fatalf("%s waits with %s: %s; want PreemptionPending, naming ClusterBudget shared", by.Name, r.Code, r.Message)
	}
	at, ok := s.q.NextWakeup()
	if !ok || !at.After(start) {
		s.t.Fatalf("NextWakeup() = %v, %t; want the end of the cooldown", at, ok)
	}
	if !strings.Contains(r.Message, at.UTC().Format(time.RFC3339)) {
		s.t.Errorf("%s's reason %q does not say when: %s", by.Name, r.Message, at.UTC().Format(time.RFC3339))
	}
	s.clk.SetTime(at.Add(-time.Millisecond))
	s.q.Admit()
	if got := s.q.Preemptions(); len(got) != 0 {
		s.t.Fatalf("%s preempts %v before its cooldown ends", by.Name, got)
	}
	s.clk.SetTime(at)
	s.q.Admit()
	got := s.q.Preemptions()
	if len(got) != 1 || got[0].Victim.UID != victim.UID || got[0].Preemptor.UID != by.UID {
		s.t.Fatalf("at the end of the cooldown: preemptions %+v, want %s evicted for %s", got, victim.Name, by.Name)
	}
	if code, _ := s.q.Reader().WaitCode(by.UID); code != CodeInsufficient {
		s.t.Errorf("%s waits with %s once its victim is chosen, want InsufficientQuota", by.Name, code)
	}
	return at.Sub(start)
}

// evict reports the victim's eviction, and its end.
func (s *churnScene) evict(victim Pod) {
	if !s.q.PreemptionNeeded(victim.UID) {
		s.t.Fatalf("%s is not needed any more", victim.Name)
	}
	s.q.Evicted(victim.UID)
	s.q.DeletePod(victim.UID)
}

// admit admits the preemptor, whose victim is gone.
func (s *churnScene) admit(by Pod) {
	s.t.Helper()
	if got := admitNames(s.q); len(got) != 1 || got[0] != by.Name {
		s.t.Fatalf("admitted %v, want %s", got, by.Name)
	}
}

func TestPreemptionCooldown(t *testing.T) {
	t.Run("a preemptor evicts nobody before it has waited the cooldown", func(t *testing.T) {
		s := newChurnScene(t)
		v := s.victim()
		s.clk.Step(5 * time.Second)
		if got := s.cooldown(s.preemptor("team-a"), v); got != DefaultPreemptionCooldown {
			t.Errorf("waited %s, want the default cooldown %s", got, DefaultPreemptionCooldown)
		}
	})
	t.Run("a pod that has waited long enough already preempts at once", func(t *testing.T) {
		s := newChurnScene(t)
		shared := makeBudget("", "shared").Hard("cpu=1").Namespaces(labels.Everything()).PreemptLowerPriority()
		s.q.UpsertBudget(shared.Closed().Obj())
		v := s.victim()
		by := s.preemptor("team-a") // waits: the budget is closed
		s.q.Admit()
		s.clk.Step(time.Minute)
		s.q.UpsertBudget(makeBudget("", "shared").Hard("cpu=1").Namespaces(labels.Everything()).PreemptLowerPriority().Obj())
		s.q.Admit()
		if got := s.q.Preemptions(); len(got) != 1 || got[0].Victim.UID != v.UID || got[0].Preemptor.UID != by.UID {
			t.Errorf("preemptions %+v, want %s evicted at once for %s, which waited a minute", got, v.Name, by.Name)
		}
	})
	t.Run("off: victims at once", func(t *testing.T) {
		s := newChurnScene(t, victimsAtOnce)
		v := s.victim()
		by := s.preemptor("team-a")
		s.q.Admit()
		if got := s.q.Preemptions(); len(got) != 1 || got[0].Victim.UID != v.UID || got[0].Preemptor.UID != by.UID {
			t.Errorf("preemptions %+v, want %s evicted at once", got, v.Name)
		}
	})
	t.Run("a preemptor deleted in its cooldown costs nothing, and no backoff", func(t *testing.T) {
		s := newChurnScene(t)
		v := s.victim()
		for range 3 {
			by := s.preemptor("team-a")
			s.q.Admit()
			s.clk.Step(10 * time.Second)
			s.q.DeletePod(by.UID)
			s.q.Admit()
			if got := s.q.Preemptions(); len(got) != 0 {
				t.Fatalf("preemptions %+v for a pod deleted in its cooldown", got)
			}
		}
		if got := s.cooldown(s.preemptor("team-a"), v); got != DefaultPreemptionCooldown {
			t.Errorf("after three deleted in their cooldown, the next waits %s, want %s", got, DefaultPreemptionCooldown)
		}
	})
}

// A namespace whose preemptors vanish backs off: how its next preemptor's cooldown
// depends on what became of the one before, after its victim was evicted.
func TestPreemptionBackoff(t *testing.T) {
	const base = DefaultPreemptionCooldown
	for name, tc := range map[string]struct {
		// then is what becomes of the first preemptor once its victim is evicted.
		then func(s *churnScene, by Pod)
		want time.Duration // the next preemptor's cooldown
	}{
		"deleted while it waits: doubled": {
			then: func(s *churnScene, by Pod) { s.q.DeletePod(by.UID) },
			want: 2 * base,
		},
		"admitted, then deleted within the cooldown: doubled": {
			then: func(s *churnScene, by Pod) {
				s.admit(by)
				s.clk.Step(base - time.Second)
				s.q.DeletePod(by.UID)
			},
			want: 2 * base,
		},
		"admitted, then ends within the cooldown: doubled": {
			then: func(s *churnScene, by Pod) {
				s.admit(by)
				s.q.UpsertPod(makePod(by.Name).NS(by.Namespace).Priority(10).Req("cpu=1").Ungated().Phase("Succeeded").RV(5).Pod())
			},
			want: 2 * base,
		},
		"admitted and run past the cooldown: not doubled": {
			then: func(s *churnScene, by Pod) {
				s.admit(by)
				s.clk.Step(base)
				s.q.DeletePod(by.UID)
			},
			want: base,
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := newChurnScene(t)
			v := s.victim()
			by := s.preemptor("team-a")
			s.cooldown(by, v)
			s.evict(v)
			tc.then(s, by)
			next := s.victim()
			if got := s.cooldown(s.preemptor("team-a"), next); got != tc.want {
				t.Errorf("the next preemptor of team-a waits %s, want %s", got, tc.want)
			}
		})
	}
}

// A preemptor relabelled out of the Budget its victims were evicted in, and admitted by
// another, vanished: its room went unused.
func TestPreemptionBackoffAdmittedElsewhere(t *testing.T) {
	q, clk := newTestQueue()
	s := &churnScene{t: t, q: q, clk: clk}
	q.UpsertBudget(makeBudget("team-a", "web").Hard("cpu=1").Selector("app", "web").PreemptLowerPriority().Obj())
	q.UpsertBudget(makeBudget("team-a", "all").Hard("cpu=10").Obj())
	low := makePod("low").Label("app", "web").Req("cpu=1").Ungated().Pod()
	q.UpsertPod(low)
	by := makePod("by").Label("app", "web").Priority(10).Req("cpu=1").Pod()
	q.UpsertPod(by)
	q.Admit()
	clk.Step(DefaultPreemptionCooldown)
	q.Admit()
	if got := q.Preemptions(); len(got) != 1 || got[0].Budget != (BudgetKey{Namespace: "team-a", Name: "web"}) {
		t.Fatalf("preemptions %+v, want low evicted in Budget team-a/web", got)
	}
	s.evict(low)
	relabelled := makePod("by").Priority(10).Req("cpu=1").RV(2).Pod()
	q.UpsertPod(relabelled)
	if got := admitNames(q); !cmp.Equal(got, []string{"by"}) {
		t.Fatalf("admitted %v, want by, in Budget team-a/all alone", got)
	}
	low2 := makePod("low2").Label("app", "web").Req("cpu=1").Ungated().Pod()
	q.UpsertPod(low2)
	next := makePod("next").Label("app", "web").Priority(10).Req("cpu=1").Pod()
	q.UpsertPod(next)
	q.Admit()
	r, _ := q.Reader().WaitReason(next.UID)
	if !strings.Contains(r.Message, "once it has waited 1m0s") || !strings.Contains(r.Message, "doubled 1 time(s)") {
		t.Errorf("the next preemptor waits with %q; want a cooldown of 1m0s, doubled once", r.Message)
	}
}

// The backoff doubles per vanished preemptor up to its most, is its namespace's
// alone, and falls back by one doubling for each maxBackoff without one.
func TestPreemptionBackoffSchedule(t *testing.T) {
	s := newChurnScene(t, WithPreemptionCooldown(10*time.Second, time.Minute))
	var got []time.Duration
	for range 5 {
		v := s.victim()
		by := s.preemptor("team-a")
		got = append(got, s.cooldown(by, v))
		s.evict(v)
		s.q.DeletePod(by.UID) // vanished
	}
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, time.Minute, time.Minute}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cooldowns of team-a's vanishing preemptors (-want +got):\n%s", diff)
	}
	v, c := s.victim(), s.preemptor("team-c")
	if got := s.cooldown(c, v); got != 10*time.Second {
		t.Errorf("team-c's first preemptor waits %s, want 10s: team-a's backoff is its own", got)
	}
	s.evict(v)
	s.q.DeletePod(c.UID)        // team-c's vanishing is team-c's alone
	s.clk.Step(2 * time.Minute) // two quiet maxBackoffs: 3 doublings, less 2
	if got := s.cooldown(s.preemptor("team-a"), s.victim()); got != 20*time.Second {
		t.Errorf("after two quiet minutes team-a waits %s, want 20s (one doubling left)", got)
	}
}

// How the part judges a preemptor when it goes, for what AdmissionQueue cannot set up
// in order: an eviction accepted after its preemptor was deleted, and a preemptor that
// the manager evicted itself soon after its admission.
func TestPreemptorJudgedWhenItGoes(t *testing.T) {
	const base = 10 * time.Second
	for name, tc := range map[string]struct {
		then func(pr *preemptions, clk *clocktesting.FakeClock, urgent, victim *podState)
		want time.Duration // team-a's cooldown after
	}{
		"deleted while its victim's eviction was under way: vanished": {
			then: func(pr *preemptions, _ *clocktesting.FakeClock, urgent, victim *podState) {
				urgent.forgotten = true // deleted first
				pr.forget(urgent)
				pr.evicted(victim) // then the eviction is accepted
			},
			want: 2 * base,
		},
		"admitted, and gone a second later: vanished": {
			then: func(pr *preemptions, clk *clocktesting.FakeClock, urgent, victim *podState) {
				pr.evicted(victim)
				pr.preemptorAdmitted(urgent, []BudgetKey{{Namespace: "team-a", Name: "a"}})
				clk.Step(time.Second)
				pr.forget(urgent)
			},
			want: 2 * base,
		},
		"admitted, and evicted by the manager a second later: not its namespace's doing": {
			then: func(pr *preemptions, clk *clocktesting.FakeClock, urgent, victim *podState) {
				pr.evicted(victim)
				pr.preemptorAdmitted(urgent, []BudgetKey{{Namespace: "team-a", Name: "a"}})
				urgent.phase = phaseCharged
				clk.Step(time.Second)
				pr.evicted(urgent)
				pr.forget(urgent)
			},
			want: base,
		},
		"deleted before any eviction for it was accepted: nothing to count": {
			then: func(pr *preemptions, _ *clocktesting.FakeClock, urgent, _ *podState) {
				urgent.forgotten = true
				pr.forget(urgent)
			},
			want: base,
		},
	} {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			b, _, _, low2 := fullBudget(t)
			core := newFakeCore()
			pr := newPreemptions(core, clk, base, time.Minute)
			urgent := waitingIn(core, b, "urgent", 10) // seen at the zero time: waited long enough
			if got := decideFor(&pr, urgent); !cmp.Equal(got, []string{"low2"}) {
				t.Fatalf("victims %v, want low2", got)
			}
			tc.then(&pr, clk, urgent, low2)
			if got, _ := pr.cooldownOf("team-a", clk.Now()); got != tc.want {
				t.Errorf("team-a's cooldown %s, want %s", got, tc.want)
			}
		})
	}
}
