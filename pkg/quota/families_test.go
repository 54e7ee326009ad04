package quota

import (
	"fmt"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
)

// The family part alone, with no AdmissionQueue: a topology of one parent and two
// members, ledgers charged by hand, and a fakeFamilyCore for the rest of the core.

// fakeFamilyCore answers the part's questions: a unit fits when each of its budgets
// has room under its ceiling; it records what the part wakes and activates.
type fakeFamilyCore struct {
	woken     []string // budgets woken, by name
	activated []string // pods moved back to active, by name
}

func (c *fakeFamilyCore) capacityWait(budgets []*budget, add demand) (waitInfo, bool) {
	for _, b := range budgets {
		if w, over := insufficient(b, add); over {
			return w, true
		}
	}
	return waitInfo{}, false
}
func (c *fakeFamilyCore) stuck(*podState) bool                          { return false }
func (c *fakeFamilyCore) wakeIfAlive(b *budget)                         { c.woken = append(c.woken, b.key.Name) }
func (c *fakeFamilyCore) activate(p *podState)                          { c.activated = append(c.activated, p.pod.Name) }
func (c *fakeFamilyCore) headFlavor(*podState) (string, []string, bool) { return "", nil, true } // no flavors here
func (c *fakeFamilyCore) usageShare(_, _ *budget) float64               { return 0 }             // no memory here
func newFakeFamilyCore() *fakeFamilyCore                                { return &fakeFamilyCore{} }

// orgFamily is ClusterBudget org (hard cpu=10) over Budget team-a/a (hard cpu=2, may
// borrow cpu=4) and team-b/b (hard cpu=4, lends all of it), resolved.
func orgFamily() (org, a, b *budget) {
	tp := newTestTopology()
	org = addBudget(tp, makeBudget("", "org").Hard("cpu=10").Obj())
	a = addBudget(tp, makeBudget("team-a", "a").Hard("cpu=2").Borrow("cpu=4").Parent("org").Obj())
	b = addBudget(tp, makeBudget("team-b", "b").Hard("cpu=4").Parent("org").Obj())
	tp.Resolve()
	return org, a, b
}

// chargeCPU charges a running pod asking cpu to b and its parent.
func chargeCPU(b *budget, name, cpu string) *podState {
	p := &podState{pod: makePod(name).Req("cpu=" + cpu).Pod(), phase: phaseCharged}
	p.charge.to, p.charge.usage = []*budget{b, b.place.Parent()}, p.usage()
	for _, c := range p.charge.to {
		c.ledger.Charge(p.pod.UID, p, p.usage(), p.pod.Usage, nil)
	}
	return p
}

// endCharged ends p, a pod chargeCPU charged to b: its charges are released and the
// family part is told what b freed (which b then holds for its own pods for a while).
func endCharged(fs *families, b *budget, p *podState) {
	for _, c := range p.charge.to {
		c.ledger.Release(p.pod.UID, p.charge.usage, nil)
	}
	fs.freed(b, p.charge.usage)
}

// lendWaiter is a pod of b asking cpu that waits on its family for lendable quota.
func lendWaiter(c *fakeFamilyCore, b *budget, name, cpu string) *podState {
	p := &podState{pod: makePod(name).Req("cpu=" + cpu).Pod(), phase: phaseWaiting, cover: []*budget{b, b.place.Parent()}}
	p.queued.list = []*entry{{pod: p, budget: b}, {pod: p, budget: b.place.Parent()}}
	p.wait = waitInfo{code: CodeNoLendable, budget: b.place.Parent()}
	noteLendWaiter(b.place.Parent(), p)
	return p
}

func describeWait(w waitInfo, over bool) string {
	if !over {
		return "fits"
	}
	return fmt.Sprintf("%s %s %s %s", w.code, w.budget.key.Name, w.resource, w.requested.String())
}

