package estimate

import (
	"fmt"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// Source is where an expected duration comes from, in the order it is trusted.
type Source string

const (
	// SourceDeadline: the pod's spec.activeDeadlineSeconds, counted from
	// status.startTime. The kubelet ends the pod then at the latest.
	SourceDeadline Source = "Deadline"
	// SourceDeclared: the quotagate.io/expected-duration annotation, counted from
	// status.startTime.
	SourceDeclared Source = "Declared"
	// SourceLearned: the durations of finished pods that look alike (Learner),
	// counted from when quota was taken (quotagate.io/admitted-at).
	SourceLearned Source = "Learned"
	// SourceNone: nothing is known; the pod is expected to hold its quota for ever.
	SourceNone Source = ""
)

// Expectation is how long a pod is expected to hold its quota, and from when.
type Expectation struct {
	Duration
	Source Source
	// Start is when Duration counts from: status.startTime for a deadline or a
	// declared duration, the admitted-at annotation (else status.startTime) for a
	// learned one. It is zero for a pod that has not started (a gated pod): its
	// duration counts from its admission.
	Start time.Time
	// Ignored says why the expected-duration annotation was not used, when the pod
	// has one that does not parse or is not positive ("" otherwise).
	Ignored string
}

// Known reports whether anything is expected: false means the pod holds its quota for
// as long as anyone can tell.
func (e Expectation) Known() bool { return e.Source != SourceNone }

// Ends returns when a pod that holds its quota is expected to end: its median, and its
// earliest and latest in the range, counted from Start (from now when Start is zero). An
// end already past (the pod runs longer than expected) is now: it may end at any moment.
//
// The median, not the mean (Duration.Center, which a simulation gives the pods it
// admits): what a queue waits for first is the earliest of the running pods' ends, and
// means put it late; what it waits for after that is a sum of the admitted pods' runs,
// and medians put it early (make bench-estimates, docs/visibility.md).
func (e Expectation) Ends(now time.Time) (median, low, high time.Time) {
	start := e.Start
	if start.IsZero() {
		start = now
	}
	at := func(d time.Duration) time.Time {
		if t := start.Add(d); t.After(now) {
			return t
		}
		return now
	}
	return at(e.Median), at(e.Low), at(e.High)
}

// gottMax bounds the draw of a pod that outlasted every run (afterAll): at most 19
// times as long again as it has run.
const gottMax = 0.95

// drawEnd is one draw of when a pod that holds its quota at now ends: the rest of a
// learned run longer than it has held its quota so far (its kind's runs that lasted
// longer), smoothed (Duration.drawAfter). A deadline or a declared duration is not drawn: Ends' median. It
// is false for a pod that outlasted every run, or whose draws keep falling short: its
// end is afterAll's.
func (e Expectation) drawEnd(now time.Time, r *rand.Rand, sp spread) (time.Time, bool) {
	median, _, _ := e.Ends(now)
	if e.Source != SourceLearned || len(e.runs) == 0 {
		return median, true
	}
	_, elapsed := e.held(now)
	if !e.outlasted {
		for range 8 {
			if rest, ok := e.drawAfter(r, sp, elapsed); ok {
				return now.Add(rest), true
			}
		}
	}
	if elapsed <= 0 {
		return median, true
	}
	return time.Time{}, false
}

// afterAll is the end of a pod that has held its quota longer than every run of its
// kind (drawEnd's false): as long again as it has run times u/(1-u), u uniform below
// gottMax, the remaining time of a run seen at a random moment of its life, whose
// median is as long as it has run (Gott's rule), rather than at once. u is drawn once
// per workload and simulation (durations.outlastedBy): pods of one workload run about
// as long as each other, and a queue behind six of them that started together waits
// for all six alike, not for the first of six independent draws.
func (e Expectation) afterAll(now time.Time, u float64) time.Time {
	_, elapsed := e.held(now)
	return now.Add(time.Duration(float64(elapsed) * u / (1 - u)))
}

// held is when the pod took its quota (now when not yet) and for how long it has held
// it at now.
func (e Expectation) held(now time.Time) (start time.Time, elapsed time.Duration) {
	start = e.Start
	if start.IsZero() {
		start = now
	}
	return start, max(now.Sub(start), 0)
}

// Expect returns how long pod is expected to hold its quota, in this order of trust:
// its own deadline (spec.activeDeadlineSeconds), a declared duration (the
// quotagate.io/expected-duration annotation), the Learner's durations for its keys
// (KeysOf(pod, budgets)), else SourceNone. A deadline is the latest the pod can end:
// its range reaches down to the learned Low when the Learner knows the pod's kind. A
// pod that has held its quota for a while at now is expected to run as the runs of its
// kind that lasted longer (Learner.EstimateAfter).
func (l *Learner) Expect(pod *corev1.Pod, budgets []quota.BudgetKey, now time.Time) Expectation {
	f := FactsOf(pod)
	return l.ExpectFacts(&f, budgets, now)
}

// ExpectFacts is Expect for the pod f are the facts of.
func (l *Learner) ExpectFacts(f *Facts, budgets []quota.BudgetKey, now time.Time) Expectation {
	var elapsed time.Duration
	if !f.Held.IsZero() {
		elapsed = max(now.Sub(f.Held), 0)
	}
	learned, hasLearned := l.EstimateAfter(f.Keys(budgets), elapsed)
	var out Expectation
	switch {
	case f.Deadline > 0:
		d := f.Deadline
		out = Expectation{Source: SourceDeadline, Start: f.Started, Duration: Duration{
			Median: d, Mean: d, Low: d, High: d, Basis: "spec.activeDeadlineSeconds",
		}}
		if hasLearned && learned.Low < d {
			out.Low, out.Samples = learned.Low, learned.Samples
		}
	case f.Declared > 0:
		out = Expectation{Source: SourceDeclared, Start: f.Started, Duration: Duration{
			Median: f.Declared, Mean: f.Declared, Low: f.Declared, High: f.Declared,
			Basis: "annotation " + v1alpha1.ExpectedDurationAnnotation,
		}}
	case hasLearned:
		out = Expectation{Source: SourceLearned, Start: f.Held, Duration: learned}
	}
	out.Ignored = f.Ignored
	return out
}

// Observe learns from a pod that ended: one that is Succeeded or Failed (both held
// their quota until then; quota, not success, is what an estimate is about), with a
// start. Its duration is from when it took quota (holdStart) to when its last
// container finished (now, if no container says). It returns false, learning nothing,
// for a pod that did not end or never started. Call it once per pod: on the update
// that first shows it ended.
func (l *Learner) Observe(pod *corev1.Pod, budgets []quota.BudgetKey, now time.Time) bool {
	f := FactsOf(pod)
	return l.ObserveFacts(&f, budgets, now)
}

// ObserveFacts is Observe for the pod f are the facts of.
func (l *Learner) ObserveFacts(f *Facts, budgets []quota.BudgetKey, now time.Time) bool {
	if !f.Ended || f.Held.IsZero() {
		return false
	}
	end := f.Finished
	if end.IsZero() {
		end = now
	}
	if !end.After(f.Held) {
		return false
	}
	l.Record(f.Keys(budgets), end.Sub(f.Held))
	return true
}

// declaredDuration parses the expected-duration annotation: 0 and "" when there is
// none, 0 and why when it is unusable.
func declaredDuration(pod *corev1.Pod) (time.Duration, string) {
	raw, ok := pod.Annotations[v1alpha1.ExpectedDurationAnnotation]
	if !ok {
		return 0, ""
	}
	d, err := time.ParseDuration(raw)
	switch {
	case err != nil:
		return 0, fmt.Sprintf("annotation %s=%q is not a duration (like 90m or 2h30m): ignored", v1alpha1.ExpectedDurationAnnotation, raw)
	case d <= 0:
		return 0, fmt.Sprintf("annotation %s=%q is not positive: ignored", v1alpha1.ExpectedDurationAnnotation, raw)
	}
	return d, ""
}

// startTime is status.startTime, zero when the kubelet has not started the pod.
func startTime(pod *corev1.Pod) time.Time {
	if pod.Status.StartTime == nil {
		return time.Time{}
	}
	return pod.Status.StartTime.Time
}

// holdStart is when the pod took its quota: the admitted-at annotation the manager's
// ungate patch writes, else status.startTime (a pod quotagate did not admit).
func holdStart(pod *corev1.Pod) time.Time {
	if raw, ok := pod.Annotations[v1alpha1.AdmittedAtAnnotation]; ok {
		if t, err := time.Parse(time.RFC3339, raw); err == nil {
			return t
		}
	}
	return startTime(pod)
}

// finishedAt is when the pod's last container finished, zero when none says.
func finishedAt(pod *corev1.Pod) time.Time {
	var last time.Time
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, c := range list {
			if t := c.State.Terminated; t != nil && t.FinishedAt.After(last) {
				last = t.FinishedAt.Time
			}
		}
	}
	return last
}
