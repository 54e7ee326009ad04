package quota

import (
	"slices"
	"time"
)

// The preemption cooldown and its backoff (docs/budgets.md, "Preemption cooldown";
// docs/guarantees.md, "Eviction churn"). A tenant that creates a pod of high priority
// and deletes it again, over and over, would have another team's pods evicted each
// time. Two rules bound that, on the core's own clock:
//
//   - Cooldown: victims are chosen for a unit only once each of its pods has waited the
//     cooldown of its namespace, counted from when the core first saw it (seen; a new
//     leader counts again). Until then decide chooses nobody and says when: the unit
//     waits with PreemptionPending, and the admitter evaluates it again then
//     (admitter.endCooldowns).
//   - Backoff: a namespace's cooldown doubles, up to maxBackoff, for each of its
//     preemptors that vanished: one for which an eviction was accepted and that then
//     went without using the room, that is deleted (or ended) while still gated,
//     admitted without being charged to the budget the room was made in, or gone,
//     other than by an eviction of the manager's, within the cooldown after its
//     admission. The doubling falls back by one for each maxBackoff in which none of
//     the namespace's preemptors vanished. An admission alone does not lower it: a
//     tenant could then reset its backoff with a pod it deletes once admitted.
//
// A preemptor deleted before any eviction for it was accepted cost nobody anything and
// is not counted. The backoff lives in memory: a new leader starts every namespace at
// the cooldown again (and counts every pod's wait again from when it sees it).

// preemptPending says that a unit waits for its preemption cooldown: pods would be
// evicted to make room for it in budget, once it has waited cooldown (its namespace's
// cooldown doubled doublings times), at at. The zero value: it does not.
type preemptPending struct {
	at        time.Time
	cooldown  time.Duration
	doublings int
	budget    BudgetKey
}

// nsBackoff is one namespace's backoff: how often its cooldown is doubled, as of since
// (its preemptor's last vanishing).
type nsBackoff struct {
	doublings int
	since     time.Time
}

// roomMade is what the part keeps of a preemptor (the first pod of a unit victims
// were chosen for), shared by every decision for it: the budget where room is made
// (Preemption.Budget), how many of its evictions were accepted, when it was admitted
// (zero while it waits), and whether it was judged already (its namespace backed off,
// or it is past judging).
type roomMade struct {
	budget     BudgetKey
	evictions  int
	admittedAt time.Time
	judged     bool
}

// cooldownOn reports whether the cooldown (and so the backoff) is on.
func (pr *preemptions) cooldownOn() bool { return pr.cooldown > 0 }

// cooldownOf is namespace ns's cooldown now, and how often it is doubled.
func (pr *preemptions) cooldownOf(ns string, now time.Time) (time.Duration, int) {
	n := pr.doublings(ns, now)
	d := pr.cooldown
	for range n {
		d *= 2
	}
	return min(d, max(pr.maxBackoff, pr.cooldown)), n
}

// doublings is how often ns's cooldown is doubled now: its count, less one for each
// maxBackoff since its last vanished preemptor. A namespace back at the cooldown is
// forgotten.
func (pr *preemptions) doublings(ns string, now time.Time) int {
	b, ok := pr.backoffs[ns]
	if !ok {
		return 0
	}
	n := b.doublings
	if quiet := now.Sub(b.since); pr.maxBackoff > 0 && quiet > 0 {
		n -= int(min(quiet/pr.maxBackoff, time.Duration(n)))
	}
	if n <= 0 {
		delete(pr.backoffs, ns)
		return 0
	}
	return n
}

// maxDoublings is the doubling at which the cooldown reaches maxBackoff: one more would
// change nothing, so the count stops there.
func (pr *preemptions) maxDoublings() int {
	n := 0
	for d := pr.cooldown; d > 0 && d < pr.maxBackoff; d *= 2 {
		n++
	}
	return n
}

// pending says whether a unit for which victims would be chosen must wait for its
// cooldown first, and until when; in returns the zero preemptPending when it need not.
// budget is where the room would be made.
func (pr *preemptions) pending(unit []*podState, budget *budget) preemptPending {
	if !pr.cooldownOn() {
		return preemptPending{}
	}
	now := pr.clock.Now()
	d, n := pr.cooldownOf(unit[0].pod.Namespace, now)
	since := slices.MaxFunc(unit, func(a, b *podState) int { return a.seen.Compare(b.seen) }).seen
	if at := since.Add(d); at.After(now) {
		return preemptPending{at: at, cooldown: d, doublings: n, budget: budget.key}
	}
	return preemptPending{}
}

// roomFor returns the record of the preemptor of unit, made at its first decision;
// nil while the cooldown is off.
func (pr *preemptions) roomFor(unit []*podState, budget *budget) *roomMade {
	if !pr.cooldownOn() {
		return nil
	}
	by := unit[0]
	m := pr.made[by]
	if m == nil {
		m = &roomMade{}
		pr.made[by], by.preemption.kept = m, true
	}
	m.budget = budget.key // where the latest decision makes room
	return m
}

// madeRoom records that an eviction for rec's preemptor was accepted. A preemptor the
// core already forgot (deleted while the eviction was under way) vanished.
func (pr *preemptions) madeRoom(rec *victim) {
	m := rec.made
	if m == nil {
		return
	}
	m.evictions++
	if by := rec.preemptor(); by.forgotten && !m.judged {
		m.judged = true
		pr.vanished(by.pod.Namespace)
	}
}

// preemptorAdmitted judges a preemptor at its admission, charged to charged: admitted
// without the budget its room was made in, it vanished (its room went unused);
// otherwise it is judged again if it goes within the cooldown.
func (pr *preemptions) preemptorAdmitted(p *podState, charged []BudgetKey) {
	m := pr.made[p]
	if m == nil || m.judged {
		return
	}
	if m.evictions == 0 {
		delete(pr.made, p) // nobody was evicted for it
		return
	}
	if !slices.Contains(charged, m.budget) {
		m.judged = true
		delete(pr.made, p)
		pr.vanished(p.pod.Namespace)
		return
	}
	m.admittedAt = pr.clock.Now()
}

// preemptorGone judges a preemptor that ended or was deleted: it vanished when an
// eviction for it was accepted and it never used its room, or used it for less than the
// cooldown (unless the manager evicted it: its own preemptor is not its fault).
func (pr *preemptions) preemptorGone(p *podState) {
	m := pr.made[p]
	if m == nil {
		return
	}
	delete(pr.made, p)
	if m.judged || m.evictions == 0 {
		return
	}
	m.judged = true
	_, evicted := pr.evicting[p]
	now := pr.clock.Now()
	if m.admittedAt.IsZero() || (!evicted && now.Sub(m.admittedAt) < pr.cooldown) {
		pr.vanished(p.pod.Namespace)
	}
}

// vanished doubles namespace ns's cooldown, up to maxBackoff, from now.
func (pr *preemptions) vanished(ns string) {
	now := pr.clock.Now()
	n := min(pr.doublings(ns, now)+1, pr.maxDoublings())
	if n == 0 {
		return
	}
	pr.backoffs[ns] = nsBackoff{doublings: n, since: now}
}
