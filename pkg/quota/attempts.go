package quota

import (
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
)

// Ungate attempts and what their outcomes prove (docs/guarantees.md, "An ungate is
// charged until its outcome is known"). An admission is charged before its patch is
// sent, like the scheduler's assumed pods. An error does not prove that the patch was
// not applied: the response may have been lost after the API server applied it, or a
// retry's `test` may fail because the first try already removed the gate. So the charge
// is given back only on proof:
//
//   - the pod is seen without the gate: it runs, the charge stands (UpsertPod);
//   - the pod is gone (Done with Gone, or DeletePod);
//   - the pod is seen still gated at a resourceVersion newer than every attempt. Each
//     attempt tests the resourceVersion it was built from, so it can apply to that
//     version only; once the pod has moved past it still gated, no attempt applied and
//     none ever will. Such a view comes from the informer or from a fresh read that the
//     controller feeds in with UpsertPod.
//
// Until then the pod stays charged ("unresolved"), and Admit hands its admission out
// again after a backoff, so that the controller tries once more, fenced on the version
// it sees then.

// Admission is one decision: the pod may be ungated. Its usage is already charged to
// Budgets (reserved) when Admit returns it; the controller sends the patch and reports
// the outcome with Done.
type Admission struct {
	Pod PodRef `json:"pod"`
	// Budgets that admitted the pod: those it was charged to when it was admitted, for
	// the admitted-by annotation (a retry names them again); empty when no budget
	// covered it.
	Budgets []BudgetKey `json:"budgets,omitempty"`
	// Borrowing are the budgets of Budgets it is admitted beyond the hard of, by
	// borrowing under their parent (for the borrowing annotation); empty when none.
	Borrowing []BudgetKey `json:"borrowing,omitempty"`
	// Group is the pod's group, if any; a group's admissions come in one batch.
	Group  string `json:"group,omitempty"`
	Reason Reason `json:"reason"`
	// Created is the pod's creation time, for the wait-time metric.
	Created time.Time `json:"created"`
	// Flavor is the flavor the pod is admitted on (nil for none): the ungate patch adds
	// its node labels to the pod's nodeSelector and its tolerations to the pod's.
	Flavor *Flavor `json:"flavor,omitempty"`
	// Claims are the ResourceClaims the pod is charged for (Pod.Claims, by name and
	// UID): the controller pins each before it sends the patch, and reports NotSent when
	// one of them is no longer the claim that was charged.
	Claims []ClaimCharge `json:"claims,omitempty"`

	// Labels are the labels the pod is admitted with, which decide the budgets that
	// cover it for as long as it runs (for the admitted-labels annotation, so that a
	// restarted manager reads them back).
	Labels map[string]string `json:"labels,omitempty"`

	// MaxRuntime is the quotagate.io/max-runtime the pod was admitted with (0 for none),
	// for the admitted-max-runtime annotation: what it reserved of its budgets' hours
	// stays fixed across restarts, whatever its owner writes later.
	MaxRuntime time.Duration `json:"maxRuntime,omitempty"`

	// decided is what the decision read of the pod's view (Fits).
	decided decision
}

// decision is what of a pod decides the flavors it is charged on.
type decision struct {
	nodeSelector map[string]string
	affinity     *corev1.NodeSelector
	tolerations  []corev1.Toleration
}

func decisionOf(p *Pod) decision {
	return decision{nodeSelector: p.NodeSelector, affinity: p.NodeAffinity, tolerations: p.Tolerations}
}

// Fits reports whether the admission may be applied to view, a version of the pod the
// controller is about to patch, which may be newer than the one the core decided on:
// only if its node selector, required affinity and tolerations are those the decision
// was taken on. A gated pod's scheduling directives may still change (KEP-3838), and the
// flavors it is charged on follow from them (flavorIndex.reach): applied to a version
// that reaches other nodes, the admission would let the pod run where it is not
// charged. When it does not fit, the controller sends nothing (NotSent) and the core
// decides again on the view it gets next. (Labels may differ: the budgets that cover an
// admitted pod are those of the labels it was admitted with, Labels, whatever its
// labels are.)
func (a Admission) Fits(view Pod) bool {
	d := a.decided
	return maps.Equal(d.nodeSelector, view.NodeSelector) && equality.Semantic.DeepEqual(d.affinity, view.NodeAffinity) &&
		sameTolerations(d.tolerations, view.Tolerations)
}

// sameTolerations reports whether two lists hold the same tolerations, in order.
func sameTolerations(a, b []corev1.Toleration) bool {
	return slices.EqualFunc(a, b, func(x, y corev1.Toleration) bool {
		return x.MatchToleration(&y) && equalSeconds(x.TolerationSeconds, y.TolerationSeconds)
	})
}