// Whether a unit fits in a family: each member's ceiling, what the family lends with
// what the lenders claim for their own pods (waiting or held), and the parent's hard.
func TestFamilyCapacityWait(t *testing.T) {
	for name, tc := range map[string]struct {
		// setup charges the family and returns the unit's budget and what it asks.
		setup func(c *fakeFamilyCore, fs *families, clk *clocktesting.FakePassiveClock, org, a, b *budget) (*budget, string)
		want  string
	}{
		"a borrows what b leaves idle": {
			setup: func(_ *fakeFamilyCore, _ *families, _ *clocktesting.FakePassiveClock, _, a, b *budget) (*budget, string) {
				chargeCPU(a, "a1", "2")
				chargeCPU(b, "b1", "1")
				return a, "2"
			},
			want: "fits",
		},
		"a would borrow more than b leaves idle": {
			setup: func(_ *fakeFamilyCore, _ *families, _ *clocktesting.FakePassiveClock, _, a, b *budget) (*budget, string) {
				chargeCPU(a, "a1", "2")
				chargeCPU(b, "b1", "3")
				return a, "2"
			},
			want: "NoLendableQuota org requests.cpu 2",
		},
		"b's waiting pod claims what it asks within b's hard": {
			setup: func(c *fakeFamilyCore, _ *families, _ *clocktesting.FakePassiveClock, _, a, b *budget) (*budget, string) {
				chargeCPU(a, "a1", "2")
				chargeCPU(b, "b1", "1")
				lendWaiter(c, b, "b2", "3")
				return a, "2"
			},
			want: "NoLendableQuota org requests.cpu 2",
		},
		"what b holds is b's until the hold ends": {
			setup: func(_ *fakeFamilyCore, fs *families, clk *clocktesting.FakePassiveClock, _, a, b *budget) (*budget, string) {
				chargeCPU(a, "a1", "2")
				endCharged(fs, b, chargeCPU(b, "b1", "3"))
				chargeCPU(b, "b2", "1")
				return a, "2"
			},
			want: "NoLendableQuota org requests.cpu 2",
		},
		"a hold that ended is lent again": {
			setup: func(_ *fakeFamilyCore, fs *families, clk *clocktesting.FakePassiveClock, _, a, b *budget) (*budget, string) {
				chargeCPU(a, "a1", "2")
				endCharged(fs, b, chargeCPU(b, "b1", "3"))
				chargeCPU(b, "b2", "1")
				clk.SetTime(t0.Add(5 * time.Second))
				return a, "2"
			},
			want: "fits",
		},
		"a's own ceiling first": {
			setup: func(_ *fakeFamilyCore, _ *families, _ *clocktesting.FakePassiveClock, _, a, _ *budget) (*budget, string) {
				chargeCPU(a, "a1", "5")
				return a, "2"
			},
			want: "InsufficientQuota a requests.cpu 2",
		},
		"a lender asks within its hard while borrowers fill the parent": {
			setup: func(_ *fakeFamilyCore, _ *families, _ *clocktesting.FakePassiveClock, org, a, b *budget) (*budget, string) {
				chargeCPU(a, "a1", "6")
				chargeCPU(b, "b1", "3")
				return b, "1"
			},
			want: "NoLendableQuota org requests.cpu 1",
		},
	} {
		t.Run(name, func(t *testing.T) {
			org, a, b := orgFamily()
			c := newFakeFamilyCore()
			clk := clocktesting.NewFakePassiveClock(t0)
			fs := newFamilies(c, clk, 5*time.Second)
			in, cpu := tc.setup(c, &fs, clk, org, a, b)
			usage := amount.OfList(makePod("unit").Req("cpu=" + cpu).Pod().Usage)
			got := describeWait(fs.capacityWait([]*budget{in, org}, usageDemand(usage)))
			if got != tc.want {
				t.Errorf("capacityWait: %s, want %s", got, tc.want)
			}
		})
	}
}

