package quota

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
	"github.com/quotagate/quotagate/pkg/quota/internal/order"
)

// wakeable alone: a budget of requests.cpu=4 with 1 charged (3 free), and inadmissible
// pods blocked for every kind of reason. An event in the budget picks the pods whose
// answer it may change, and of those blocked for capacity only the ones that fit in
// what the ones before them leave.
func TestWakeable(t *testing.T) {
	b := newBudget(makeBudget("team", "b").Hard("requests.cpu=4").Obj())
	other := newBudget(makeBudget("team", "other").Hard("requests.cpu=4").Obj())
	gone := newBudget(makeBudget("team", "gone").Hard("requests.cpu=4").Obj())
	alive := func(x *budget) bool { return x == b || x == other }
	running := &podState{pod: makePod("running").Pod()}
	b.ledger.Charge(running.pod.UID, running, parseAmounts("requests.cpu=1"), running.pod.Usage, nil)

	g := newGroup(groupKey{"team", "g"})
	add := func(name string, created int, blocker *budget, code ReasonCode, cpu string, grp *group) {
		p := &podState{pod: makePod(name).Created(created).Pod(), group: grp}
		p.order = ownKey(&p.pod)
		if grp != nil {
			if grp.order == (order.Key{}) {
				grp.order = p.order
			}
			p.order = grp.order // the members share their best member's key
		}
		p.wait = waitInfo{code: code, budget: blocker}
		if cpu != "" {
			p.wait.resource, p.wait.requested = "requests.cpu", amount.MustOf(resource.MustParse(cpu))
		}
		b.queues.move(&entry{pod: p, budget: b, index: -1}, queueInadmissible)
	}
	add("closed", 9, b, CodeBudgetClosed, "", nil)                 // not capacity: retry
	add("blocked-elsewhere", 0, other, CodeInsufficient, "1", nil) // the other budget's events wake it
	add("blame-gone", 9, gone, CodeInsufficient, "1", nil)         // no live budget to blame: retry
	add("too-big", 0, b, CodeInsufficient, "4", nil)               // more than is free
	// Two members of one group; their wait names the group's sum (1): counted once.
	add("group-a", 0, b, CodeInsufficient, "1", g)
	add("group-b", 0, b, CodeInsufficient, "1", g)
	add("first-2", 1, b, CodeInsufficient, "2", nil)  // fits: 2 of the 2 left
	add("second-1", 2, b, CodeInsufficient, "1", nil) // nothing left
	add("third-1", 3, b, CodeInsufficient, "1", nil)

	retry, fit := wakeable(b, alive, nil, nil)
	names := func(es []*entry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.pod.pod.Name)
		}
		return out
	}
	gotRetry := names(retry)
	// retry follows the heap's layout; its order does not matter.
	if diff := cmp.Diff([]string{"blame-gone", "closed"}, gotRetry, cmpopts.SortSlices(func(x, y string) bool { return x < y })); diff != "" {
		t.Errorf("retry (-want +got):\n%s", diff)
	}
	gotFit := names(fit)
	if len(gotFit) != 2 || (gotFit[0] != "group-a" && gotFit[0] != "group-b") || gotFit[1] != "first-2" {
		t.Errorf("fit = %v, want one member of the group, then first-2, in admission order", gotFit)
	}
	if got := b.queues.inadmissible.Len(); got != 9 {
		t.Errorf("wakeable moved pods: %d inadmissible, want all 9 still there", got)
	}

	// With nothing free, only the pods blocked for another reason go back.
	filler := &podState{pod: makePod("filler").Pod()}
	b.ledger.Charge(filler.pod.UID, filler, parseAmounts("requests.cpu=3"), filler.pod.Usage, nil)
	retry, fit = wakeable(b, alive, nil, nil)
	if len(fit) != 0 || len(retry) != 2 {
		t.Errorf("a full budget: retry %v, fit %v; want the two retries and no fit", names(retry), names(fit))
	}
}
