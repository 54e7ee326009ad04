package quota

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/quotagate/quotagate/pkg/quota/hours"
	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
)

// hourBooks is the part that keeps the budgets' hours (spec.usageLimits,
// docs/budgets.md, "Hour budgets"): one hours.Ledger per budget that has usageLimits,
// keyed by the budget, so no other part's record holds any of it. The charges part
// tells it when a pod's charge starts and ends; the admitter asks it whether a unit's
// hours fit (wait) before it looks at capacity, runs its timers (a period that ends, a
// step of decay, a pod that reaches its maximum runtime) and asks which pods outran
// their maximum under Exhaustion Evict; the read side asks it for a budget's
// status.usage. It also keeps fair sharing's memory (memories), which counts the same
// charges on the same clock and is written with the same cadence.
type hourBooks struct {
	clock   clock.PassiveClock
	agenda  *agenda
	ledgers map[*budget]*hours.Ledger
	next    map[*budget]time.Time // when each ledger changes on its own (NextChange)

	writeEvery time.Duration // how often a ledger with running pods has its status written
	lastWrite  time.Time

	// memory is fair sharing's memory: what the budgets under a parent with
	// fairSharing.usageHalfLife used, decayed. It rides on the same charges, clock and
	// status writes as the hours.
	memory memories
}

func newHourBooks(c clock.PassiveClock, ag *agenda, writeEvery time.Duration) *hourBooks {
	return &hourBooks{clock: c, agenda: ag, ledgers: map[*budget]*hours.Ledger{}, next: map[*budget]time.Time{},
		writeEvery: writeEvery, lastWrite: c.Now()}
}

// setSpec takes b's spec: a ledger is made when it gains usageLimits (from what its
// status held, and counting the pods charged to it now), changed in place, or
// dropped. It reports whether what fits may have changed.
func (h *hourBooks) setSpec(b *budget, charged func(func(*podState) bool)) bool {
	now := h.clock.Now()
	spec, l := b.spec.Hours, h.ledgers[b]
	switch {
	case spec == nil && l == nil:
		return false
	case spec == nil:
		h.forget(b)
		return true
	case l == nil:
		l = hours.NewLedger(*spec, now, b.spec.HoursRestore)
		h.ledgers[b] = l
		for p := range charged {
			h.startOn(b, l, p, now)
		}
	case l.Spec().Equal(spec):
		return false // the manager's own status write coming back, or another field
	default:
		l.SetSpec(*spec, now)
	}
	h.next[b] = l.NextChange(now)
	return true
}

// forget drops a budget that is deleted or no longer has usageLimits.
func (h *hourBooks) forget(b *budget) {
	delete(h.ledgers, b)
	delete(h.next, b)
}

// forgetBudget drops what is kept of a deleted budget.
func (h *hourBooks) forgetBudget(b *budget) {
	h.forget(b)
	h.memory.forget(b)
}

// beginPass starts an admission pass: usageShare reads memory as it is now, and keeps
// each budget's share until the next pass.
func (h *hourBooks) beginPass() { h.memory.beginPass(h.clock.Now()) }

// usageShare is c's share from memory under its parent f, as the current admission
// pass began; 0 when f has no usageHalfLife (memories.share).
func (h *hourBooks) usageShare(c, f *budget) float64 { return h.memory.share(c, f, h.clock) }

// memoryState is c's status.fairSharing now: what its pods used, decayed, and the
// share that adds; false when c's parent has no usageHalfLife.
func (h *hourBooks) memoryState(c *budget) (hours.State, float64, bool) {
	return h.memory.state(c, h.clock.Now())
}

// start counts a pod that was just charged, in every budget it is charged to that has
// hours.
func (h *hourBooks) start(p *podState) {
	var now time.Time
	for _, b := range p.charge.budgets() {
		if l := h.ledgers[b]; l != nil {
			if now.IsZero() {
				now = h.clock.Now()
			}
			h.startOn(b, l, p, now)
		}
		if f := b.place.Parent(); f != nil && f.spec.UsageHalfLife > 0 {
			if now.IsZero() {
				now = h.clock.Now()
			}
			h.memory.start(b, f, p, now)
		}
	}
}

// chargedSince is when p's charge began: when this core admitted it, else its
// admitted-at annotation (a pod first seen running), never after now.
func chargedSince(p *podState, now time.Time) time.Time {
	at := p.attempt.admittedTime()
	if at.IsZero() {
		at = p.pod.AdmittedAt
	}
	if at.IsZero() || at.After(now) {
		at = now
	}
	return at
}