// What a failed unit leaves in the family: a claim while it waits for lendable quota,
// and the family to wake once it no longer does.
func TestFamilyFailed(t *testing.T) {
	for name, tc := range map[string]struct {
		old, now  ReasonCode
		wantWake  bool
		wantClaim bool
	}{
		"starts waiting for lendable quota": {old: "", now: CodeNoLendable, wantClaim: true},
		"waits for it again":                {old: CodeNoLendable, now: CodeNoLendable, wantClaim: true},
		"now waits for something else":      {old: CodeNoLendable, now: CodeInsufficient, wantWake: true},
		"never waited on the family":        {old: CodeInsufficient, now: CodeInsufficient},
	} {
		t.Run(name, func(t *testing.T) {
			org, _, b := orgFamily()
			c := newFakeFamilyCore()
			fs := newFamilies(c, clocktesting.NewFakePassiveClock(t0), 0)
			p := &podState{pod: makePod("p").Req("cpu=1").Pod(), phase: phaseWaiting, cover: []*budget{b, org}}
			p.queued.list = []*entry{{pod: p, budget: b}, {pod: p, budget: org}}
			waitOf := func(code ReasonCode) waitInfo {
				switch code {
				case "":
					return waitInfo{}
				case CodeInsufficient:
					return waitInfo{code: code, budget: b}
				}
				return waitInfo{code: code, budget: org}
			}
			if tc.old == CodeNoLendable {
				fs.failed(p, waitInfo{}, waitOf(tc.old))
			}
			p.wait = waitOf(tc.now)
			wake := fs.failed(p, waitOf(tc.old), p.wait)
			if got := wake == org; got != tc.wantWake {
				t.Errorf("failed returned %v to wake, want the family: %v", wake, tc.wantWake)
			}
			if got := len(fs.lendWaiters(org)) == 1; got != tc.wantClaim {
				t.Errorf("lendWaiters: %d, want the pod: %v", len(fs.lendWaiters(org)), tc.wantClaim)
			}
		})
	}
}

// Lend holds: what a member's ended pod frees within its hard is held for its own pods,
// used up by them, and lent again (the family woken) when the hold ends.
func TestFamilyHolds(t *testing.T) {
	org, a, b := orgFamily()
	c := newFakeFamilyCore()
	clk := clocktesting.NewFakePassiveClock(t0)
	fs := newFamilies(c, clk, 5*time.Second)
	chargeCPU(a, "a1", "4") // a borrows 2
	p := chargeCPU(b, "b1", "3")
	for _, bb := range p.charge.to {
		bb.ledger.Release(p.pod.UID, p.charge.usage, nil)
	}
	if !fs.freed(b, p.charge.usage) {
		t.Error("freed b's quota: want the part to say it holds")
	}
	fs.freed(a, p.charge.usage) // a is above its hard: nothing of its hard is freed
	heldCPU := func(x *budget) string {
		h := held(x, clk.Now())["requests.cpu"]
		return h.String()
	}
	if got := heldCPU(b); got != "3" {
		t.Errorf("b holds %s, want the 3 its pod freed", got)
	}
	if got := heldCPU(a); got != "0" {
		t.Errorf("a holds %s, want none", got)
	}
	fs.useHolds(b, amount.OfList(makePod("b2").Req("cpu=1").Pod().Usage))
	if got := heldCPU(b); got != "2" {
		t.Errorf("after its next pod b holds %s, want 2", got)
	}
	if end, ok := fs.nextEnd(); !ok || !end.Equal(t0.Add(5*time.Second)) {
		t.Errorf("nextEnd: %v %v, want t0+5s", end, ok)
	}
	if !fs.expire(t0.Add(4 * time.Second)) {
		t.Error("expire before the hold ends: want the part to say it still holds")
	}
	if len(c.woken) != 0 {
		t.Errorf("before the hold ends the part woke %v", c.woken)
	}
	if fs.expire(t0.Add(5 * time.Second)) {
		t.Error("expire when the hold ends: want the part to say it holds nothing")
	}
	if len(c.woken) != 1 || c.woken[0] != org.key.Name {
		t.Errorf("when the hold ends the part woke %v, want [org]", c.woken)
	}
	if _, ok := fs.nextEnd(); ok {
		t.Error("nextEnd after the hold ended: want none")
	}
}
