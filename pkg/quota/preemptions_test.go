package quota

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// The preemption part alone, with no AdmissionQueue: a fakeCore stands for the rest of
// the core, with budgets that are not in a family.

// fakeCore answers the part's questions for budgets outside any family: a unit fits
// when each of its budgets has room for it.
type fakeCore struct {
	leaving []*podState // terminating, within their grace period
}

func (c *fakeCore) capacityWait(budgets []*budget, add demand) (waitInfo, bool) {
	for _, b := range budgets {
		a := add(b)
		if r, over := b.ledger.Excess(a); over {
			return waitInfo{code: CodeInsufficient, budget: b, resource: r, requested: a[r]}, true
		}
	}
	return waitInfo{}, false
}
func (c *fakeCore) stuck(*podState) bool            { return false }
func (c *fakeCore) terminating() []*podState        { return c.leaving }
func (c *fakeCore) lendWaiters(*budget) []*podState { return nil }
func (c *fakeCore) markStatus(*budget)              {}
func newFakeCore() *fakeCore                        { return &fakeCore{} }

// partWithoutCooldown is the part on core, with the cooldown off: victims are chosen at
// once (preemptcooldown_test.go tests the cooldown).
func partWithoutCooldown(core preemptionCore) preemptions {
	return newPreemptions(core, clocktesting.NewFakeClock(t0), 0, 0)
}

// runningIn returns a pod of 1 CPU charged to b, admitted at t0 plus admitted seconds.
func runningIn(b *budget, name string, prio int32, admitted int) *podState {
	p := &podState{pod: makePod(name).Priority(prio).Req("cpu=1").Pod(), phase: phaseCharged, attempt: podAttempt{admittedAt: at(admitted)}}
	p.charge.to, p.charge.usage = []*budget{b}, p.usage()
	b.ledger.Charge(p.pod.UID, p, p.usage(), p.pod.Usage, nil)
	return p
}

// waitingIn returns a gated pod of 1 CPU that does not fit in b, with its wait.
func waitingIn(c *fakeCore, b *budget, name string, prio int32) *podState {
	p := &podState{pod: makePod(name).Priority(prio).Req("cpu=1").Pod(), phase: phaseWaiting, cover: []*budget{b}}
	p.wait, _ = c.capacityWait(p.cover, usageDemand(p.usage()))
	return p
}

func podNames(pods []*podState) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.pod.Name)
	}
	return out
}

// decideFor asks the part for a waiting pod alone and returns the names of the victims
// it hands out.
func decideFor(pr *preemptions, p *podState) []string {
	pr.decide([]*podState{p}, p.cover, usageDemand(p.usage()), p.wait)
	var out []string
	for _, d := range pr.take() {
		out = append(out, d.Victim.Name)
	}
	slices.Sort(out)
	return out
}

