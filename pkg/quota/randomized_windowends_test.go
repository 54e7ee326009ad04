package quota

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// Windows in TestRandomizedAdmission (docs/budgets.md, "Windows"). The core sees a
// window only as the controller hands it over: a Budget whose hard has the window's
// amount added while it is open, and, after a window with endPolicy Reclaim ended, the
// window's name in Budget.ReclaimAfter until another window of the budget opens or the
// budget is deleted. The model does what the controller does, on its own: a window
// opens on a random budget (adding to every resource it limits) and
// later ends, with Hold or Reclaim, while pods wait and run. The checks:
//
//   - a WindowEnd preemption comes only from a budget that names a window that ended
//     with Reclaim, evicts a pod charged to it, and is needed: with every other pod on
//     its way out gone, the budget uses more than its ceiling (checkWindowEnd);
//   - Hold evicts nothing (no budget names a window then);
//   - a window's end never lets more in: the step of an end is an administrator's (the
//     hard drops), and every later step may not take the budget further beyond
//     (TestRandomizedAdmission's check of steps without an administrator);
//   - nothing is stranded: in a calm world whose evictions all succeed, every budget
//     still reclaiming is back within its ceiling before any pod finishes on its own
//     (reclaimedInCalm), and every gated pod is then admitted as before.

// mWindow is an open window of the model: what it raised the budget's hard from and to,
// its name and whether it ends with Reclaim.
type mWindow struct {
	name      string
	from, to  corev1.ResourceList
	reclaimAt bool
}

// worldWindows is the windows part of the world, drawn from its own random source so
// that the world's other draws stay as they were before windows came.
type worldWindows struct {
	rng    *rand.Rand
	serial int
	open   map[BudgetKey]*mWindow
	// reclaim is the controller's memory: per budget, the Reclaim window that ended
	// last, handed to the core as Budget.ReclaimAfter.
	reclaim map[BudgetKey]string
	// armed are the budgets still reclaiming, as the model follows the core's promise:
	// from a new name in ReclaimAfter (or a new leader that reads one) until the end of
	// an admission pass that finds the budget within its ceiling. A pod that runs over
	// the ceiling after that (created running, by an administrator's leave) is not
	// reclaimed.
	armed map[BudgetKey]bool
	// tally counts what happened, for the test's log.
	tally windowTally
}

// windowTally counts windows' ends and what they evicted, over worlds.
type windowTally struct{ ends, reclaimEnds, victims int }

func (t *windowTally) add(o windowTally) {
	t.ends += o.ends
	t.reclaimEnds += o.reclaimEnds
	t.victims += o.victims
}

func newWorldWindows(seed int) *worldWindows {
	return &worldWindows{
		rng:     rand.New(rand.NewPCG(uint64(seed), 0x2545f4914f6cdd1d)),
		open:    map[BudgetKey]*mWindow{},
		reclaim: map[BudgetKey]string{},
		armed:   map[BudgetKey]bool{},
	}
}

// windowStep opens or ends, one step in six, a window of a random budget, or ends
// one whose budget uses what it lent.
func (w *world) windowStep() {
	ws := w.windows
	if ws == nil || ws.rng.IntN(6) != 0 {
		return
	}
	keys := w.budgetKeys()
	if len(keys) == 0 {
		return
	}
	k := keys[ws.rng.IntN(len(keys))]
	// Half the time, end a window whose budget uses more than it will have after.
	if full := w.windowsInUse(); len(full) > 0 && ws.rng.IntN(2) == 0 {
		k = full[ws.rng.IntN(len(full))]
	}
	b := w.budgets[k]
	win, open := ws.open[k]
	if !open {
		ws.serial++
		win = &mWindow{name: fmt.Sprintf("w%d", ws.serial), from: b.Hard, reclaimAt: ws.rng.IntN(2) == 0}
		// It adds to every resource the budget limits: CPU by 1 to 4 cores, anything
		// else by 1 to 3 (memory by as many GiB).
		win.to = b.Hard.DeepCopy()
		for _, name := range slices.Sorted(maps.Keys(win.to)) {
			q := win.to[name]
			switch name {
			case "cpu", "requests.cpu", "limits.cpu":
				q.Add(*resourceMilli(int64(1000 * (1 + ws.rng.IntN(4)))))
			case "memory", "requests.memory", "limits.memory":
				q.Add(resource.MustParse(fmt.Sprintf("%dGi", 1+ws.rng.IntN(3))))
			default:
				q.Add(*resourceCount(int64(1 + ws.rng.IntN(3))))
			}
			win.to[name] = q
		}
		ws.open[k] = win
		delete(ws.reclaim, k) // a window that opens ends a reclaim
		delete(ws.armed, k)
		b.Hard = win.to
		w.logf("window %s of %s opens: hard %v (reclaim at its end: %v)", win.name, k.Describe(), b.Hard, win.reclaimAt)
	} else {
		delete(ws.open, k)
		ws.tally.ends++
		// The controller adds to what is written: an administrator who wrote the budget
		// again while the window was open wrote what it has now.
		if equality.Semantic.DeepEqual(b.Hard, win.to) {
			b.Hard = win.from
		}
		if win.reclaimAt {
			ws.reclaim[k] = win.name
			ws.armed[k] = true
			ws.tally.reclaimEnds++
		}
		w.logf("window %s of %s ends: hard %v (reclaim: %v)", win.name, k.Describe(), b.Hard, win.reclaimAt)
	}
	w.admin = true // the hard drops at an end, as an administrator's edit would
	w.upsertBudget(b)
}

