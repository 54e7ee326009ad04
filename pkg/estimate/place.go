package estimate

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/pkg/quota"
)

// Placement is what the core says at once of a pod added to a world (a what-if: the
// visibility API's podsimulations): either it admits the pod at the world's Now, or
// where and why the pod waits. Like Start, it names no other pod.
type Placement struct {
	Pod quota.PodRef
	// Admitted: the core admits the pod at once, charged to Budgets (empty when no
	// budget covers it), beyond the hard of Borrowing, on Flavor (empty for none),
	// after Preempts victims (in every budget) were preempted to make room.
	Admitted  bool
	Budgets   []quota.BudgetKey
	Borrowing []quota.BudgetKey
	Flavor    string
	Preempts  int
	// Wait is where and why it waits when it is not admitted: its place in each
	// covering budget's queue, and the reason. Wait.Held is set for a pod no budget
	// covers that the core holds. Found is false when the core holds it nowhere
	// (neither admitted nor waiting: not a gated pod of the world).
	Wait  quota.PodWait
	Found bool
}

// Place feeds a fresh core the world, as Simulate does, lets it take its decisions
// at w.Now (every admission it takes then, and the preemptions it decides, whose
// victims end at once), and returns, for each pod of uids (pods of w.Waiting), what
// the core says of it then: admitted at once (on which budgets and flavor), or its
// place in each covering budget's queue and why it waits. The result is in the order
// of uids.
//
// The positions are those of the core after its first decisions: pods the core admits
// at once are out of the queues, so a position counts only the pods still waiting
// ahead.
func Place(w World, o Options, uids []types.UID) []Placement {
	s := newSim(&w, &o, pickMedian)
	s.admissions = map[types.UID]admission{}
	s.admit()
	r := s.q.Reader()
	out := make([]Placement, len(uids))
	for i, uid := range uids {
		pl := Placement{Pod: quota.PodRef{UID: uid}}
		if j, ok := s.waiting[uid]; ok {
			pl.Pod = w.Waiting[j].Pod.PodRef
		}
		if a, ok := s.admissions[uid]; ok {
			pl.Admitted, pl.Found, pl.Preempts = true, true, a.preempts
			pl.Budgets, pl.Borrowing = a.a.Budgets, a.a.Borrowing
			if a.a.Flavor != nil {
				pl.Flavor = a.a.Flavor.Name
			}
			out[i] = pl
			continue
		}
		pl.Wait, pl.Found = r.PodWait(uid)
		out[i] = pl
	}
	return out
}
