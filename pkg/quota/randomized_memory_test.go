package quota

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota/hours"
)

// TestRandomizedFairSharingMemory plays fair sharing with memory (docs/budgets.md,
// "Fair sharing with memory") on a simulated clock. Three budgets borrow under a
// ClusterBudget with a usageHalfLife of 30m, 2h or 8h, beside a fourth that only
// lends; pods of one to three CPUs run for minutes to hours, and managers restart,
// taking up what the last status.fairSharing held. Then comes a contest: each of the
// three runs the same amount, borrowing the same, and asks for one CPU more where the
// family has room for one. Their current shares are equal, so memory decides. The
// model keeps its own record of when each pod ran and checks, against that record and
// not the core's:
//
//   - each budget's status.fairSharing.used is what its pods used, decayed with the
//     half-life (the closed form of the integral), after restarts too (nothing lost,
//     nothing counted twice);
//   - the contest goes to the budget whose decayed use is the least, by the record
//     (the first created among those too close to tell apart).
func TestRandomizedFairSharingMemory(t *testing.T) {
	seeds, steps := *randomSeeds, max(*randomSteps/5, 10)
	contests, restarts, byOrder := 0, 0, 0
	for seed := range seeds {
		w := newMemoryWorld(t, seed)
		err := w.run(steps)
		if err != nil {
			t.Fatalf("seed %d (half-life %v), step %d: %v\nlast events:\n%s", seed, w.halfLife, w.stepN, err, strings.Join(w.events[max(0, len(w.events)-30):], "\n"))
		}
		contests += w.contests
		restarts += w.restarts
		byOrder += w.byOrder
	}
	t.Logf("%d seeds x %d steps: %d contests decided by memory, %d by order among equals, %d restarts", seeds, steps, contests, byOrder, restarts)
	if seeds >= 10 && (contests < seeds/2 || restarts == 0) {
		t.Fatalf("the model stopped playing memory: %d contests decided by memory, %d restarts", contests, restarts)
	}
}

// memPod is a pod of the memory world, as the model records it.
type memPod struct {
	name       string
	ns         string
	cpu        float64
	created    int
	runs       time.Duration
	admittedAt time.Time   // zero while gated
	endedAt    time.Time   // zero while it runs
	budgets    []BudgetKey // where it was charged
	// unseenFrom is, for a pod that ended while no manager ran, when the last status
	// was written: no core saw it run after that.
	unseenFrom time.Time
}

type memoryWorld struct {
	t        *testing.T
	rng      *rand.Rand
	q        *AdmissionQueue
	clk      *clocktesting.FakeClock
	halfLife time.Duration
	budgets  []Budget
	pods     map[string]*memPod
	events   []string
	serial   int
	stepN    int
	contests int
	byOrder  int
	restarts int
}

// memoryContenders are the budgets that borrow; team-c's only lends.
var memoryContenders = []BudgetKey{{Namespace: "team-a", Name: "a"}, {Namespace: "team-b", Name: "b"}, {Namespace: "team-d", Name: "d"}}

func newMemoryWorld(t *testing.T, seed int) *memoryWorld {
	q, clk := newTestQueue()
	w := &memoryWorld{t: t, rng: rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15)), q: q, clk: clk, pods: map[string]*memPod{}}
	w.halfLife = []time.Duration{30 * time.Minute, 2 * time.Hour, 8 * time.Hour}[w.rng.IntN(3)]
	org := makeBudget("", "org").Hard("cpu=100").Obj()
	org.UsageHalfLife = w.halfLife
	w.budgets = []Budget{org}
	for _, k := range memoryContenders {
		w.budgets = append(w.budgets, makeBudget(k.Namespace, k.Name).Hard("cpu=2").Borrow("cpu=20").Parent("org").Obj())
	}
	// It lends 4: the family holds 10.
	w.budgets = append(w.budgets, makeBudget("team-c", "c").Hard("cpu=4").Parent("org").Obj())
	for _, b := range w.budgets {
		q.UpsertBudget(b)
	}
	return w
}

func (w *memoryWorld) logf(format string, args ...any) {
	w.events = append(w.events, fmt.Sprintf("%4d %s ", w.stepN, w.clk.Now().Format("01-02T15:04:05"))+fmt.Sprintf(format, args...))
}