// windowsInUse are the budgets of open windows that use more than the hard they
// will have again.
func (w *world) windowsInUse() []BudgetKey {
	var out []BudgetKey
	used := w.usedAll()
	for _, k := range slices.SortedFunc(maps.Keys(w.windows.open), BudgetKey.Compare) {
		from, _ := NormalizeHard(w.windows.open[k].from)
		for r, h := range from {
			if u := used[k][r]; u.Cmp(h) > 0 {
				out = append(out, k)
				break
			}
		}
	}
	return out
}

// withWindows is b as the controller hands it over: naming the Reclaim window that
// ended last.
func (w *world) withWindows(b Budget) Budget {
	if w.windows != nil {
		b.ReclaimAfter = w.windows.reclaim[b.Key]
	}
	return b
}

// forgetWindows drops what the controller keeps of a deleted budget.
func (w *world) forgetWindows(k BudgetKey) {
	if w.windows != nil {
		delete(w.windows.open, k)
		delete(w.windows.reclaim, k)
		delete(w.windows.armed, k)
	}
}

// rearmWindows: a new leader reads every ReclaimAfter anew, and reclaims until the
// budget is within.
func (w *world) rearmWindows() {
	if w.windows != nil {
		for k := range w.windows.reclaim {
			w.windows.armed[k] = true
		}
	}
}

// disarmWithin follows an admission pass: a budget within its ceiling at its end is
// done reclaiming.
func (w *world) disarmWithin() {
	if w.windows == nil || len(w.windows.armed) == 0 {
		return
	}
	used := w.usedAll()
	for k := range w.windows.armed {
		if !w.overItsCeiling(k, used) {
			delete(w.windows.armed, k)
		}
	}
}

// overItsCeiling says whether k uses more of a resource than its ceiling allows.
func (w *world) overItsCeiling(k BudgetKey, used map[BudgetKey]corev1.ResourceList) bool {
	for r, c := range w.ceiling(k) {
		if u := used[k][r]; u.Cmp(c) > 0 {
			return true
		}
	}
	return false
}

// checkWindowEnd checks a WindowEnd preemption: its budget names a window that ended
// with Reclaim, the victim is charged to it, and it is needed: with every other pod on
// its way out gone (goingBefore, this batch's victims still in), and the batch's other
// victims of the budget gone too, the budget still uses more than its ceiling. The
// victim's group mates count with it, never as gone: a group goes whole.
func (w *world) checkWindowEnd(p Preemption, batch []Preemption) error {
	v := w.pods[p.Victim.UID]
	b, ok := w.budgets[p.Budget]
	switch {
	case !ok || p.From != p.Budget:
		return fmt.Errorf("window-end preemption of %s from %s for %s: not one existing budget", p.Victim, p.From.Describe(), p.Budget.Describe())
	case b.ReclaimAfter == "":
		return fmt.Errorf("window-end preemption of %s from %s, which names no window that ended with Reclaim", p.Victim, p.Budget.Describe())
	case p.Preemptor.UID != "":
		return fmt.Errorf("window-end preemption of %s makes room for %s", p.Victim, p.Preemptor)
	case v == nil || !slices.Contains(w.charged(v), p.Budget):
		return fmt.Errorf("window-end preemption of %s, which is not charged to %s", p.Victim, p.Budget.Describe())
	}
	inBatch := map[types.UID]bool{}
	for _, o := range batch {
		inBatch[o.Victim.UID] = true
	}
	gone := w.goingBefore(inBatch)
	// A group goes whole: its members are one victim, needed or not together (a member
	// refused and tried again is on its way out, and its mates with it).
	sameGroup := func(m *mPod) bool {
		return v.groupName != "" && m.groupName == v.groupName && m.obj.Namespace == v.obj.Namespace
	}
	for uid := range gone {
		if m := w.pods[uid]; m != nil && sameGroup(m) {
			delete(gone, uid)
		}
	}
	var others []string
	for _, o := range batch {
		m := w.pods[o.Victim.UID]
		if o.Reason != PreemptWindowEnd || o.Budget != p.Budget || m == nil || o.Victim.UID == p.Victim.UID || sameGroup(m) {
			continue
		}
		gone[o.Victim.UID] = true
		others = append(others, m.obj.Name)
	}
	left := w.usedExcept(gone)
	if w.overItsCeiling(p.Budget, left) {
		w.windows.tally.victims++
		return nil
	}
	return fmt.Errorf("window-end preemption of %s is not needed: %s is within its ceiling %v with the pods on their way out and the other victims %v gone (%v left)",
		p.Victim, p.Budget.Describe(), w.ceiling(p.Budget), others, left[p.Budget])
}

// reclaimedInCalm lets the core act on the budgets that name a window, with every
// eviction accepted, every ungate answered and no pod finishing on its own, and checks
// that each is then within its ceiling: a reclaim does not stop short.
func (w *world) reclaimedInCalm() error {
	if w.windows == nil || len(w.windows.armed) == 0 {
		return nil
	}
	// Time passes in each round: a pod whose ungate is unresolved holds its charge and
	// cannot be evicted until it is tried again.
	for range 6 {
		if err := w.calmRound(false); err != nil {
			return err
		}
	}
	w.evict(true)
	used := w.usedAll()
	for _, k := range slices.SortedFunc(maps.Keys(w.windows.armed), BudgetKey.Compare) {
		if w.overItsCeiling(k, used) {
			return fmt.Errorf("%s names window %s, which ended with Reclaim, and is still over its ceiling %v in a calm world: uses %v; charged: %v",
				k.Describe(), w.windows.reclaim[k], w.ceiling(k), used[k], w.modelCharged(k))
		}
	}
	return nil
}
