package quota

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota/internal/topology"
)

// An update that changes nothing the core reads (the manager's own status write coming
// back: the same spec in a new object) changes no decision, no queue, no status, and
// derives no budget's topology again, whatever the topology.
func TestBudgetUpdateWithTheSameSpec(t *testing.T) {
	for name, specs := range map[string]func() []Budget{
		"a plain budget": func() []Budget {
			return []Budget{makeBudget("team-a", "b").Hard("cpu=2").Obj()}
		},
		"a family that borrows and lends": func() []Budget {
			return []Budget{
				makeBudget("", "org").Hard("cpu=4").Obj(),
				makeBudget("team-a", "a").Hard("cpu=1").Borrow("cpu=2").Parent("org").Obj(),
				makeBudget("team-b", "b").Hard("cpu=3").Lend("cpu=1").Parent("org").Weight("2").Obj(),
			}
		},
		"strict, closed, selecting": func() []Budget {
			return []Budget{
				makeBudget("team-a", "strict").Hard("cpu=1").Strict().Obj(),
				makeBudget("team-b", "closed").Hard("cpu=5").Closed().Obj(),
				makeBudget("", "ns").Hard("cpu=3").Namespaces(labels.SelectorFromSet(labels.Set{"env": "prod"})).Obj(),
			}
		},
		"problems: invalid, missing parent, a loop, under a closed parent": func() []Budget {
			invalid := makeBudget("team-a", "invalid").Hard("cpu=2").Obj()
			invalid.SpecError = &SelectorError{Field: "podSelector", Err: fmt.Errorf("bad"), Holds: "every pod"}
			return []Budget{
				invalid,
				makeBudget("team-b", "orphan").Hard("cpu=2").Parent("gone").Obj(),
				makeBudget("", "x").Hard("cpu=2").Parent("y").Obj(),
				makeBudget("", "y").Hard("cpu=2").Parent("x").Obj(),
				makeBudget("", "shut").Hard("cpu=2").Closed().Obj(),
				makeBudget("team-c", "under").Hard("cpu=2").Parent("shut").Obj(),
				makeBudget("team-d", "fine").Hard("cpu=1").Obj(),
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			q, _ := newTestQueue()
			q.SetNamespace("team-b", map[string]string{v1alpha1.EnabledLabel: "true", "env": "prod"})
			for _, b := range specs() {
				q.UpsertBudget(b)
			}
			for i, ns := range testNamespaces {
				for j := range 3 {
					q.UpsertPod(makePod(fmt.Sprintf("%s-%d", ns, j)).NS(ns).Created(i*3 + j).Req("cpu=1").Pod())
				}
			}
			admitNames(q)
			before, derived := q.Reader().Snapshot(), q.topology.Rederived()
			statuses := map[BudgetKey]BudgetStatus{}
			for _, b := range specs() {
				statuses[b.Key] = mustStatus(t, q, b.Key)
			}
			for _, b := range specs() { // each a new value, as a new object converts
				q.UpsertBudget(b)
			}
			if q.topology.Rederived() != derived {
				t.Errorf("the same specs derived %d budgets again, want none", q.topology.Rederived()-derived)
			}
			if got := admitNames(q); len(got) != 0 {
				t.Errorf("the same specs admitted %v", got)
			}
			if diff := cmp.Diff(before, q.Reader().Snapshot()); diff != "" {
				t.Errorf("the same specs changed the queues (-before +after):\n%s", diff)
			}
			for key, want := range statuses {
				if diff := cmp.Diff(want, mustStatus(t, q, key)); diff != "" {
					t.Errorf("%s: status changed (-before +after):\n%s", key, diff)
				}
			}
		})
	}
}