func (w *memoryWorld) run(steps int) error {
	for w.stepN = 0; w.stepN < steps; w.stepN++ {
		for range w.rng.IntN(3) {
			w.create(memoryContenders[w.rng.IntN(len(memoryContenders))].Namespace, float64(1+w.rng.IntN(3)),
				time.Duration(10+w.rng.IntN(240))*time.Minute)
		}
		w.endPods(false)
		if w.rng.IntN(8) == 0 {
			w.restart(time.Duration(w.rng.IntN(10)) * time.Minute)
		}
		if err := w.admit(); err != nil {
			return err
		}
		if err := w.checkMemory(); err != nil {
			return err
		}
		w.clk.Step(time.Duration(5+w.rng.IntN(85)) * time.Minute)
	}
	return w.contest()
}

func (w *memoryWorld) create(ns string, cpu float64, runs time.Duration) *memPod {
	w.serial++
	p := &memPod{name: fmt.Sprintf("p%d", w.serial), ns: ns, cpu: cpu, created: w.serial, runs: runs}
	w.pods[p.name] = p
	w.q.UpsertPod(w.podObj(p).Pod())
	w.logf("create %s/%s cpu %v runs %v", p.ns, p.name, p.cpu, p.runs)
	return p
}

// podObj is the pod as the API server has it.
func (w *memoryWorld) podObj(p *memPod) *podBuilder {
	b := makePod(p.name).NS(p.ns).Created(p.created).Req(fmt.Sprintf("cpu=%v", p.cpu))
	if !p.admittedAt.IsZero() {
		b = b.Ungated().Annotation(v1alpha1.AdmittedAtAnnotation, p.admittedAt.UTC().Format(time.RFC3339)).
			AdmittedBy(strings.Join(hourKeyStrings(p.budgets), ","))
	}
	return b
}

// endPods ends the pods whose runtime passed (all running ones, with all, and then
// deletes those still gated).
func (w *memoryWorld) endPods(all bool) {
	now := w.clk.Now()
	for _, name := range slices.Sorted(maps.Keys(w.pods)) {
		p := w.pods[name]
		switch {
		case p.admittedAt.IsZero() && all:
			w.q.DeletePod(types.UID(p.name))
			delete(w.pods, name)
			w.logf("delete gated %s/%s", p.ns, p.name)
		case p.admittedAt.IsZero() || !p.endedAt.IsZero():
		case all || !now.Before(p.admittedAt.Add(p.runs)):
			p.endedAt = now
			w.q.UpsertPod(w.podObj(p).Phase(corev1.PodSucceeded).Pod())
			w.logf("end %s/%s", p.ns, p.name)
		}
	}
}

// restart is a new manager, down minutes after the last one wrote the status: a new
// core, given each budget with the status.fairSharing the last one wrote (used
// rounded up to the milli-hour), and the pods as the API server has them then. Pods
// that ended while no manager ran are not seen again.
func (w *memoryWorld) restart(down time.Duration) {
	w.restarts++
	old := w.q
	var restore []*hours.State
	for _, b := range w.budgets {
		var r *hours.State
		if st, ok := old.Reader().Status(b.Key); ok && st.FairSharing != nil {
			r = roundTrip(&hours.State{AsOf: st.FairSharing.AsOf, Used: st.FairSharing.Used})
		}
		restore = append(restore, r)
	}
	written := w.clk.Now()
	w.clk.Step(down)
	for _, name := range slices.Sorted(maps.Keys(w.pods)) {
		p := w.pods[name]
		if due := p.admittedAt.Add(p.runs); !p.admittedAt.IsZero() && p.endedAt.IsZero() && !due.After(w.clk.Now()) {
			p.endedAt, p.unseenFrom = due, written
			w.logf("end %s/%s while no manager runs", p.ns, p.name)
		}
	}
	q := NewAdmissionQueue(WithClock(w.clk))
	for _, ns := range testNamespaces {
		q.SetNamespace(ns, map[string]string{v1alpha1.EnabledLabel: "true"})
	}
	for i, b := range w.budgets {
		b.MemoryRestore = restore[i]
		q.UpsertBudget(b)
	}
	for _, name := range slices.Sorted(maps.Keys(w.pods)) {
		if p := w.pods[name]; p.endedAt.IsZero() {
			q.UpsertPod(w.podObj(p).Pod())
		}
	}
	w.q = q
	w.logf("restart after %v down", down)
}

func (w *memoryWorld) admit() error {
	now := w.clk.Now()
	for _, a := range w.q.Admit() {
		p := w.pods[a.Pod.Name]
		if p == nil || !p.admittedAt.IsZero() {
			return fmt.Errorf("admitted %s, which the model does not know gated", a.Pod.Name)
		}
		p.admittedAt, p.budgets = now, a.Budgets
		w.q.Done(a.Pod.UID, Ungated, "")
		w.q.UpsertPod(w.podObj(p).Pod())
		w.logf("admit %s/%s", p.ns, p.name)
	}
	return nil
}

