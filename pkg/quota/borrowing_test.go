package quota

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"
)

// Borrowing between two teams under one parent: team-a may borrow up to 4 CPU beyond
// its hard of 4 from team-b, which lends what it does not use (all of its hard, or its
// lendingLimit). Lent quota is not taken back: team-b waits for it.
func TestBorrowing(t *testing.T) {
	pods := func(ns string, from, n, created int) []Pod {
		var out []Pod
		for i := range n {
			out = append(out, makePod(ns+"-"+string(rune('a'+from+i))).NS(ns).Created(created+i).Req("cpu=1").Pod())
		}
		return out
	}
	for name, tc := range map[string]struct {
		parent, b Budget
		first     []Pod // admitted, or not, first
		wantFirst int
		then      []Pod // created after, admitted, or not, next
		wantThen  []string
		code      ReasonCode // why the first of then that waits waits
	}{
		"a borrows all its limit from an idle sibling; the sibling waits for it": {
			parent:    makeBudget("", "org").Hard("cpu=100").Obj(),
			b:         makeBudget("team-b", "b").Hard("cpu=4").Parent("org").Obj(),
			first:     pods("team-a", 0, 9, 0),
			wantFirst: 8, // hard 4 + borrowingLimit 4
			then:      pods("team-b", 0, 1, 100),
			wantThen:  nil,
			code:      CodePreemptionPending, // NoLendableQuota, and a reclaim once its cooldown ends
		},
		"a lendingLimit keeps part of hard for the lender": {
			parent:    makeBudget("", "org").Hard("cpu=100").Obj(),
			b:         makeBudget("team-b", "b").Hard("cpu=4").Lend("cpu=2").Parent("org").Obj(),
			first:     pods("team-a", 0, 9, 0),
			wantFirst: 6, // its own 4 and the 2 b lends
			then:      pods("team-b", 0, 3, 100),
			wantThen:  []string{"team-b-a", "team-b-b"}, // b's 2 kept; the third waits
			code:      CodePreemptionPending,
		},
		"the parent's hard stays the ceiling": {
			parent:    makeBudget("", "org").Hard("cpu=5").Obj(),
			b:         makeBudget("team-b", "b").Hard("cpu=4").Parent("org").Obj(),
			first:     pods("team-a", 0, 9, 0),
			wantFirst: 5,
			then:      pods("team-b", 0, 1, 100),
			code:      CodeInsufficient,
		},
	} {
		t.Run(name, func(t *testing.T) {
			q, _ := newTestQueue()
			q.UpsertBudget(tc.parent)
			q.UpsertBudget(makeBudget("team-a", "a").Hard("cpu=4").Borrow("cpu=4").Parent("org").Obj())
			q.UpsertBudget(tc.b)
			for _, p := range tc.first {
				q.UpsertPod(p)
			}
			if got := admitNames(q); len(got) != tc.wantFirst {
				t.Fatalf("team-a: admitted %d (%v), want %d", len(got), got, tc.wantFirst)
			}
			st := mustStatus(t, q, BudgetKey{Namespace: "team-a", Name: "a"})
			if want := tc.wantFirst - 4; want > 0 {
				if b := st.Borrowed["requests.cpu"]; b.Value() != int64(want) {
					t.Errorf("team-a's status borrows %s, want %d", b.String(), want)
				}
				// team-b, idle, is the only lender: all of it is lent by team-b.
				lender := mustStatus(t, q, BudgetKey{Namespace: "team-b", Name: "b"})
				if l := lender.Lent["requests.cpu"]; l.Value() != int64(want) {
					t.Errorf("team-b's status lends %s, want %d", l.String(), want)
				}
			}
			for _, p := range tc.then {
				q.UpsertPod(p)
			}
			if diff := cmp.Diff(tc.wantThen, admitNames(q)); diff != "" {
				t.Errorf("team-b admitted (-want +got):\n%s", diff)
			}
			waiting := tc.then[len(tc.wantThen)]
			if code, _ := q.Reader().WaitCode(waiting.UID); code != tc.code {
				r, _ := q.Reader().WaitReason(waiting.UID)
				t.Errorf("%s waits with %s (%s), want %s", waiting.Name, code, r.Message, tc.code)
			}
			if tc.code != CodePreemptionPending {
				return
			}
			r, _ := q.Reader().WaitReason(waiting.UID)
			if !strings.Contains(r.Message, "ClusterBudget org") || !strings.Contains(r.Message, "borrowed quota to be returned") {
				t.Errorf("the reason does not name the family and what it waits for: %s", r.Message)
			}
			// A borrowing pod of team-a ends: the lent quota returns to team-b, whose pod
			// waits for it, even though team-a's last pod is older and would borrow it.
			q.DeletePod(tc.first[0].UID)
			if diff := cmp.Diff([]string{waiting.Name}, admitNames(q)); diff != "" {
				t.Errorf("after a borrower ended (-want +got):\n%s", diff)
			}
		})
	}
}