// A spec change still takes effect, deriving again only the budgets it touches.
func TestBudgetSpecChangeTakesEffect(t *testing.T) {
	t.Run("hard raised admits the waiting pod and resolves nothing", func(t *testing.T) {
		q, _ := newTestQueue()
		q.UpsertBudget(makeBudget("", "org").Hard("cpu=10").Obj())
		q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=1").Parent("org").Obj())
		q.UpsertPod(makePod("p1").Created(1).Req("cpu=1").Pod())
		q.UpsertPod(makePod("p2").Created(2).Req("cpu=1").Pod())
		if diff := cmp.Diff([]string{"p1"}, admitNames(q)); diff != "" {
			t.Fatalf("admitted (-want +got):\n%s", diff)
		}
		derived := q.topology.Rederived()
		q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=2").Parent("org").Obj())
		if q.topology.Rederived() != derived {
			t.Errorf("raising hard derived %d budgets again, want none", q.topology.Rederived()-derived)
		}
		if diff := cmp.Diff([]string{"p2"}, admitNames(q)); diff != "" {
			t.Errorf("admitted after raising hard (-want +got):\n%s", diff)
		}
	})
	t.Run("a new parent moves the budget and its pods", func(t *testing.T) {
		q, _ := newTestQueue()
		q.UpsertBudget(makeBudget("", "small").Hard("cpu=1").Obj())
		q.UpsertBudget(makeBudget("", "large").Hard("cpu=10").Obj())
		for i := range 20 { // siblings that stay where they are
			q.UpsertBudget(makeBudget("team-b", fmt.Sprintf("s%d", i)).Hard("cpu=1").Parent("small").Obj())
		}
		q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=10").Parent("small").Obj())
		q.UpsertPod(makePod("p1").Created(1).Req("cpu=1").Pod())
		q.UpsertPod(makePod("p2").Created(2).Req("cpu=1").Pod())
		if diff := cmp.Diff([]string{"p1"}, admitNames(q)); diff != "" {
			t.Fatalf("admitted (-want +got):\n%s", diff)
		}
		derived := q.topology.Rederived()
		q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=10").Parent("large").Obj())
		if got := q.topology.Rederived() - derived; got != 1 {
			t.Errorf("moving one Budget derived %d budgets again, want 1", got)
		}
		if diff := cmp.Diff([]string{"p2"}, admitNames(q)); diff != "" {
			t.Errorf("admitted after the move (-want +got):\n%s", diff)
		}
		small, large := q.topology.Lookup(BudgetKey{Name: "small"}), q.topology.Lookup(BudgetKey{Name: "large"})
		if len(small.place.Children()) != 20 || len(large.place.Children()) != 1 || large.place.Children()[0].key.Name != "b" {
			t.Errorf("families: small has %d children, large %d; want 20 and [b]", len(small.place.Children()), len(large.place.Children()))
		}
		// p1 stays charged where it was admitted too (pinned, charges.go).
		for key, want := range map[BudgetKey]string{{Name: "small"}: "1", {Name: "large"}: "2"} {
			used := mustStatus(t, q, key).Used["requests.cpu"]
			if used.String() != want {
				t.Errorf("%s uses %s cpu, want %s", key, used.String(), want)
			}
		}
	})
	t.Run("a closed parent closes its subtree only", func(t *testing.T) {
		q, _ := newTestQueue()
		q.UpsertBudget(makeBudget("", "org").Hard("cpu=10").Obj())
		q.UpsertBudget(makeBudget("", "other").Hard("cpu=10").Obj())
		for i := range 5 {
			q.UpsertBudget(makeBudget("team-a", fmt.Sprintf("a%d", i)).Hard("cpu=1").Parent("org").Obj())
			q.UpsertBudget(makeBudget("team-b", fmt.Sprintf("b%d", i)).Hard("cpu=1").Parent("other").Obj())
		}
		derived := q.topology.Rederived()
		q.UpsertBudget(makeBudget("", "org").Hard("cpu=10").Closed().Obj())
		if got := q.topology.Rederived() - derived; got != 6 {
			t.Errorf("closing a parent of 5 derived %d budgets again, want 6", got)
		}
		for _, key := range []BudgetKey{{Namespace: "team-a", Name: "a3"}, {Namespace: "team-b", Name: "b3"}} {
			st := mustStatus(t, q, key)
			want := v1alpha1.StateOpen
			if key.Namespace == "team-a" {
				want = v1alpha1.StateClosed
			}
			if st.State != want {
				t.Errorf("%s: %s (%s), want %s", key, st.State, st.StateReason, want)
			}
		}
	})
}

