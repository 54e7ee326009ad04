package estimate

import (
	"cmp"
	"container/heap"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/pkg/quota"
)

// outcome is what one simulation found for one waiting pod.
type outcome struct {
	started bool
	at      time.Time
	ends    int
	samples int
	basis   weak
	unknown Unknown
	reason  string
}

type result struct {
	pods    []outcome // by index in World.Waiting
	stopped time.Time // the simulated time it stopped at
	// heads are the waiting pods first in a covering budget's queue at the world's Now
	// (quota.Reads.AtHead), when asked for.
	heads map[types.UID]bool
}

// never is the flush interval of the simulation's core: it does not flush, since
// every simulated moment is an event the core wakes its queues for (a pod that ends),
// and a flush every 5 simulated minutes would cost a pass over every inadmissible pod.
// It is also its usage write interval: it writes no status, and a write every 30
// simulated seconds while the pods of an hour budget run would be a simulated moment
// each, so that a wait for the period's end took more moments than a simulation may.
const never = time.Duration(1 << 62)

// sim is one simulation: a fresh core on a clock of its own, and the pods' ends.
type sim struct {
	w       *World
	o       *Options
	q       *quota.AdmissionQueue
	clk     *simClock
	pick    durations
	ends    minHeap[podEnd]
	changes int                // w.Changes applied so far
	seq     int                // ends scheduled so far
	gone    map[types.UID]bool // ended or preempted
	forever map[types.UID]bool // holding quota with no expected end
	waiting map[types.UID]int  // index in w.Waiting
	out     []outcome
	asked   int  // the first waiting pod asked about (Options.only)
	left    int  // waiting pods asked about not started yet
	ended   int  // pods ended so far
	weakest int  // the fewest samples behind a learned end so far (0: none)
	weak    weak // the least trusted learned end so far

	// coming are the world's Arrivals with their next moment in this run, made the
	// pods created from them (by UID: the stream of each, nil once admitted), and
	// mayCreate how many more this run may make. ending is how many of the world's own
	// pods hold quota with an end to come: once none does, the pods still waiting
	// wait for something no end of theirs brings, or behind created pods only, and no
	// more are created (a run would otherwise go on creating pods for a pod that never
	// fits, up to mayCreate).
	coming    minHeap[coming]
	made      map[types.UID]*Stream
	mayCreate int
	ending    int
	// quiet counts the moments pods were created at since a pod asked about last
	// started (hopeless).
	quiet int

	// admissions, when not nil, records each admission and how many victims had been
	// preempted before it (Place reads them).
	admissions map[types.UID]admission
	preempted  int // victims ended so far
}

// admission is one admission as Place reads it.
type admission struct {
	a        quota.Admission
	preempts int
}

// run simulates the world with the durations pk chooses until every waiting pod is
// admitted or nothing more can happen, within o's bounds.
func run(w *World, o *Options, pk durations, heads bool) result {
	s := newSim(w, o, pk)
	if o.stopped() {
		return result{pods: s.out, stopped: s.clk.now} // dropped by Simulate
	}
	var atHead map[types.UID]bool
	if heads {
		uids := make([]types.UID, len(w.Waiting))
		for i, p := range w.Waiting {
			uids[i] = p.Pod.UID
		}
		atHead = s.q.Reader().AtHead(uids, 1)
	}
	horizon, maxSteps := w.Now.Add(cmp.Or(o.Horizon, DefaultHorizon)), o.MaxSteps
	if maxSteps <= 0 {
		maxSteps = DefaultMaxSteps(w)
	}
	capped := false
	for steps := 0; ; steps++ {
		s.admit()
		if o.afterAdmit != nil {
			o.afterAdmit(s.q)
		}
		if s.left == 0 || o.step() {
			break
		}
		next, ok := s.next(horizon)
		if !ok {
			break
		}
		if next.After(horizon) || steps >= maxSteps {
			capped = true
			break
		}
		s.clk.now = next
		s.changeDue()
		s.endDue()
		s.createDue()
	}
	s.explain(capped)
	return result{pods: s.out, stopped: s.clk.now, heads: atHead}
}

