package quota

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/labels"
)

// systemNodeCritical is the priority of PriorityClass system-node-critical.
const systemNodeCritical = 2000001000

// TestPriorityCeiling: a pod of a system priority class ranks as the highest user class
// in a shared queue, not ahead of it; below the ceiling, priorities order as ever.
func TestPriorityCeiling(t *testing.T) {
	for name, tc := range map[string]struct {
		ceiling []Option
		want    []string // admission order, one pod per Admit
	}{
		"default ceiling: the system pod waits its turn behind an earlier top user pod": {
			want: []string{"top-user", "system", "user"},
		},
		"a lower ceiling clamps more": {
			ceiling: []Option{WithPriorityCeiling(100)},
			want:    []string{"user", "top-user", "system"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			q, clk := newTestQueue(tc.ceiling...)
			q.UpsertBudget(makeBudget("", "shared").Hard("cpu=1").Namespaces(labels.Everything()).Obj())
			q.UpsertPod(makePod("blocker").NS("team-c").Req("cpu=1").Ungated().Pod())
			q.UpsertPod(makePod("user").NS("team-c").Created(1).Priority(100).Req("cpu=1").Pod())
			q.UpsertPod(makePod("top-user").NS("team-a").Created(2).Priority(DefaultPriorityCeiling).Req("cpu=1").Pod())
			q.UpsertPod(makePod("system").NS("team-b").Created(3).Priority(systemNodeCritical).Req("cpu=1").Pod())
			var got []string
			for _, done := range []string{"blocker", "", ""} {
				if done == "" {
					done = got[len(got)-1]
				}
				q.DeletePod(makePod(done).Pod().UID)
				clk.Step(1e9)
				got = append(got, admitNames(q)...)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("admission order (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPriorityCeilingInPreemption: a system-priority pod does not count as of higher
// priority than a pod at the ceiling, so LowerPriority preemption spares it.
func TestPriorityCeilingInPreemption(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "a").Hard("cpu=1").PreemptLowerPriority().Obj())
	q.UpsertPod(makePod("top").Priority(DefaultPriorityCeiling).Req("cpu=1").Pod())
	admitNames(q)
	q.UpsertPod(makePod("system").Created(1).Priority(systemNodeCritical).Req("cpu=1").Pod())
	admitNames(q)
	if got := victimNames(t, q); len(got) != 0 {
		t.Errorf("a system-priority pod preempted %v, a pod at the ceiling", got)
	}
}