func equalSeconds(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// Result is the outcome of an ungate attempt, reported with Done.
type Result int

const (
	// Ungated: the patch succeeded, or the pod was seen without the gate. The charge
	// stays.
	Ungated Result = iota
	// Unknown: the attempt failed or its response was lost, so whether it applied is
	// not known. The charge stays; the admission is handed out again after a backoff
	// (100 ms, doubling, at most 10 s) unless a view of the pod settles it first.
	Unknown
	// Gone: the pod no longer exists (404, or another pod now has its name); it is
	// forgotten.
	Gone
	// NotSent: no patch was sent, because the pod as the controller sees it cannot take
	// the admission (its node selector asks for other values of the flavor's labels
	// than the flavor's, changed since the decision), or a ResourceClaim it is charged
	// for could not be pinned (it is gone, replaced or being deleted, or the pin failed).
	// Unless an earlier attempt may still apply, the charge is given back and the pod,
	// after a backoff, is decided again on what it asks now.
	NotSent
)

// Done reports the outcome of the ungate attempt for a pod Admit returned. attemptRV is
// the resourceVersion the attempt was fenced on (its `test` op); it matters for
// Unknown only. Done must be called once for every admission; calls for unknown pods
// are ignored.
func (q *AdmissionQueue) Done(uid types.UID, r Result, attemptRV string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch p, then := q.admit.done(uid, r, attemptRV); then {
	case thenForget:
		q.place.forget(p)
	case thenPlace:
		q.place.waitAgain(p)
	}
}

// afterDone is what the placer does with a pod after admitter.done.
type afterDone uint8

const (
	thenNothing afterDone = iota
	thenForget            // it is gone
	thenPlace             // its charge was given back: it waits again (placer.waitAgain)
)

func (a *admitter) done(uid types.UID, r Result, attemptRV string) (*podState, afterDone) {
	p := a.pods.get(uid)
	if p == nil || !p.attempt.inFlight {
		return nil, thenNothing
	}
	p.attempt.inFlight = false
	switch r {
	case Ungated:
		p.attempt.attempts = 0
		p.attempt.unresolved = false
	case Gone:
		return p, thenForget
	case NotSent:
		if p.phase != phaseAssumed {
			return nil, thenNothing // already seen ungated: it runs, the charge stays
		}
		p.attempt.attempts++
		if !p.attempt.unresolved || a.provesNotUngated(p, p.pod) {
			a.giveBack(p)
			return p, thenPlace
		}
		// An earlier attempt may still apply: keep the charge until a view settles it.
		p.attempt.retryAt = a.opts.clock.Now().Add(a.opts.backoff(p.attempt.attempts))
		a.backoff.Fix(p)
	case Unknown:
		if p.phase != phaseAssumed {
			return nil, thenNothing // already seen ungated: it runs, the charge stays
		}
		if p.attempt.attemptRV == "" || newerVersion(attemptRV, p.attempt.attemptRV) {
			p.attempt.attemptRV = attemptRV
		}
		p.attempt.unresolved = true
		p.attempt.attempts++
		if a.provesNotUngated(p, p.pod) {
			// The core already holds a view newer than the attempt, still gated.
			a.giveBack(p)
			return p, thenPlace
		}
		p.attempt.retryAt = a.opts.clock.Now().Add(a.opts.backoff(p.attempt.attempts))
		a.backoff.Fix(p)
	}
	return nil, thenNothing
}

// provesNotUngated reports whether view shows that no ungate attempt of the assumed pod
// applied: gated, at a version newer than every attempt, with no attempt in flight.
func (a *admitter) provesNotUngated(p *podState, view Pod) bool {
	return p.phase == phaseAssumed && p.attempt.unresolved && !p.attempt.inFlight && view.Gated &&
		newerVersion(view.ResourceVersion, p.attempt.attemptRV)
}

// giveBack returns an assumed pod whose attempts are proven not to have applied: its
// charge is released and it backs off (by the attempts Done counted) before it is
// evaluated again. The caller then places it in its queues (placer.waitAgain).
func (a *admitter) giveBack(p *podState) {
	a.backoff.Remove(p)
	a.charges.end(p)
	p.place(nil, nil) // a gated pod has none: it is chosen again when it is admitted again
	p.attempt.unresolved = false
	p.attempt.attemptRV = ""
	p.attempt.retryAt = a.opts.clock.Now().Add(a.opts.backoff(p.attempt.attempts))
	p.backOff()
	a.backoff.Fix(p)
}
