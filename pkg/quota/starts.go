package quota

import (
	"fmt"
	"time"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota/window"
)

// Start control (docs/start-control.md): a gated pod may start only once its own start
// rule (Pod.Start) and those of the budgets that cover it (Budget.Start) all allow it.
// Until then it is parked, uncharged, with CodeStartLater; the placer keeps, for each
// waiting pod that has a rule, its verdict and when the rules next change (a time it may
// start, or a schedule's window closing), and the admitter's timers place it again then
// (placer.runStarts). A pod with no rule in a core where no pod has one never enters
// this file.

// startTimer is the placer's record of one pod's start rules.
type startTimer struct {
	p *podState
	// at is when its rules next change (zero: never; then it is in no heap).
	at time.Time
	// wait is why it may not start, nil when it may.
	wait  *waitInfo
	index int
}

func newStartHeapLess(a, b *startTimer) bool { return a.at.Before(b.at) }

// startWait returns why p may not start at now (nil when it may), remembers it and
// sets p's timer for the next change of its rules.
func (pl *placer) startWait(p *podState, now time.Time) *waitInfo {
	var w *waitInfo
	var next time.Time
	if p.pod.StartError != "" {
		w = &waitInfo{code: CodeStartInvalid, detail: p.pod.StartError}
	}
	consider := func(rule *window.Start, b *budget) {
		if rule == nil {
			return
		}
		open, n := rule.At(now)
		if !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
		if !open && w == nil {
			w = &waitInfo{code: CodeStartLater, budget: b, detail: rule.Describe(now)}
		}
	}
	consider(p.pod.Start, nil)
	for _, b := range p.cover {
		consider(b.spec.Start, b)
	}
	t := pl.starts[p]
	if w == nil && next.IsZero() {
		pl.dropStart(p) // nothing holds it, and nothing will: no record to keep
		return nil
	}
	if t == nil {
		t = &startTimer{p: p, index: -1}
		pl.starts[p] = t
	}
	t.wait = w
	t.at = next
	if next.IsZero() {
		pl.startDue.Remove(t) // held for ever: by an annotation that does not parse
	} else {
		pl.startDue.Fix(t) // moves it, or adds it when it is in no heap
	}
	return w
}

// memberStartWait returns why a gated member of g may not start (the first by UID),
// from their remembered verdicts, or nil.
func (pl *placer) memberStartWait(g *group) *waitInfo {
	var out *waitInfo
	for _, r := range g.waiting.Items() {
		t := pl.starts[r.pod]
		if t == nil || t.wait == nil {
			continue
		}
		if out == nil || r.pod.pod.UID < out.ahead.UID {
			w := *t.wait
			w.ahead = r.pod.pod.PodRef
			out = &w
		}
	}
	return out
}

// fireStarts places again the waiting pods whose start rules changed by now.
func (pl *placer) fireStarts(now time.Time) {
	for t, ok := pl.startDue.Peek(); ok && !t.at.After(now); t, ok = pl.startDue.Peek() {
		pl.startDue.Remove(t)
		t.at = time.Time{}
		p := t.p
		if p.forgotten || p.phase != phaseWaiting {
			delete(pl.starts, p)
			continue
		}
		if p.group != nil {
			pl.settleMember(p)
		} else {
			pl.settleWaiting(p)
		}
	}
}

// nextStartChange is when the first pod's start rules next change.
func (pl *placer) nextStartChange() (time.Time, bool) {
	t, ok := pl.startDue.Peek()
	if !ok {
		return time.Time{}, false
	}
	return t.at, true
}

// dropStart forgets p's start record.
func (pl *placer) dropStart(p *podState) {
	if t := pl.starts[p]; t != nil {
		pl.startDue.Remove(t)
		delete(pl.starts, p)
	}
}

// parseStart reads a pod's start annotations: the rule, or why they do not parse.
func parseStart(a map[string]string) (*window.Start, string) {
	var notBefore time.Time
	if v, ok := a[v1alpha1.NotBeforeAnnotation]; ok {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return nil, fmt.Sprintf("%s %q is not an RFC 3339 time (such as 2026-12-24T18:00:00+01:00)", v1alpha1.NotBeforeAnnotation, v)
		}
		notBefore = t
	}
	schedule := a[v1alpha1.StartScheduleAnnotation]
	var d time.Duration
	if v, ok := a[v1alpha1.StartDurationAnnotation]; ok {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d <= 0 {
			return nil, fmt.Sprintf("%s %q is not a positive duration (such as 8h or 90m)", v1alpha1.StartDurationAnnotation, v)
		}
	}
	zone := a[v1alpha1.StartTimeZoneAnnotation]
	if schedule != "" && d == 0 {
		return nil, fmt.Sprintf("%s needs %s: how long each window stays open", v1alpha1.StartScheduleAnnotation, v1alpha1.StartDurationAnnotation)
	}
	if schedule == "" && (d != 0 || zone != "") {
		return nil, fmt.Sprintf("%s and %s need %s", v1alpha1.StartDurationAnnotation, v1alpha1.StartTimeZoneAnnotation, v1alpha1.StartScheduleAnnotation)
	}
	rule, problem := window.NewStart(notBefore, schedule, d, zone)
	if problem != nil {
		return nil, fmt.Sprintf("%s: %s", v1alpha1.StartScheduleAnnotation, problem.Message)
	}
	return rule, ""
}
