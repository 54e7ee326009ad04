package quota

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

// at is t0 plus s seconds.
func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// The victim order alone: each pair says which candidate is chosen first, and the
// order is asked both ways.
func TestCompareVictims(t *testing.T) {
	for name, tc := range map[string]struct {
		first, then victimCandidate
	}{
		"never refused before refused, whatever else": {
			first: victimCandidate{priority: 100, admitted: at(0), uid: "z"},
			then:  victimCandidate{blocked: true, borrowing: true, priority: 0, admitted: at(10), uid: "a"},
		},
		"borrowing before in quota, whatever the priority": {
			first: victimCandidate{borrowing: true, priority: 100, admitted: at(0), uid: "z"},
			then:  victimCandidate{priority: 0, admitted: at(10), uid: "a"},
		},
		"two refused: borrowing first": {
			first: victimCandidate{blocked: true, borrowing: true, priority: 5},
			then:  victimCandidate{blocked: true, priority: 1},
		},
		"lowest priority first": {
			first: victimCandidate{priority: -3, admitted: at(0), uid: "z"},
			then:  victimCandidate{priority: 2, admitted: at(10), uid: "a"},
		},
		"equal priority: most recently admitted first": {
			first: victimCandidate{priority: 1, admitted: at(10), uid: "z"},
			then:  victimCandidate{priority: 1, admitted: at(9), uid: "a"},
		},
		"admission time compares instants, not locations": {
			first: victimCandidate{admitted: at(1).In(time.FixedZone("east", 3600)), uid: "z"},
			then:  victimCandidate{admitted: at(0), uid: "a"},
		},
		"all equal: the first member's UID": {
			first: victimCandidate{priority: 1, admitted: at(3), uid: "a"},
			then:  victimCandidate{priority: 1, admitted: at(3), uid: "b"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			if got := compareVictims(tc.first, tc.then); got >= 0 {
				t.Errorf("compareVictims(first, then) = %d, want < 0", got)
			}
			if got := compareVictims(tc.then, tc.first); got <= 0 {
				t.Errorf("compareVictims(then, first) = %d, want > 0", got)
			}
			if got := compareVictims(tc.first, tc.first); got != 0 {
				t.Errorf("compareVictims(first, first) = %d, want 0", got)
			}
		})
	}
}

// Sorting with the order gives the documented sequence whatever the input order.
func TestVictimOrderSorts(t *testing.T) {
	want := []victimCandidate{
		{borrowing: true, priority: 1, admitted: at(5), uid: "borrow-low-new"},
		{borrowing: true, priority: 1, admitted: at(1), uid: "borrow-low-old"},
		{borrowing: true, priority: 9, admitted: at(9), uid: "borrow-high"},
		{priority: 0, admitted: at(2), uid: "quota-a"},
		{priority: 0, admitted: at(2), uid: "quota-b"},
		{priority: 7, admitted: at(0), uid: "quota-high"},
		{blocked: true, borrowing: true, priority: 0, admitted: at(9), uid: "refused"},
	}
	uids := func(cs []victimCandidate) []types.UID {
		var out []types.UID
		for _, c := range cs {
			out = append(out, c.uid)
		}
		return out
	}
	for _, perm := range [][]int{{0, 1, 2, 3, 4, 5, 6}, {6, 5, 4, 3, 2, 1, 0}, {3, 6, 0, 5, 1, 4, 2}} {
		var in []victimCandidate
		for _, i := range perm {
			in = append(in, want[i])
		}
		slices.SortStableFunc(in, compareVictims)
		if diff := cmp.Diff(uids(want), uids(in)); diff != "" {
			t.Errorf("sorted from %v (-want +got):\n%s", perm, diff)
		}
	}
}

// A unit ranks by its most valuable member: the highest priority, the earliest
// admission (creation for a pod first seen running); it borrows, or was refused, when
// any member does or was.
func TestNewVictimCandidate(t *testing.T) {
	member := func(name string, prio int32, admitted int, borrowing bool) *podState {
		p := &podState{pod: makePod(name).Priority(prio).Created(-100).Pod(), phase: phaseCharged}
		if admitted >= 0 {
			p.attempt.admittedAt = at(admitted)
		}
		if borrowing {
			p.attempt.borrowing = []BudgetKey{{Namespace: "team-a", Name: "a"}}
		}
		return p
	}
	low := member("g1", 1, 20, true)
	high := member("g2", 5, 10, false)
	seen := member("g3", 3, -1, false) // first seen running: created at -100
	for name, tc := range map[string]struct {
		unit    []*podState
		blocked []*podState
		want    victimCandidate
	}{
		"one pod": {
			unit: []*podState{high},
			want: victimCandidate{priority: 5, admitted: at(10), uid: "g2"},
		},
		"one pod, refused": {
			unit:    []*podState{low},
			blocked: []*podState{low},
			want:    victimCandidate{blocked: true, borrowing: true, priority: 1, admitted: at(20), uid: "g1"},
		},
		"a group: most valuable member, borrowing if any": {
			unit: []*podState{low, high},
			want: victimCandidate{borrowing: true, priority: 5, admitted: at(10), uid: "g1"},
		},
		"a group with a member first seen running: its creation": {
			unit:    []*podState{low, high, seen},
			blocked: []*podState{seen},
			want:    victimCandidate{blocked: true, borrowing: true, priority: 5, admitted: at(-100), uid: "g1"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			blockedAt := map[*podState]time.Time{}
			for _, p := range tc.blocked {
				blockedAt[p] = t0
			}
			got := newVictimCandidate(tc.unit, blockedAt)
			if !slices.Equal(got.unit, tc.unit) {
				t.Errorf("unit = %v, want the unit given", got.unit)
			}
			got.unit = nil
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(victimCandidate{})); diff != "" {
				t.Errorf("candidate (-want +got):\n%s", diff)
			}
		})
	}
}
