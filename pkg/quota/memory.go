package quota

import (
	"iter"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/quotagate/quotagate/pkg/quota/hours"
)

// memories is fair sharing's memory (docs/budgets.md, "Fair sharing with memory"): for
// each budget under a parent with fairSharing.usageHalfLife, what its pods used,
// decayed with that half-life, in an hours.Ledger of its own that limits nothing. It
// only orders: families.yieldsTo adds each budget's share from it (share) to the share
// of its current use. Shares are read once per admission pass, so that they are the
// same constants all through it.
type memories struct {
	ledgers map[*budget]*hours.Ledger
	shares  map[*budget]float64 // as the current pass began
	passAt  time.Time
}

// of is c's memory ledger under f, made when there is none yet or f's half-life
// changed. The first one made for c starts from what c's status.fairSharing held
// (Budget.MemoryRestore), counting its charged pods from when that was written; any
// other counts them from now.
func (m *memories) of(c, f *budget, now time.Time) *hours.Ledger {
	hl := f.spec.UsageHalfLife
	old := m.ledgers[c]
	if old != nil && old.Spec().HalfLife == hl {
		return old
	}
	limits := map[corev1.ResourceName]float64{}
	for _, r := range f.ledger.Resources() {
		limits[r] = math.MaxFloat64
	}
	var restore *hours.State
	if old == nil {
		restore = c.spec.MemoryRestore
	}
	l := hours.NewLedger(hours.Spec{Limits: limits, HalfLife: hl, Location: time.UTC}, now, restore)
	for p := range c.ledger.Charged() {
		l.Start(p.pod.UID, rateOf(p.charge.amounts(), p.charge.claimAmounts()), 0, chargedSince(p, now), now)
	}
	if m.ledgers == nil {
		m.ledgers = map[*budget]*hours.Ledger{}
	}
	m.ledgers[c] = l
	return l
}

// start counts a pod just charged to c, under its parent f.
func (m *memories) start(c, f *budget, p *podState, now time.Time) {
	m.of(c, f, now).Start(p.pod.UID, rateOf(p.charge.amounts(), p.charge.claimAmounts()), 0, chargedSince(p, now), now)
}

// end stops counting a pod whose charge to c ends.
func (m *memories) end(c *budget, uid types.UID, now time.Time) {
	if l := m.ledgers[c]; l != nil {
		l.End(uid, now)
	}
}

func (m *memories) empty() bool { return len(m.ledgers) == 0 }

// running yields the budgets whose memory counts running pods: their status changes
// as time passes.
func (m *memories) running() iter.Seq[*budget] {
	return func(yield func(*budget) bool) {
		for c, l := range m.ledgers {
			if l.Runs() > 0 && !yield(c) {
				return
			}
		}
	}
}

// anyRunning reports whether some budget's memory counts running pods.
func (m *memories) anyRunning() bool {
	for range m.running() {
		return true
	}
	return false
}

// forget drops a deleted budget's memory.
func (m *memories) forget(b *budget) {
	delete(m.ledgers, b)
	delete(m.shares, b)
}

// beginPass starts an admission pass at now: share reads memory as it is then, and
// keeps each budget's share until the next pass.
func (m *memories) beginPass(now time.Time) {
	m.passAt = now
	clear(m.shares)
}

// share is c's share from memory under its parent f as the current pass began (now on
// clk, outside one); 0 when f has no usageHalfLife.
func (m *memories) share(c, f *budget, clk clock.PassiveClock) float64 {
	if f.spec.UsageHalfLife <= 0 {
		return 0
	}
	if s, ok := m.shares[c]; ok {
		return s
	}
	at := m.passAt
	if at.IsZero() {
		at = clk.Now()
	}
	s := shareOfMemory(c, f, m.of(c, f, at).Used(at))
	if m.shares == nil {
		m.shares = map[*budget]float64{}
	}
	m.shares[c] = s
	return s
}

// state is c's status.fairSharing at now: what its pods used, decayed, and the share
// that adds; false when c's parent has no usageHalfLife.
func (m *memories) state(c *budget, now time.Time) (hours.State, float64, bool) {
	f := c.place.Parent()
	if f == nil || f.spec.UsageHalfLife <= 0 {
		return hours.State{}, 0, false
	}
	st := m.of(c, f, now).Snapshot(now)
	return st, shareOfMemory(c, f, st.Used), true
}

// shareOfMemory is the share used adds to c's under f: over the resources, what c
// used, decayed with f's usageHalfLife, over what f's family lends of it times
// halfLife/ln 2 (the most that lending all of it for ever adds up to, decayed), the
// largest, over c's weight (budget.weighted).
func shareOfMemory(c, f *budget, used map[corev1.ResourceName]float64) float64 {
	hl := f.spec.UsageHalfLife
	share := 0.0
	for r, u := range used {
		pool, _ := f.familyStatus(r)
		if p := pool.Float64() * hl.Hours() / math.Ln2; p > 0 {
			share = max(share, u/p)
		}
	}
	return c.weighted(share)
}