// newSim feeds a fresh core, on a clock of its own at w.Now, the world: namespaces,
// flavors, budgets, the pods that hold quota (each with its end scheduled) and the
// waiting pods. Nothing is admitted yet. When o.Done is closed meanwhile, it feeds no
// more (the caller looks at o.stopped()).
func newSim(w *World, o *Options, pk durations) *sim {
	clk := &simClock{now: w.Now}
	core := append(append([]quota.Option(nil), o.Core...), quota.WithClock(clk), quota.WithFlushInterval(never), quota.WithUsageWriteInterval(never))
	s := &sim{
		w: w, o: o, q: quota.NewAdmissionQueue(core...), clk: clk, pick: pk,
		gone: map[types.UID]bool{}, forever: map[types.UID]bool{},
		waiting: make(map[types.UID]int, len(w.Waiting)),
		out:     make([]outcome, len(w.Waiting)), left: len(w.Waiting),
	}
	if o.only > 0 && o.only < len(w.Waiting) {
		s.asked, s.left = len(w.Waiting)-o.only, o.only
	}
	for ns, l := range w.Namespaces {
		s.q.SetNamespace(ns, l)
	}
	for _, f := range w.Flavors {
		s.q.UpsertFlavor(f)
	}
	for _, b := range w.Budgets {
		s.q.UpsertBudget(simulated(b))
	}
	for i, p := range w.Running {
		if i%feedStep == feedStep-1 && o.step() {
			return s
		}
		s.q.UpsertPod(p.Pod)
		s.holds(p.Pod.UID, p.Pod.Namespace, p.Expect, pk.end(p.Expect, w.Now))
	}
	for i, p := range w.Waiting {
		if i%feedStep == feedStep-1 && o.step() {
			return s
		}
		s.waiting[p.Pod.UID] = i
		s.q.UpsertPod(p.Pod)
	}
	if pk.rng != nil && len(w.Arrivals) > 0 {
		s.made, s.mayCreate = map[types.UID]*Stream{}, max(len(w.Running)+len(w.Waiting), minCreate)
		for i := range w.Arrivals {
			st := &w.Arrivals[i]
			gap := st.gapOf(pk.rng)
			if at := st.nextArrival(pk.rng, w.Now, gap); !at.After(st.Until) {
				s.coming.items = append(s.coming.items, coming{st: st, stream: i, gap: gap, at: at})
			}
		}
		heap.Init(&s.coming)
	}
	return s
}

// holds records that a pod holds quota until end (for ever when e is not Known).
func (s *sim) holds(uid types.UID, namespace string, e Expectation, end time.Time) {
	if !e.Known() {
		s.forever[uid] = true
		return
	}
	var w weak
	if e.Source == SourceLearned {
		w = weak{known: true, level: e.Level, samples: e.Samples, basis: e.Basis, namespace: namespace}
	}
	if _, made := s.made[uid]; !made {
		s.ending++
	}
	s.seq++
	heap.Push(&s.ends, podEnd{at: end, seq: s.seq, uid: uid, weak: w})
}

// admit takes what the core admits now, starts it, and carries out the preemptions it
// decides (the victims end now: their grace periods are not simulated), until the core
// decides nothing more, or o.Done is closed.
func (s *sim) admit() {
	for round := 0; ; round++ {
		if round > 0 && s.o.step() {
			return
		}
		admitted := s.q.Admit()
		for _, a := range admitted {
			if s.admissions != nil {
				s.admissions[a.Pod.UID] = admission{a: a, preempts: s.preempted}
			}
			s.q.Done(a.Pod.UID, quota.Ungated, "")
			s.started(a.Pod.UID)
		}
		preempted := false
		for _, p := range s.q.Preemptions() {
			if s.q.PreemptionNeeded(p.Victim.UID) {
				s.end(p.Victim.UID, weak{}, false)
				s.preempted++
				preempted = true
			}
		}
		if len(admitted) == 0 && !preempted {
			return
		}
	}
}