// Which running pods are candidates at all, and grouped how: the filter before the
// order.
func TestVictimCandidates(t *testing.T) {
	pod := func(name string, phase podPhase) *podState {
		return &podState{pod: makePod(name).Pod(), phase: phase}
	}
	running := func(name string) *podState { return pod(name, phaseCharged) }
	inGroup := func(g *group, ps ...*podState) {
		g.members = map[types.UID]*podState{}
		for _, p := range ps {
			p.group, g.members[p.pod.UID] = g, p
		}
	}
	for name, tc := range map[string]struct {
		// setup returns the candidates' pods and the preemptor's unit.
		setup func(pr *preemptions) (pods, preemptor []*podState)
		want  [][]string
	}{
		"running pods, each alone, in order": {
			setup: func(*preemptions) ([]*podState, []*podState) {
				assumed := pod("b", phaseAssumed) // its ungate reported applied
				return []*podState{running("c"), assumed, running("a")}, nil
			},
			want: [][]string{{"a"}, {"b"}, {"c"}},
		},
		"not known to run: waiting, ungate in flight or unresolved": {
			setup: func(*preemptions) ([]*podState, []*podState) {
				flight, unresolved := pod("flight", phaseAssumed), pod("unresolved", phaseAssumed)
				flight.attempt.inFlight, unresolved.attempt.unresolved = true, true
				return []*podState{pod("waiting", phaseWaiting), flight, unresolved, running("run")}, nil
			},
			want: [][]string{{"run"}},
		},
		"gone already: evicted, chosen, terminating": {
			setup: func(pr *preemptions) ([]*podState, []*podState) {
				evicted, chosen, ending := running("evicted"), running("chosen"), running("ending")
				pr.evicting[evicted] = struct{}{}
				pr.victims[chosen] = &victim{}
				ending.pod.ReleaseAt = at(30)
				return []*podState{evicted, chosen, ending, running("run")}, nil
			},
			want: [][]string{{"run"}},
		},
		"the preemptor's own unit is never a victim": {
			setup: func(*preemptions) ([]*podState, []*podState) {
				me, other := running("me"), running("other")
				return []*podState{me, other}, []*podState{me}
			},
			want: [][]string{{"other"}},
		},
		"a group goes whole, its running members only": {
			setup: func(*preemptions) ([]*podState, []*podState) {
				g2, g1, gated := running("g2"), running("g1"), pod("g3", phaseWaiting)
				inGroup(&group{}, g2, g1, gated)
				return []*podState{g2, running("solo"), g1}, nil
			},
			want: [][]string{{"g1", "g2"}, {"solo"}},
		},
		"a group with a member that is not a candidate: none": {
			setup: func(*preemptions) ([]*podState, []*podState) {
				g1, g2 := running("g1"), running("g2") // g2 is of another budget
				inGroup(&group{}, g1, g2)
				return []*podState{g1, running("solo")}, nil
			},
			want: [][]string{{"solo"}},
		},
		"a group with a member gone already: none": {
			setup: func(pr *preemptions) ([]*podState, []*podState) {
				g1, g2 := running("g1"), running("g2")
				inGroup(&group{}, g1, g2)
				pr.evicting[g2] = struct{}{}
				return []*podState{g1, g2}, nil
			},
			want: nil,
		},
		"a group with the preemptor in it: none": {
			setup: func(*preemptions) ([]*podState, []*podState) {
				g1, g2 := running("g1"), running("g2")
				inGroup(&group{}, g1, g2)
				return []*podState{g1, g2}, []*podState{g2}
			},
			want: nil,
		},
		"refused units go last": {
			setup: func(pr *preemptions) ([]*podState, []*podState) {
				refused := running("a-refused")
				pr.blockedAt[refused] = t0
				return []*podState{refused, running("b")}, nil
			},
			want: [][]string{{"b"}, {"a-refused"}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			pr := partWithoutCooldown(newFakeCore())
			pods, preemptor := tc.setup(&pr)
			var got [][]string
			for _, c := range pr.victimCandidates(pods, preemptor) {
				var names []string
				for _, p := range c.unit {
					names = append(names, p.pod.Name)
				}
				got = append(got, names)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("candidates (-want +got):\n%s", diff)
			}
		})
	}
}

// A budget of 3 CPU that preempts lower priorities, full with high (priority 20),
// low1 and low2 (priority 1, admitted in that order).
func fullBudget(t *testing.T) (b *budget, high, low1, low2 *podState) {
	t.Helper()
	b = newBudget(makeBudget("team-a", "a").Hard("cpu=3").PreemptLowerPriority().Obj())
	return b, runningIn(b, "high", 20, 0), runningIn(b, "low1", 1, 1), runningIn(b, "low2", 1, 2)
}