// resolve(seeds) derives again only what the seeds touch; resolving every budget after
// the same steps must agree with it, in what it reports and in what it derives.
func TestResolveIncrementalAgreesWithFull(t *testing.T) {
	parents := []string{"", "c0", "c1", "c2", "c3", "gone"}
	random := func(rnd *rand.Rand) Budget {
		var b *budgetBuilder
		if rnd.IntN(2) == 0 {
			b = makeBudget("", fmt.Sprintf("c%d", rnd.IntN(4)))
			if rnd.IntN(2) == 0 {
				b.Namespaces(labels.Everything())
			}
		} else {
			b = makeBudget(testNamespaces[rnd.IntN(2)], fmt.Sprintf("n%d", rnd.IntN(4)))
		}
		b.Hard(fmt.Sprintf("cpu=%d", rnd.IntN(3))).Parent(parents[rnd.IntN(len(parents))])
		if rnd.IntN(2) == 0 {
			b.Borrow("cpu=1")
		}
		if rnd.IntN(4) == 0 {
			b.Borrow("memory=1") // not limited by hard: not a borrower
		}
		if rnd.IntN(5) == 0 {
			b.Closed()
		}
		out := b.Obj()
		if rnd.IntN(8) == 0 {
			out.Hard = parseList("cpu=-1") // InvalidSpec
		}
		return out
	}
	keys := func(bs []*budget) []string {
		var out []string
		for _, b := range bs {
			out = append(out, b.key.String())
		}
		slices.Sort(out)
		return out
	}
	derived := func(tp *topology.Topology[*budget]) map[string]string {
		out := map[string]string{"selecting": fmt.Sprint(keys(tp.Selecting()))}
		for _, b := range tp.Sorted() {
			k := b.key
			var parent, closedBy, prob string
			if b.place.Parent() != nil {
				parent = b.place.Parent().key.String()
			}
			if b.place.ClosedBy() != nil {
				closedBy = b.place.ClosedBy().key.String()
			}
			if b.place.Problem() != nil {
				prob = b.place.Problem().Reason + ": " + b.place.Problem().Message
			}
			var ancestors, children []string
			for _, a := range b.place.Ancestors() {
				ancestors = append(ancestors, a.key.String())
			}
			for _, c := range b.place.Children() {
				children = append(children, c.key.String())
			}
			c := b.ledger.Of("requests.cpu").Ceiling
			out[k.String()] = fmt.Sprintf("parent %q ancestors %v children %v borrowers %d problem %q admitting %v closedBy %q family %v ceiling %s",
				parent, ancestors, children, b.place.Borrowers(), prob, b.place.Admitting(), closedBy, b.ledger.InFamily(), c.String())
		}
		return out
	}
	for seed := range 300 {
		rnd := rand.New(rand.NewPCG(uint64(seed), 1))
		inc, full := newTestTopology(), newTestTopology()
		for step := range 40 {
			spec := random(rnd)
			var got, want [4][]*budget
			switch b := inc.Lookup(spec.Key); {
			case b != nil && rnd.IntN(4) == 0:
				got[0], got[1], got[2], got[3] = inc.Resolve(inc.Remove(spec.Key))
				full.Remove(spec.Key)
				want[0], want[1], want[2], want[3] = full.Resolve()
			case b != nil:
				if respec(inc, b, spec) {
					got[0], got[1], got[2], got[3] = inc.Resolve(b)
				}
				respec(full, full.Lookup(spec.Key), spec)
				want[0], want[1], want[2], want[3] = full.Resolve()
			default:
				got[0], got[1], got[2], got[3] = inc.Resolve(addBudget(inc, spec))
				addBudget(full, spec)
				want[0], want[1], want[2], want[3] = full.Resolve()
			}
			for i, what := range []string{"changed", "started", "limits", "families"} {
				if diff := cmp.Diff(keys(want[i]), keys(got[i])); diff != "" {
					t.Fatalf("seed %d step %d (%s): %s (-full +incremental):\n%s", seed, step, spec.Key, what, diff)
				}
			}
			if diff := cmp.Diff(derived(full), derived(inc)); diff != "" {
				t.Fatalf("seed %d step %d (%s): derived (-full +incremental):\n%s", seed, step, spec.Key, diff)
			}
		}
		if c, s, l, f := inc.Resolve(); len(c)+len(s)+len(l)+len(f) != 0 {
			t.Fatalf("seed %d: resolving every budget after the incremental steps changed %v %v %v %v", seed, keys(c), keys(s), keys(l), keys(f))
		}
	}
}