// Without a borrower in the family, a lendingLimit changes nothing: every budget is a
// hard wall, as before borrowing existed.
func TestLendingAloneChangesNothing(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("", "org").Hard("cpu=100").Obj())
	q.UpsertBudget(makeBudget("team-a", "a").Hard("cpu=2").Lend("cpu=1").Parent("org").Obj())
	q.UpsertBudget(makeBudget("team-b", "b").Hard("cpu=2").Lend("cpu=0").Parent("org").Obj())
	for i, ns := range []string{"team-a", "team-a", "team-a", "team-b", "team-b", "team-b"} {
		q.UpsertPod(makePod(ns + string(rune('0'+i))).NS(ns).Created(i).Req("cpu=1").Pod())
	}
	if diff := cmp.Diff([]string{"team-a0", "team-a1", "team-b3", "team-b4"}, admitNames(q)); diff != "" {
		t.Errorf("admitted (-want +got):\n%s", diff)
	}
}

// A borrowingLimit or lendingLimit the manager cannot account (past an older CRD) makes
// the budget admit nothing, and its status says which field is wrong.
func TestInvalidBorrowingLimits(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("", "org").Hard("cpu=10").Obj())
	bad := makeBudget("team-a", "a").Hard("cpu=2").Parent("org").Obj()
	bad.BorrowingLimit = parseList("services=1")
	bad.LendingLimit = parseList("cpu=-1")
	q.UpsertBudget(bad)
	st := mustStatus(t, q, bad.Key)
	if st.Problem == nil || !strings.Contains(st.Problem.Message, "borrowingLimit: unsupported resource names in hard: services") || !strings.Contains(st.Problem.Message, "lendingLimit: negative quantities in hard: cpu") {
		t.Fatalf("status problem %+v, want both fields named", st.Problem)
	}
	q.UpsertPod(makePod("p").Req("cpu=1").Pod())
	if got := admitNames(q); len(got) != 0 {
		t.Errorf("a budget with invalid limits admitted %v", got)
	}
}

// Admission names the budgets a pod is admitted beyond the hard of, for the pod's
// borrowing annotation; the pods within hard borrow nothing.
func TestAdmissionSaysWhatBorrows(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("", "org").Hard("cpu=100").Obj())
	q.UpsertBudget(makeBudget("team-a", "a").Hard("cpu=2").Borrow("cpu=2").Parent("org").Obj())
	q.UpsertBudget(makeBudget("team-b", "b").Hard("cpu=2").Parent("org").Obj())
	for i := range 3 {
		q.UpsertPod(makePod(fmt.Sprint("p", i)).Created(i).Req("cpu=1").Pod())
	}
	got := map[string][]BudgetKey{}
	for _, a := range q.Admit() {
		got[a.Pod.Name] = a.Borrowing
	}
	want := map[string][]BudgetKey{"p0": nil, "p1": nil, "p2": {{Namespace: "team-a", Name: "a"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("borrowing by pod (-want +got):\n%s", diff)
	}
}

// What a family borrows is shown as lent by the members that leave some of what they
// lend unused, in proportion to that part.
func TestLentIsShared(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("", "org").Hard("cpu=100").Obj())
	q.UpsertBudget(makeBudget("team-a", "a").Hard("cpu=2").Borrow("cpu=4").Parent("org").Obj())
	q.UpsertBudget(makeBudget("team-b", "b").Hard("cpu=4").Parent("org").Obj())
	q.UpsertBudget(makeBudget("team-c", "c").Hard("cpu=4").Lend("cpu=1").Parent("org").Obj())
	q.UpsertPod(makePod("b1").NS("team-b").Req("cpu=1").Pod())
	q.UpsertPod(makePod("a1").NS("team-a").Created(1).Req("cpu=5").Pod())
	if got := admitNames(q); len(got) != 2 {
		t.Fatalf("admitted %v, want b1 and a1", got)
	}
	for key, want := range map[BudgetKey]string{
		{Namespace: "team-a", Name: "a"}: "",      // it borrows 3
		{Namespace: "team-b", Name: "b"}: "2250m", // 3 of 4 unused: 3/4 of the 3 borrowed
		{Namespace: "team-c", Name: "c"}: "750m",  // lends 1 at most: 1/4
	} {
		got := mustStatus(t, q, key).Lent["requests.cpu"]
		if want == "" && !got.IsZero() || want != "" && got.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("%s lends %s, want %q", key, got.String(), want)
		}
	}
}

