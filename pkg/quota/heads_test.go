package quota

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

// TestAtHead: the pods worth a Waiting event are the first n of a budget that covers
// them, in admission order, whichever queue (active, backoff, inadmissible, parked)
// they wait in.
func TestAtHead(t *testing.T) {
	tests := map[string]struct {
		budgets []Budget
		pods    []Pod
		hold    bool
		n       int
		ask     []string
		want    []string
	}{
		"first two of one budget, by priority then creation": {
			budgets: []Budget{makeBudget("team-a", "a").Hard("cpu=0").Obj()},
			pods: []Pod{
				makePod("old").Created(1).Req("cpu=1").Pod(),
				makePod("new").Created(5).Req("cpu=1").Pod(),
				makePod("urgent").Created(9).Priority(100).Req("cpu=1").Pod(),
				makePod("mid").Created(3).Req("cpu=1").Pod(),
			},
			n:    2,
			ask:  []string{"old", "new", "urgent", "mid"},
			want: []string{"old", "urgent"},
		},
		"only the pods asked about": {
			budgets: []Budget{makeBudget("team-a", "a").Hard("cpu=1").Obj()},
			pods: []Pod{
				makePod("p1").Created(1).Req("cpu=2").Pod(),
				makePod("p2").Created(2).Req("cpu=2").Pod(),
				makePod("p3").Created(3).Req("cpu=2").Pod(),
			},
			n:    2,
			ask:  []string{"p2", "p3"},
			want: []string{"p2"},
		},
		"at the head of any covering budget": {
			budgets: []Budget{
				makeBudget("", "ml").Hard("cpu=0").Obj(),
				makeBudget("team-a", "a").Hard("cpu=0").Parent("ml").Obj(),
				makeBudget("team-b", "b").Hard("cpu=0").Parent("ml").Obj(),
			},
			pods: []Pod{
				makePod("a1").Created(1).Req("cpu=1").Pod(),
				makePod("a2").Created(2).Req("cpu=1").Pod(),
				makePod("b1").NS("team-b").Created(3).Req("cpu=1").Pod(),
			},
			n:   1,
			ask: []string{"a1", "a2", "b1"},
			// b1 is third in ml, but first in its own Budget.
			want: []string{"a1", "b1"},
		},
		"uncovered and held": {
			pods: []Pod{makePod("lonely").Pod()},
			hold: true,
			n:    1,
			ask:  []string{"lonely"},
			want: []string{"lonely"},
		},
		"admitted and unknown pods are not waiting": {
			budgets: []Budget{makeBudget("team-a", "a").Hard("cpu=1").Obj()},
			pods: []Pod{
				makePod("in").Created(1).Req("cpu=1").Pod(),
				makePod("out").Created(2).Req("cpu=1").Pod(),
			},
			n:    5,
			ask:  []string{"in", "out", "ghost"},
			want: []string{"out"},
		},
		"n of zero: none": {
			budgets: []Budget{makeBudget("team-a", "a").Hard("cpu=0").Obj()},
			pods:    []Pod{makePod("p").Req("cpu=1").Pod()},
			n:       0,
			ask:     []string{"p"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			q, _ := newTestQueue(WithHoldUncovered(tc.hold))
			for _, b := range tc.budgets {
				q.UpsertBudget(b)
			}
			for _, p := range tc.pods {
				q.UpsertPod(p)
			}
			admitNames(q)
			uids := make([]types.UID, len(tc.ask))
			for i, name := range tc.ask {
				uids[i] = types.UID(name)
			}
			var got []string
			for uid := range q.Reader().AtHead(uids, tc.n) {
				got = append(got, string(uid))
			}
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("AtHead (-want +got):\n%s", diff)
			}
		})
	}
}
