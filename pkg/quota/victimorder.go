package quota

import (
	"cmp"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// The order victims are chosen in (preemptions.decide; docs/budgets.md, "Taking lent
// quota back" and "When a PodDisruptionBudget refuses"). Kueue takes the same decision
// in pkg/scheduler/preemption/common/ordering.go. A candidate is what is evicted
// together: one pod, or a group's running members, which rank as one by their most
// valuable member. First to last:
//
//  1. a candidate whose eviction a PodDisruptionBudget never refused, before one with a
//     refused member (EvictionBlocked);
//  2. one admitted by borrowing (quotagate.io/borrowing; any member), before one that
//     is not;
//  3. the lowest priority (its members' highest) first;
//  4. the most recently admitted (its members' earliest admission) first;
//  5. by the UID of its first member (members in UID order), so that the order is
//     total and does not depend on the order candidates are found in.
//
// Which pods are candidates at all is victimCandidates' business.

// victimCandidate is a unit that may be preempted, with what the victim order reads.
type victimCandidate struct {
	unit []*podState // evicted together; compareVictims does not read it

	blocked   bool      // a PodDisruptionBudget refused the eviction of a member
	borrowing bool      // a member was admitted by borrowing
	priority  int32     // the highest priority of its members
	admitted  time.Time // the earliest admission of its members (admittedTime)
	uid       types.UID // of unit[0]
}

// newVictimCandidate ranks a unit by its most valuable member; blockedAt holds the pods
// whose eviction was refused.
func newVictimCandidate(unit []*podState, blockedAt map[*podState]time.Time) victimCandidate {
	c := victimCandidate{unit: unit, priority: unit[0].pod.Priority, admitted: unit[0].admittedTime(), uid: unit[0].pod.UID}
	for _, m := range unit {
		c.priority = max(c.priority, m.pod.Priority)
		if t := m.admittedTime(); t.Before(c.admitted) {
			c.admitted = t
		}
		if len(m.attempt.borrowed()) > 0 {
			c.borrowing = true
		}
		if _, ok := blockedAt[m]; ok {
			c.blocked = true
		}
	}
	return c
}

// compareVictims orders candidates as they are to be chosen: negative when a goes
// before b.
func compareVictims(a, b victimCandidate) int {
	return cmp.Or(
		falseFirst(a.blocked, b.blocked),
		falseFirst(!a.borrowing, !b.borrowing),
		cmp.Compare(a.priority, b.priority),
		b.admitted.Compare(a.admitted),
		cmp.Compare(a.uid, b.uid),
	)
}

// falseFirst orders false before true.
func falseFirst(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