// TestLendHoldIsUsedOnce: a pod admitted into held quota uses up as much of the holds as
// it asks for, oldest first, not that much of each: when two of team-b's pods end, the
// next one uses one hold and the other stays held for team-b until it ends.
func TestLendHoldIsUsedOnce(t *testing.T) {
	q, clk := holdingTeams(t)
	q.DeletePod(makePod("b1").NS("team-b").Pod().UID)
	clk.Step(DefaultLendHold / 4)
	q.DeletePod(makePod("b2").NS("team-b").Pod().UID)
	clk.Step(DefaultLendHold / 4)
	q.UpsertPod(makePod("b3").NS("team-b").Created(20).Req("cpu=1").Pod())
	if diff := cmp.Diff([]string{"b3"}, admitNames(q)); diff != "" {
		t.Fatalf("team-b's next pod (-want +got):\n%s", diff)
	}
	if got := admitNames(q); len(got) != 0 {
		t.Errorf("admitted %v into the CPU still held for team-b", got)
	}
	// b2's hold ends last: team-a borrows what b3 left of it then.
	clk.Step(DefaultLendHold / 2)
	if got := admitNames(q); len(got) != 0 {
		t.Errorf("admitted %v while b2's hold lasts", got)
	}
	clk.Step(DefaultLendHold / 4)
	if diff := cmp.Diff([]string{"a3"}, admitNames(q)); diff != "" {
		t.Errorf("after the holds (-want +got):\n%s", diff)
	}
}

// The quota a lender's ended pod frees is held for the lender's next pod for the lend
// hold: a borrower does not take it in the moment between a Job's pods (and lose it
// again to reclaim). What the lender does not use in time is lent.
func TestLendHold(t *testing.T) {
	for name, tc := range map[string]struct {
		opts      []Option
		lentAtEnd bool // a3 is admitted the moment b1 ends
	}{
		"held for the lender":   {},
		"no hold: lent at once": {opts: []Option{WithLendHold(0)}, lentAtEnd: true},
	} {
		t.Run(name, func(t *testing.T) {
			q, clk := holdingTeams(t, tc.opts...)
			q.DeletePod(makePod("b1").NS("team-b").Pod().UID)
			got := admitNames(q)
			if tc.lentAtEnd {
				if !slices.Equal(got, []string{"a3"}) {
					t.Errorf("without a hold, admitted %v when b1 ended, want a3", got)
				}
				return
			}
			if len(got) != 0 {
				t.Fatalf("admitted %v into quota held for team-b", got)
			}
			// team-b's next pod comes within the hold: it is admitted into it.
			clk.Step(DefaultLendHold / 2)
			q.UpsertPod(makePod("b3").NS("team-b").Created(20).Req("cpu=1").Pod())
			if diff := cmp.Diff([]string{"b3"}, admitNames(q)); diff != "" {
				t.Errorf("team-b's next pod (-want +got):\n%s", diff)
			}
			// b2 ends with no pod after it: once the hold ends, team-a borrows it.
			q.DeletePod(makePod("b2").NS("team-b").Pod().UID)
			if got := admitNames(q); len(got) != 0 {
				t.Errorf("admitted %v during the hold", got)
			}
			next, ok := q.NextWakeup()
			if !ok || next.After(clk.Now().Add(DefaultLendHold)) {
				t.Errorf("next wakeup %v (%v), want by the end of the hold", next, ok)
			}
			clk.Step(DefaultLendHold)
			if diff := cmp.Diff([]string{"a3"}, admitNames(q)); diff != "" {
				t.Errorf("after the hold (-want +got):\n%s", diff)
			}
		})
	}
}

// holdingTeams is team-b (hard 2) running b1 and b2, and team-a (hard 2, may borrow 2)
// running a1 and a2 with a3 waiting, under a parent of 100 CPU: pods of 1 CPU.
func holdingTeams(t *testing.T, opts ...Option) (*AdmissionQueue, *clocktesting.FakeClock) {
	t.Helper()
	q, clk := newTestQueue(opts...)
	q.UpsertBudget(makeBudget("", "org").Hard("cpu=100").Obj())
	q.UpsertBudget(makeBudget("team-a", "a").Hard("cpu=2").Borrow("cpu=2").Parent("org").Obj())
	q.UpsertBudget(makeBudget("team-b", "b").Hard("cpu=2").Parent("org").Obj())
	for i, name := range []string{"b1", "b2"} {
		q.UpsertPod(makePod(name).NS("team-b").Created(i).Req("cpu=1").Pod())
	}
	for i, name := range []string{"a1", "a2", "a3"} {
		q.UpsertPod(makePod(name).NS("team-a").Created(10 + i).Req("cpu=1").Pod())
	}
	if got := admitNames(q); len(got) != 4 {
		t.Fatalf("admitted %v, want b1, b2, a1, a2", got)
	}
	return q, clk
}