// Decisions within a budget, and what the part remembers of them: a victim is handed
// out once, needed while its preemptor waits, and what is on its way out is not taken
// twice.
func TestPreemptionsDecide(t *testing.T) {
	t.Run("lowest priority, most recent first; handed out once", func(t *testing.T) {
		b, _, _, _ := fullBudget(t)
		core := newFakeCore()
		pr := partWithoutCooldown(core)
		urgent := waitingIn(core, b, "urgent", 10)
		used := b.ledger.Used().Clone()
		if diff := cmp.Diff([]string{"low2"}, decideFor(&pr, urgent)); diff != "" {
			t.Errorf("victims (-want +got):\n%s", diff)
		}
		if got := pr.take(); len(got) != 0 {
			t.Errorf("handed out again: %v", got)
		}
		if diff := cmp.Diff(used, b.ledger.Used()); diff != "" {
			t.Errorf("the ledger after the decision is not as before (-before +after):\n%s", diff)
		}
	})
	t.Run("equal priority is never preempted", func(t *testing.T) {
		b, _, _, _ := fullBudget(t)
		core := newFakeCore()
		pr := partWithoutCooldown(core)
		if got := decideFor(&pr, waitingIn(core, b, "peer", 1)); len(got) != 0 {
			t.Errorf("victims %v, want none", got)
		}
	})
	t.Run("needed while the preemptor waits, then woken", func(t *testing.T) {
		b, _, _, low2 := fullBudget(t)
		core := newFakeCore()
		pr := partWithoutCooldown(core)
		urgent := waitingIn(core, b, "urgent", 10)
		decideFor(&pr, urgent)
		if ok, wake := pr.needed(low2); !ok || wake != nil {
			t.Errorf("needed(low2) = %t, %v; want true, nil", ok, wake)
		}
		urgent.forgotten = true // deleted: the core dropped its record
		if ok, wake := pr.needed(low2); ok || wake != b {
			t.Errorf("needed(low2) after its preemptor was deleted = %t, %v; want false, the budget to wake", ok, wake)
		}
		if ok, _ := pr.needed(low2); ok {
			t.Error("low2 is still a victim")
		}
	})
	t.Run("what is on its way out is not taken twice", func(t *testing.T) {
		b, _, low1, low2 := fullBudget(t)
		core := newFakeCore()
		pr := partWithoutCooldown(core)
		decideFor(&pr, waitingIn(core, b, "first", 10))
		// low2's room is first's: the second pod needs low1.
		if diff := cmp.Diff([]string{"low1"}, decideFor(&pr, waitingIn(core, b, "second", 10))); diff != "" {
			t.Errorf("victims for the second pod (-want +got):\n%s", diff)
		}
		// Evicted, low2 counts as leaving before it is seen terminating, and once it
		// is, it is in the core's list, not twice.
		pr.evicted(low2)
		if got := pr.leaving(); !slices.Equal(got, []*podState{low2}) {
			t.Errorf("leaving %v, want low2 alone", podNames(got))
		}
		if ok, _ := pr.needed(low2); ok {
			t.Error("low2 is still a victim once evicted")
		}
		low2.pod.ReleaseAt = at(30)
		core.leaving = []*podState{low2}
		if got := pr.leaving(); !slices.Equal(got, []*podState{low2}) {
			t.Errorf("leaving once terminating %v, want low2 once", podNames(got))
		}
		if !low1.preemption.kept || !low2.preemption.kept {
			t.Errorf("marked for forget: low1 %t, low2 %t; want both", low1.preemption.kept, low2.preemption.kept)
		}
		pr.forget(low2)
		pr.forget(low1)
		if len(pr.evicting) != 0 || len(pr.victims) != 0 {
			t.Errorf("after forget: evicting %v, victims %v; want none", pr.evicting, pr.victims)
		}
	})
	t.Run("evicted does not apply to a waiting pod", func(t *testing.T) {
		b, _, _, _ := fullBudget(t)
		core := newFakeCore()
		pr := partWithoutCooldown(core)
		gated := waitingIn(core, b, "gated", 1)
		pr.evicted(gated)
		if len(pr.evicting) != 0 || gated.preemption.kept {
			t.Errorf("evicting %v, marked %t; want none, false", pr.evicting, gated.preemption.kept)
		}
	})
}

// A PodDisruptionBudget's refusal: the choice is made again with the refused pod
// last; it stays the victim only when nothing else makes room.
func TestPreemptionsRefused(t *testing.T) {
	t.Run("another victim in its place", func(t *testing.T) {
		b, _, low1, low2 := fullBudget(t)
		core := newFakeCore()
		pr := partWithoutCooldown(core)
		decideFor(&pr, waitingIn(core, b, "urgent", 10))
		retry, since, _ := pr.refused(low2, at(50))
		if retry || !since.Equal(at(50)) {
			t.Errorf("refused(low2) = %t, %v; want false, the time of the refusal", retry, since)
		}
		var got []string
		for _, d := range pr.take() {
			got = append(got, d.Victim.Name)
			if !strings.Contains(d.VictimMessage, "urgent") {
				t.Errorf("message %q does not name the preemptor", d.VictimMessage)
			}
		}
		if diff := cmp.Diff([]string{"low1"}, got); diff != "" {
			t.Errorf("victims after the refusal (-want +got):\n%s", diff)
		}
		if ok, _ := pr.needed(low2); ok {
			t.Error("low2 is still needed")
		}
		if ok, _ := pr.needed(low1); !ok {
			t.Error("low1 is not needed")
		}
	})
	t.Run("no other victim: retried, not handed out twice, first refusal kept", func(t *testing.T) {
		b, _, low1, low2 := fullBudget(t)
		low1.pod.Priority = 15 // above the preemptor: not a candidate
		core := newFakeCore()
		pr := partWithoutCooldown(core)
		decideFor(&pr, waitingIn(core, b, "urgent", 10))
		for i, now := range []time.Time{at(50), at(80)} {
			retry, since, _ := pr.refused(low2, now)
			if !retry || !since.Equal(at(50)) {
				t.Errorf("refusal %d: refused(low2) = %t, %v; want true, the first refusal's time", i, retry, since)
			}
			if got := pr.take(); len(got) != 0 {
				t.Errorf("refusal %d: handed out %v again", i, got)
			}
		}
	})
	t.Run("a pod that is no victim", func(t *testing.T) {
		_, high, _, _ := fullBudget(t)
		pr := partWithoutCooldown(newFakeCore())
		if retry, since, _ := pr.refused(high, at(5)); retry || !since.Equal(at(5)) {
			t.Errorf("refused(high) = %t, %v; want false, now", retry, since)
		}
		if !high.preemption.kept {
			t.Error("a refused pod is not marked for forget")
		}
	})
}
