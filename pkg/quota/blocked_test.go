package quota

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestEvictionBlocked: a victim whose eviction a PodDisruptionBudget refuses ranks
// last; other victims that make room (keeping team-a at its hard) are chosen in its
// place, and it stays the victim only when none would do. Team-a (hard 4, may borrow
// 4) runs its pods, each admitted in turn; then team-b's pod asks for its own hard.
func TestEvictionBlocked(t *testing.T) {
	type pod struct{ name, cpu string }
	type refusal struct {
		pod     string
		retry   bool     // it stays the victim
		instead []string // victims chosen in its place
	}
	for name, tc := range map[string]struct {
		a        []pod
		bWants   string
		first    []string
		refusals []refusal
	}{
		"another pod within the borrowed part goes instead": {
			a:      []pod{{"a1", "1"}, {"a2", "1"}, {"a3", "1"}, {"a4", "1"}, {"a5", "1"}, {"a6", "1"}},
			bWants: "3", first: []string{"a6"},
			refusals: []refusal{{pod: "a6", instead: []string{"a5"}}},
		},
		"every other victim refused too: the first refused is tried again, the sibling keeps its hard": {
			a:      []pod{{"a1", "4"}, {"a2", "1"}, {"a3", "1"}},
			bWants: "3", first: []string{"a3"},
			refusals: []refusal{
				{pod: "a3", instead: []string{"a2"}},
				{pod: "a2", instead: []string{"a3"}}, // both refused: the most recent again
				{pod: "a3", retry: true},
			},
		},
		"the only victim: tried again": {
			a:      []pod{{"a1", "4"}, {"a2", "1"}},
			bWants: "4", first: []string{"a2"},
			refusals: []refusal{{pod: "a2", retry: true}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			q, clk := newTestQueue(victimsAtOnce)
			family(q, makeBudget("team-b", "b"))
			for i, p := range tc.a {
				q.UpsertPod(makePod(p.name).NS("team-a").Created(i).Req("cpu=" + p.cpu).Pod())
				admitNames(q)
				clk.Step(1e9)
			}
			q.UpsertPod(makePod("b1").NS("team-b").Created(100).Req("cpu=" + tc.bWants).Pod())
			if got := admitNames(q); len(got) != 0 {
				t.Fatalf("admitted %v", got)
			}
			if diff := cmp.Diff(tc.first, victimNames(t, q)); diff != "" {
				t.Fatalf("first victims (-want +got):\n%s", diff)
			}
			firstRefused := map[string]bool{}
			for _, r := range tc.refusals {
				uid := makePod(r.pod).NS("team-a").Pod().UID
				now := clk.Now()
				retry, since := q.EvictionBlocked(uid)
				if retry != r.retry {
					t.Errorf("EvictionBlocked(%s) = %v, want %v", r.pod, retry, r.retry)
				}
				if !firstRefused[r.pod] && !since.Equal(now) {
					t.Errorf("EvictionBlocked(%s) says refused since %v, want %v (now)", r.pod, since, now)
				}
				firstRefused[r.pod] = true
				if diff := cmp.Diff(r.instead, victimNames(t, q)); diff != "" {
					t.Errorf("after %s refused, victims instead (-want +got):\n%s", r.pod, diff)
				}
				if got := q.PreemptionNeeded(uid); got != r.retry {
					t.Errorf("%s still to be evicted = %v, want %v", r.pod, got, r.retry)
				}
				clk.Step(1e9)
			}
		})
	}
}
