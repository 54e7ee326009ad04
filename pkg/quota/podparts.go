package quota

import (
	"time"

	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
)

// What each part knows of one pod, on the pod's record (podState.charge, .attempt,
// .queued, .preemption): the part's own files write the fields, and every other file
// reads them through the methods here (parts_test.go checks both). They live in this
// file, below the parts, so that reading them ties a file to nothing but the record.

// podCharge is what the charges part knows of one pod: only charges.go writes or reads
// its fields; the other parts read it through the methods below.
type podCharge struct {
	to     []*budget // where its usage is charged (phases assumed and charged)
	usage  amount.List
	claims []claimAmount // the claims charged with it (its claims when it was charged)
	// pinned are the budgets that admitted it, or that covered it when the core first
	// saw it running: it stays charged to those that exist while it runs, whatever its
	// labels become. They are the core's own record, never read from the pod, so a
	// tenant cannot charge a budget by writing its name on a pod.
	pinned []BudgetKey
	// labels are the labels that decide which budgets cover it while it is charged:
	// those it was admitted with, or (first seen running) those its admitted-labels
	// annotation records, else those it had then. A relabelled running pod is covered
	// as before.
	labels map[string]string
	// releaseIndex is its place in charges.releases (-1: not there).
	releaseIndex int
}

// newPodCharge is a pod's charge before it is charged.
func newPodCharge() podCharge { return podCharge{releaseIndex: -1} }

// budgets returns where the pod is charged; the caller does not change the slice.
func (c *podCharge) budgets() []*budget { return c.to }

// amounts returns what the pod is charged (nil while it waits).
func (c *podCharge) amounts() amount.List { return c.usage }

// claimAmounts returns the claims charged with the pod.
func (c *podCharge) claimAmounts() []claimAmount { return c.claims }

// pins returns the budgets the pod stays charged to while they exist.
func (c *podCharge) pins() []BudgetKey { return c.pinned }

// coverLabels returns the labels that decide which budgets cover the charged pod.
func (c *podCharge) coverLabels() map[string]string { return c.labels }

// podAttempt is what the admitter knows of one pod: only the admitter's files (admit.go,
// attempts.go, timers.go, flavor_choice.go) write or read its fields; the other parts
// ask its methods.
type podAttempt struct {
	// admitted is the reason it was admitted, handed out again with a retry, and
	// borrowing the budgets it was admitted beyond the hard of (borrowingIn).
	admitted  Reason
	borrowing []BudgetKey
	// admittedAt is when the core admitted it (zero when first seen running): the
	// most recently admitted are preempted first.
	admittedAt time.Time

	// An ungate attempt is fenced on the pod's resourceVersion (the patch tests it),
	// so it can apply only to that version. attemptRV is the newest version an attempt
	// was fenced on; unresolved is set while it is not known whether one applied: the
	// charge stands until the pod is seen ungated, seen gated at a version newer than
	// attemptRV, or is gone.
	attemptRV  string
	unresolved bool
	retryAt    time.Time // end of its backoff (waiting), or when to retry an unresolved ungate
	// preemptAt is when its preemption cooldown ends: the admitter evaluates it again
	// then (admitter.endCooldowns), and pods may be evicted for it from then on.
	preemptAt time.Time
	attempts  int
	inFlight  bool // returned by Admit, Done not called yet

	backoffIndex  int // its place in admitter.backoff (-1: not there)
	cooldownIndex int // its place in admitter.cooldowns (-1: not there)
}

// newPodAttempt is a pod's attempt record before it is admitted.
func newPodAttempt() podAttempt { return podAttempt{backoffIndex: -1, cooldownIndex: -1} }

// admittedTime is when the core admitted the pod; zero when it was first seen running.
func (a *podAttempt) admittedTime() time.Time { return a.admittedAt }

// borrowed returns the budgets the pod was admitted beyond the hard of.
func (a *podAttempt) borrowed() []BudgetKey { return a.borrowing }

// retryTime is the end of the pod's backoff, or when an unresolved ungate is tried
// again.
func (a *podAttempt) retryTime() time.Time { return a.retryAt }

// settled reports whether no ungate attempt of the pod is in flight or unresolved.
func (a *podAttempt) settled() bool { return !a.inFlight && !a.unresolved }

// podEntries is where the agenda keeps one waiting pod: its entry in each covering
// budget's queues, parallel to podState.cover. Only the agenda's files (agenda.go,
// wake.go) touch its field; the other parts ask its methods.
type podEntries struct{ list []*entry }

// all returns the pod's entries; the caller does not change the slice.
func (q *podEntries) all() []*entry { return q.list }

// any reports whether the pod is in some budget's queues.
func (q *podEntries) any() bool { return len(q.list) > 0 }

// podPreemption is what the preemptions part knows of one pod without a lookup. Only
// the part's files touch its field; the other parts ask touched.
type podPreemption struct {
	// kept is set once the part keeps a record of the pod (a victim, evicted, or
	// refused by a PDB): only then does forget ask the part to drop it, so that a pod's
	// end enters the part only when preemption touched the pod.
	kept bool
}

// touched reports whether the preemptions part keeps a record of the pod.
func (p podPreemption) touched() bool { return p.kept }
