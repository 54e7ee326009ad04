package estimate

import (
	"time"

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
	// Reason is why it is admitted (the admission's) or why it waits (Wait.Reason).
	Reason quota.Reason
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
// ahead. The result is nil when o.Done was closed before those decisions were all
// taken.
func Place(w World, o Options, uids []types.UID) []Placement {
	s := newSim(&w, &o, durations{})
	if o.stopped() {
		return nil
	}
	s.admissions = map[types.UID]admission{}
	s.admit()
	if o.stopped() {
		return nil
	}
	r := s.q.Reader()
	out := make([]Placement, len(uids))
	for i, uid := range uids {
		pl := Placement{Pod: quota.PodRef{UID: uid}}
		if j, ok := s.waiting[uid]; ok {
			pl.Pod = w.Waiting[j].Pod.PodRef
		}
		if a, ok := s.admissions[uid]; ok {
			pl.Admitted, pl.Found, pl.Preempts = true, true, a.preempts
			pl.Budgets, pl.Borrowing, pl.Reason = a.a.Budgets, a.a.Borrowing, a.a.Reason
			if a.a.Flavor != nil {
				pl.Flavor = a.a.Flavor.Name
			}
			out[i] = pl
			continue
		}
		pl.Wait, pl.Found = r.PodWait(uid)
		pl.Reason = pl.Wait.Reason
		out[i] = pl
	}
	return out
}

// WhatIf is the answer to a what-if: pods added to a world, what the core says of each
// at once (Place) and, unless NoStarts says why not, when each starts (Simulate).
type WhatIf struct {
	// Now is the world's: when the pods are supposed created.
	Now time.Time
	// Pods are the added pods' views, as the core takes them.
	Pods       []quota.Pod
	Placements []Placement
	// Starts are in the order of Pods; nil when NoStarts says why there are none, or
	// when Stopped.
	Starts   []Start
	NoStarts string
	// Stopped is true when o.Done was closed before the answer was complete:
	// Placements are nil when it was closed before they were known, Starts when it
	// was closed before the simulation of starts ended.
	Stopped bool
}

// Suppose answers a what-if about the last n pods of w.Waiting (the added ones):
// their Placements and, when noStarts is empty, their Starts, from o.Draws runs
// (WhatIfDraws when 0). Each run stops once the added pods have all started: the
// world's other pods are simulated only as far as they bear on those. Closing o.Done
// stops it (Stopped).
func Suppose(w World, o Options, n int, noStarts string) WhatIf {
	added := w.Waiting[len(w.Waiting)-n:]
	out := WhatIf{Now: w.Now, Pods: make([]quota.Pod, n), NoStarts: noStarts}
	uids := make([]types.UID, n)
	for i, p := range added {
		out.Pods[i], uids[i] = p.Pod, p.Pod.UID
	}
	if out.Placements = Place(w, o, uids); out.Placements == nil {
		out.Stopped = true
		return out
	}
	if noStarts == "" {
		if o.Draws <= 0 {
			o.Draws = WhatIfDraws
		}
		o.only = n
		if starts := Simulate(w, o); starts != nil {
			out.Starts = starts[len(w.Waiting)-n:]
		} else {
			out.Stopped = true
		}
	}
	return out
}