func (h *hourBooks) startOn(b *budget, l *hours.Ledger, p *podState, now time.Time) {
	at := chargedSince(p, now)
	d, ok := l.Spec().MaxRuntime(p.pod.ActiveDeadline, p.pod.DeclaredRuntime)
	if !ok || p.pod.RuntimeError != "" {
		d = 0 // charged without one (it ran before the budget had hours): nothing reserved
	}
	l.Start(p.pod.UID, rateOf(p.charge.amounts(), p.charge.claimAmounts()), d, at, now)
	h.next[b] = l.NextChange(now)
}

// end stops counting a pod whose charge ends: what it used stays used.
func (h *hourBooks) end(p *podState) {
	if len(h.ledgers) == 0 && h.memory.empty() {
		return
	}
	now := h.clock.Now()
	for _, b := range p.charge.budgets() {
		if l := h.ledgers[b]; l != nil && l.Running(p.pod.UID) {
			l.End(p.pod.UID, now)
			h.next[b] = l.NextChange(now)
		}
		h.memory.end(b, p.pod.UID, now)
	}
}

// rateOf is what a pod is charged per resource, in units of the resource, its claims
// each counted in full (a claim that pods share is charged once to a budget's hard,
// but every pod that holds it keeps it for as long as it runs).
func rateOf(usage amount.List, claims []claimAmount) map[corev1.ResourceName]float64 {
	out := make(map[corev1.ResourceName]float64, len(usage))
	for r, v := range usage {
		out[r] += v.Float64()
	}
	for _, c := range claims {
		for r, v := range c.Usage {
			out[r] += v.Float64()
		}
	}
	return out
}

// wait says whether a unit (one pod, or the gang that goes together) may be admitted
// as far as the hours of budgets go: each budget with hours must hold, beside what its
// pods used and reserved, what each member may use (its charge times its maximum
// runtime). The first budget, in the order of budgets, that does not is named. It
// allocates nothing for a unit that uses none of a budget's resources.
func (h *hourBooks) wait(unit []*podState, budgets []*budget) (waitInfo, bool) {
	if len(h.ledgers) == 0 {
		return waitInfo{}, false
	}
	now := h.clock.Now()
	for _, b := range budgets {
		l := h.ledgers[b]
		if l == nil {
			continue
		}
		var runtimes []time.Duration // per member of unit; 0: not in b, or uses none of its resources
		var longest time.Duration
		for i, p := range unit {
			if !slices.Contains(p.cover, b) || !usesAnyOf(p, l.Names()) {
				continue
			}
			if p.pod.RuntimeError != "" {
				return waitInfo{code: CodeNoMaxRuntime, budget: b, ahead: p.pod.PodRef, detail: p.pod.RuntimeError}, true
			}
			d, ok := l.Spec().MaxRuntime(p.pod.ActiveDeadline, p.pod.DeclaredRuntime)
			if !ok {
				return waitInfo{code: CodeNoMaxRuntime, budget: b, ahead: p.pod.PodRef}, true
			}
			if runtimes == nil {
				runtimes = make([]time.Duration, len(unit))
			}
			runtimes[i], longest = d, max(longest, d)
		}
		if runtimes == nil {
			continue
		}
		need := func(r corev1.ResourceName) float64 {
			sum := 0.0
			for i, p := range unit {
				if runtimes[i] > 0 {
					sum += rateIn(p, r) * runtimes[i].Hours()
				}
			}
			return sum
		}
		if sf, ok := l.CheckFunc(need, now); !ok {
			return waitInfo{code: CodeHoursExhausted, budget: b, resource: sf.Resource, detail: hoursText(b, l, sf, longest)}, true
		}
	}
	return waitInfo{}, false
}

// rateIn is what p would be charged of r per hour: its usage and its claims' (each in
// full), in units of r.
func rateIn(p *podState, r corev1.ResourceName) float64 {
	v := p.usage()[r].Float64()
	for _, c := range p.claims() {
		v += c.Usage[r].Float64()
	}
	return v
}

// usesAnyOf reports whether p would be charged any of names.
func usesAnyOf(p *podState, names []corev1.ResourceName) bool {
	for _, r := range names {
		if rateIn(p, r) > 0 {
			return true
		}
	}
	return false
}