func (s *sim) started(uid types.UID) {
	if st, made := s.made[uid]; made {
		if st != nil {
			s.made[uid] = nil
			s.holds(uid, st.Template.Namespace, st.Expect, s.clk.now.Add(max(s.pick.of(st.Expect), 0)))
		}
		return
	}
	i, ok := s.waiting[uid]
	if !ok || s.out[i].started {
		return
	}
	now := s.clk.now
	s.out[i] = outcome{started: true, at: now, ends: s.ended, samples: s.weakest, basis: s.weak}
	if i >= s.asked {
		s.left--
		s.quiet = 0
	}
	p := &s.w.Waiting[i]
	s.holds(uid, p.Pod.Namespace, p.Expect, now.Add(max(s.pick.of(p.Expect), 0)))
}

// end ends a pod now: the core forgets it (as it forgets a Terminal view) and its
// charge is released.
func (s *sim) end(uid types.UID, w weak, counted bool) {
	if s.gone[uid] {
		return
	}
	s.gone[uid] = true
	if _, made := s.made[uid]; !made && !s.forever[uid] {
		s.ending--
	}
	delete(s.forever, uid)
	s.q.DeletePod(uid)
	if counted {
		s.ended++
		if w.known && (s.weakest == 0 || w.samples < s.weakest) {
			s.weakest = w.samples
		}
		s.weak = s.weak.weaker(w)
	}
}

// next is the next simulated moment: the next pod's end, the core's next wakeup (a
// lend hold's end, an hour budget's period end or step of decay) or the next change of
// a budget (World.Changes), whichever comes first. A wakeup past the horizon is not one
// (the flush and the status write the simulation's core never does are such).
func (s *sim) next(horizon time.Time) (time.Time, bool) {
	for len(s.ends.items) > 0 && s.gone[s.ends.items[0].uid] {
		heap.Pop(&s.ends)
	}
	var next time.Time
	if len(s.ends.items) > 0 {
		next = s.ends.items[0].at
	}
	if t, ok := s.q.NextWakeup(); ok && t.After(s.clk.now) && !t.After(horizon) && (next.IsZero() || t.Before(next)) {
		next = t
	}
	if s.changes < len(s.w.Changes) {
		if t := s.w.Changes[s.changes].At; next.IsZero() || t.Before(next) {
			next = t
		}
	}
	if t, ok := s.nextCreate(); ok && (next.IsZero() || t.Before(next)) {
		next = t
	}
	return next, !next.IsZero()
}

// changeDue applies every change of a budget whose time has come.
func (s *sim) changeDue() {
	for ; s.changes < len(s.w.Changes) && !s.w.Changes[s.changes].At.After(s.clk.now); s.changes++ {
		s.q.UpsertBudget(simulated(s.w.Changes[s.changes].Budget))
	}
}

// simulated is b as the simulation's core takes it: under halfLife, its hours are
// looked at again in steps that grow with the simulated time (hours.Spec.DecayStepsGrow),
// not every ten minutes as the real core does, so that a wait of weeks for used to decay
// is some 200 simulated moments, and its start at most a sixteenth of it late. b's
// spec is not changed: the world's budgets are shared by the draws.
func simulated(b quota.Budget) quota.Budget {
	if b.Hours != nil && b.Hours.HalfLife > 0 {
		spec := *b.Hours
		spec.DecayStepsGrow = true
		b.Hours = &spec
	}
	return b
}

// endDue ends every pod whose end has come.
func (s *sim) endDue() {
	for len(s.ends.items) > 0 && !s.ends.items[0].at.After(s.clk.now) {
		e := heap.Pop(&s.ends).(podEnd)
		s.end(e.uid, e.weak, true)
	}
}

// simClock is the simulation's clock: it moves only when the simulation moves it.
type simClock struct{ now time.Time }

func (c *simClock) Now() time.Time                  { return c.now }
func (c *simClock) Since(t time.Time) time.Duration { return c.now.Sub(t) }

// podEnd is when a pod that holds quota ends; seq keeps ends at the same moment in
// the order they were scheduled.
type podEnd struct {
	at   time.Time
	seq  int
	uid  types.UID
	weak weak
}

// before orders the ends, the earliest first, and of two at one moment the one
// scheduled first.
func (e podEnd) before(o podEnd) bool {
	return e.at.Before(o.at) || (e.at.Equal(o.at) && e.seq < o.seq)
}