// recordMemory is what k's pods used up to now, decayed with the half-life:
// ∫ cpu·2^(-(now-τ)/h) dτ over each pod's run. Seen leaves out what pods that ended
// while no manager ran used after the last status was written: what a restart may
// lose (docs/budgets.md, "Fair sharing with memory").
func (w *memoryWorld) recordMemory(k BudgetKey, now time.Time, seen bool) float64 {
	h := w.halfLife.Hours()
	sum := 0.0
	for _, p := range w.pods {
		if p.admittedAt.IsZero() || p.ns != k.Namespace {
			continue
		}
		to := now
		if !p.endedAt.IsZero() {
			to = p.endedAt
		}
		if seen && !p.unseenFrom.IsZero() {
			to = p.unseenFrom
		}
		sum += p.cpu * h / math.Ln2 * (math.Exp2(-now.Sub(to).Hours()/h) - math.Exp2(-now.Sub(p.admittedAt).Hours()/h))
	}
	return sum
}

// slack is what the core may count beyond the record: float rounding, and a
// milli-hour per restart (the status is read back rounded up).
func (w *memoryWorld) slack() float64 { return 1e-6 + 0.001*float64(w.restarts) }

func (w *memoryWorld) checkMemory() error {
	now := w.clk.Now()
	for _, k := range memoryContenders {
		st, _ := w.q.Reader().Status(k)
		if st.FairSharing == nil {
			return fmt.Errorf("%s is under a parent with usageHalfLife and has no fairSharing in its status", k.Describe())
		}
		got, least, most := st.FairSharing.Used["requests.cpu"], w.recordMemory(k, now, true), w.recordMemory(k, now, false)
		if got < least-1e-6 || got > most+w.slack() {
			return fmt.Errorf("%s: status fairSharing.used %.6f CPU-hours, the record %.6f (%.6f with what no manager saw)", k.Describe(), got, least, most)
		}
	}
	return nil
}

// contest ends every pod, lets a random time pass (and maybe a manager), and has each
// contender run 3 CPUs (1 borrowed of the family's 10) and ask for one more: the family
// has room for one. The model names who must get it.
func (w *memoryWorld) contest() error {
	w.endPods(true)
	w.clk.Step(time.Duration(w.rng.IntN(6*60)) * time.Minute)
	if w.rng.IntN(2) == 0 {
		w.restart(time.Duration(w.rng.IntN(10)) * time.Minute)
	}
	for _, k := range memoryContenders {
		w.create(k.Namespace, 3, 24*time.Hour)
	}
	if err := w.admit(); err != nil {
		return err
	}
	for _, p := range w.pods {
		if p.admittedAt.IsZero() {
			return fmt.Errorf("%s/%s (3 CPUs) waits where the family holds 9 of 10", p.ns, p.name)
		}
	}
	if err := w.checkMemory(); err != nil {
		return err
	}
	now := w.clk.Now()
	asks := map[string]*memPod{}
	for _, i := range w.rng.Perm(len(memoryContenders)) {
		k := memoryContenders[i]
		asks[k.Namespace] = w.create(k.Namespace, 1, 24*time.Hour)
	}
	// Who may win: the core counts each budget's use between what the record has seen
	// and all of it plus slack, so any budget whose least may be at most every other's
	// most may be the least (or tie with it, and then be the first created).
	mem, most := map[string]float64{}, map[string]float64{}
	for _, k := range memoryContenders {
		mem[k.Namespace], most[k.Namespace] = w.recordMemory(k, now, true), w.recordMemory(k, now, false)
	}
	var may []string
	for _, k := range memoryContenders {
		least := true
		for _, j := range memoryContenders {
			least = least && mem[k.Namespace] <= most[j.Namespace]+w.slack()+1e-9
		}
		if least {
			may = append(may, k.Namespace)
		}
	}
	if err := w.admit(); err != nil {
		return err
	}
	var won []string
	for _, p := range asks {
		if !p.admittedAt.IsZero() {
			won = append(won, p.ns)
		}
	}
	if len(won) != 1 || !slices.Contains(may, won[0]) {
		return fmt.Errorf("the contest went to %v, want one of %v (decayed use a %.4f, b %.4f, d %.4f CPU-hours, created %d %d %d)", won, may,
			mem["team-a"], mem["team-b"], mem["team-d"], asks["team-a"].created, asks["team-b"].created, asks["team-d"].created)
	}
	if len(may) > 1 {
		w.byOrder++
	} else {
		w.contests++
	}
	return nil
}