// hoursText is why a unit's hours do not fit in b: "requests.nvidia.com/gpu: 982 of
// 1000 hours used or reserved in 2026-12 in Budget ml/team-a; this pod may use 48
// (until 2027-01-01T00:00:00+01:00)".
func hoursText(b *budget, l *hours.Ledger, sf hours.Shortfall, longest time.Duration) string {
	if sf.Never {
		return fmt.Sprintf("%s: it may use %s resource-hours (its charge times its maximum runtime, %s), more than %s allows in a period (%s): "+HoursNeverFit,
			resourceText(sf.Resource), hoursNum(sf.Need), longest, b.key.Describe(), hoursNum(sf.Limit))
	}
	period, resetAt := l.Period() // as the check just advanced it
	msg := fmt.Sprintf("%s: %s of %s resource-hours used or reserved in %s of %s; this pod may use %s",
		resourceText(sf.Resource), hoursNum(sf.Used+sf.Reserved), hoursNum(sf.Limit), period, b.key.Describe(), hoursNum(sf.Need))
	if !resetAt.IsZero() {
		msg += "; the period resets at " + resetAt.Format(time.RFC3339)
	}
	return msg
}

// HoursNeverFit ends the message of a pod that waits with CodeHoursExhausted because
// it may use, alone, more than a budget's hours in a period: no reset lets it in.
const HoursNeverFit = "it is never admitted as it is"

// hoursNum prints resource-hours as people read them: 982, 0.25, 1.5e+06.
func hoursNum(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

// runTimers applies what the clock makes due: a ledger whose NextChange passed (a new
// period, a day out of a rolling window, a step of decay, a pod past its maximum) has
// its budget's waiting pods evaluated again and its status written; and every
// writeEvery, each ledger and each memory with running pods has its status written,
// so that what it used survives a restart (hours.State).
func (h *hourBooks) runTimers(now time.Time) {
	if len(h.ledgers) == 0 && h.memory.empty() {
		return
	}
	write := now.Sub(h.lastWrite) >= h.writeEvery
	if write {
		h.lastWrite = now
	}
	for b, l := range h.ledgers {
		if t := h.next[b]; !t.After(now) {
			l.Advance(now)
			h.next[b] = l.NextChange(now)
			h.agenda.wakeIfAlive(b)
			h.agenda.markStatus(b)
		} else if write && l.Runs() > 0 {
			h.agenda.markStatus(b)
		}
	}
	if write {
		for c := range h.memory.running() {
			h.agenda.markStatus(c)
		}
	}
}

// nextWakeup is the first NextChange of a ledger, and the next write.
func (h *hourBooks) nextWakeup() (time.Time, bool) {
	var next time.Time
	running := false
	for b, t := range h.next {
		if next.IsZero() || t.Before(next) {
			next = t
		}
		running = running || h.ledgers[b].Runs() > 0
	}
	running = running || h.memory.anyRunning()
	if w := h.lastWrite.Add(h.writeEvery); running && (next.IsZero() || w.Before(next)) {
		next = w
	}
	return next, !next.IsZero()
}

// state is b's status.usage at now, nil when it has no hours.
func (h *hourBooks) state(b *budget) *hours.State {
	l := h.ledgers[b]
	if l == nil {
		return nil
	}
	st := l.Snapshot(h.clock.Now())
	return &st
}

// overrun returns, per budget with Exhaustion Evict in key order, the pods charged to
// it that ran past their maximum runtime.
func (h *hourBooks) overrun() []overrunPods {
	var out []overrunPods
	now := h.clock.Now()
	for _, b := range slices.SortedFunc(maps.Keys(h.ledgers), func(x, y *budget) int { return x.key.Compare(y.key) }) {
		if l := h.ledgers[b]; l.Spec().Evict {
			if uids := l.Overrun(now); len(uids) > 0 {
				out = append(out, overrunPods{budget: b, uids: uids})
			}
		}
	}
	return out
}

// noMaxRuntimeMessage is why a pod waits for a maximum runtime in a budget with hours.
func noMaxRuntimeMessage(p *podState, w *waitInfo) string {
	who := "it"
	if w.ahead.UID != "" && w.ahead.UID != p.pod.UID {
		who = "member " + w.ahead.Name
	}
	if w.detail != "" {
		return fmt.Sprintf("%s has hours (usageLimits), and %s: %s", w.budget.key.Describe(), who, w.detail)
	}
	return fmt.Sprintf("%s has hours (usageLimits) and no defaultMaxRuntime, and %s declares no maximum runtime: set spec.activeDeadlineSeconds or the annotation quotagate.io/max-runtime (say 2h)",
		w.budget.key.Describe(), who)
}
