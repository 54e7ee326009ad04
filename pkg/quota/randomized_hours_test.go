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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota/hours"
)

// TestRandomizedHours plays hour budgets (docs/budgets.md, "Hour budgets") on a
// simulated clock: a ClusterBudget with CPU-hours a day over two namespaces, a Budget
// with its own hours under it, one with Exhaustion Evict, one with none, one whose
// hours decay with a half-life of two hours, one that counts a rolling window of the
// current UTC day and the one before; pods of one to
// three CPUs that declare a maximum runtime and run shorter or longer than it; minutes
// to hours between steps, across midnights; and managers that restart, taking up what
// the last status held. The model keeps its own record of when each pod was admitted
// and ended, and checks, at every step, against that record and not the core's:
//
//   - an admission pass never leaves a budget it admitted into with used + reserved
//     above its hours (what pods use within their maximum, plus what they may still);
//   - what pods used within their maxima in a period never exceeds the hours: a budget
//     goes over only by what pods run beyond their maximum;
//   - a pod that waits with UsageExhausted does not fit by the record either;
//   - the status' used is the record's, after restarts too (nothing lost, nothing
//     counted twice);
//   - under Evict, every pod past its maximum is a MaxRuntime victim at the next pass,
//     and no other pod is.
func TestRandomizedHours(t *testing.T) {
	seeds, steps := *randomSeeds, *randomSteps
	admitted, waited, evicted, restarts := 0, 0, 0, 0
	for seed := range seeds {
		w := newHourWorld(t, seed)
		if err := w.run(steps); err != nil {
			t.Fatalf("seed %d, step %d: %v\nlast events:\n%s", seed, w.stepN, err, strings.Join(w.events[max(0, len(w.events)-30):], "\n"))
		}
		admitted += w.admitted
		waited += w.waited
		evicted += w.evicted
		restarts += w.restarts
	}
	t.Logf("%d seeds x %d steps: %d pods admitted, %d waits for hours checked, %d evicted past their maximum, %d restarts", seeds, steps, admitted, waited, evicted, restarts)
	if seeds >= 10 && (waited == 0 || evicted == 0 || restarts == 0) {
		t.Fatalf("the model stopped playing hours: %d waits, %d evictions, %d restarts", waited, evicted, restarts)
	}
}

// hWait is a reason a pod was seen waiting with, and since when.
type hWait struct {
	message string
	since   time.Time
}

// hPod is a pod of the hour world, as the model records it.
type hPod struct {
	name       string
	ns         string
	cpu        float64
	max        time.Duration // declared
	runs       time.Duration // how long it runs once admitted
	admittedAt time.Time     // zero while gated
	endedAt    time.Time     // zero while it runs
	budgets    []BudgetKey   // where it was charged
	evicting   bool
}

type hourWorld struct {
	t       *testing.T
	rng     *rand.Rand
	q       *AdmissionQueue
	clk     *clocktesting.FakeClock
	budgets map[BudgetKey]Budget
	pods    map[string]*hPod
	events  []string
	serial  int
	// waits are, per pod waiting for hours, the reason it was last seen with and when
	// it was first seen with it: when the core last evaluated it (a reason is written
	// anew at each evaluation).
	waits    map[string]hWait
	admitted int
	waited   int
	evicted  int
	restarts int
	stepN    int
}

func (w *hourWorld) logf(format string, args ...any) {
	w.events = append(w.events, fmt.Sprintf("%4d %s ", w.stepN, w.clk.Now().Format("01-02T15:04:05"))+fmt.Sprintf(format, args...))
}

var (
	hOrg   = BudgetKey{Name: "org"}
	hA     = BudgetKey{Namespace: "team-a", Name: "a"}
	hB     = BudgetKey{Namespace: "team-b", Name: "b"}
	hEvic  = BudgetKey{Namespace: "team-c", Name: "c"}
	hDecay = BudgetKey{Namespace: "team-d", Name: "d"}
	hRoll  = BudgetKey{Namespace: "team-e", Name: "e"}
)

// hourNamespaces are the hour world's: team-a and team-b under the ClusterBudget.
var hourNamespaces = []string{"team-a", "team-b", "team-c", "team-d", "team-e"}

// hRollDays is budget e's rollingDays: today (UTC) and the day before.
const hRollDays = 1

// hDecayHalfLife is budget d's: what its pods used counts half two hours later.
const hDecayHalfLife = 2 * time.Hour

func newHourWorld(t *testing.T, seed int) *hourWorld {
	q, clk := newTestQueue()
	w := &hourWorld{t: t, rng: rand.New(rand.NewPCG(uint64(seed), 0x3c6ef372fe94f82b)), q: q, clk: clk,
		budgets: map[BudgetKey]Budget{}, pods: map[string]*hPod{}, waits: map[string]hWait{}}
	day := func(cpuHours string, exhaustion v1alpha1.UsageExhaustion) *hours.Spec {
		s, problem := hours.FromAPI(&v1alpha1.UsageLimits{Hours: corev1.ResourceList{"cpu": resource.MustParse(cpuHours)}, Period: v1alpha1.PeriodDay,
			DefaultMaxRuntime: &metav1.Duration{Duration: time.Hour}, Exhaustion: exhaustion}, normalizedName)
		if problem != "" {
			t.Fatal(problem)
		}
		return &s
	}
	org := makeBudget("", "org").Hard("cpu=40").Namespaces(labels.SelectorFromSet(labels.Set{"tier": "gold"})).Obj()
	org.Hours = day(fmt.Sprint(6+w.rng.IntN(10)), "")
	a := makeBudget("team-a", "a").Hard("cpu=20").Parent("org").Obj()
	a.Hours = day(fmt.Sprint(2+w.rng.IntN(6)), "")
	b := makeBudget("team-b", "b").Hard("cpu=20").Parent("org").Obj()
	c := makeBudget("team-c", "c").Hard("cpu=20").Obj()
	c.Hours = day(fmt.Sprint(2+w.rng.IntN(6)), v1alpha1.ExhaustionEvict)
	for _, ns := range hourNamespaces {
		l := map[string]string{v1alpha1.EnabledLabel: "true"}
		if ns == "team-a" || ns == "team-b" {
			l["tier"] = "gold"
		}
		q.SetNamespace(ns, l)
	}
	d := makeBudget("team-d", "d").Hard("cpu=20").Obj()
	ds, problem := hours.FromAPI(&v1alpha1.UsageLimits{Hours: corev1.ResourceList{"cpu": resource.MustParse(fmt.Sprint(2 + w.rng.IntN(4)))},
		HalfLife: &metav1.Duration{Duration: hDecayHalfLife}, DefaultMaxRuntime: &metav1.Duration{Duration: time.Hour}}, normalizedName)
	if problem != "" {
		t.Fatal(problem)
	}
	d.Hours = &ds
	e := makeBudget("team-e", "e").Hard("cpu=20").Obj()
	es, problem := hours.FromAPI(&v1alpha1.UsageLimits{Hours: corev1.ResourceList{"cpu": resource.MustParse(fmt.Sprint(4 + w.rng.IntN(8)))},
		RollingDays: hRollDays, DefaultMaxRuntime: &metav1.Duration{Duration: time.Hour}}, normalizedName)
	if problem != "" {
		t.Fatal(problem)
	}
	e.Hours = &es
	for _, x := range []Budget{org, a, b, c, d, e} {
		w.budgets[x.Key] = x
		q.UpsertBudget(x)
	}
	return w
}

func (w *hourWorld) run(steps int) error {
	for w.stepN = 0; w.stepN < steps; w.stepN++ {
		for range w.rng.IntN(3) {
			w.createPod()
		}
		w.endPods()
		if w.rng.IntN(25) == 0 {
			w.restart()
		}
		if err := w.admitAndCheck(); err != nil {
			return err
		}
		// Minutes, now and then hours: midnights pass.
		d := time.Duration(1+w.rng.IntN(20)) * time.Minute
		if w.rng.IntN(10) == 0 {
			d = time.Duration(1+w.rng.IntN(6)) * time.Hour
		}
		w.clk.Step(d)
	}
	return nil
}

func (w *hourWorld) createPod() {
	w.serial++
	p := &hPod{name: fmt.Sprintf("p%d", w.serial), ns: hourNamespaces[w.rng.IntN(len(hourNamespaces))],
		cpu: float64(1 + w.rng.IntN(3)), max: time.Duration(5+w.rng.IntN(90)) * time.Minute}
	// Most run within their maximum; some run past it.
	p.runs = time.Duration(w.rng.Int64N(int64(p.max)))
	if w.rng.IntN(4) == 0 {
		p.runs = p.max + time.Duration(1+w.rng.IntN(120))*time.Minute
	}
	w.pods[p.name] = p
	w.q.UpsertPod(w.podObj(p).Pod())
	w.logf("create %s/%s cpu %v max %v runs %v", p.ns, p.name, p.cpu, p.max, p.runs)
}

// podObj is the pod as the API server has it: gated, or ungated with the ungate
// patch's record.
func (w *hourWorld) podObj(p *hPod) *podBuilder {
	b := makePod(p.name).NS(p.ns).Req(fmt.Sprintf("cpu=%v", p.cpu)).Annotation(v1alpha1.MaxRuntimeAnnotation, p.max.String())
	if !p.admittedAt.IsZero() {
		b = b.Ungated().Annotation(v1alpha1.AdmittedAtAnnotation, p.admittedAt.UTC().Format(time.RFC3339)).
			Annotation(v1alpha1.AdmittedMaxRuntimeAnnotation, p.max.String()).AdmittedBy(strings.Join(hourKeyStrings(p.budgets), ","))
	}
	return b
}

func hourKeyStrings(keys []BudgetKey) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.String()
	}
	return out
}

// endPods ends the pods whose runtime passed, and those evicted.
func (w *hourWorld) endPods() {
	now := w.clk.Now()
	for _, name := range slices.Sorted(maps.Keys(w.pods)) {
		p := w.pods[name]
		if p.admittedAt.IsZero() || !p.endedAt.IsZero() {
			continue
		}
		if p.evicting || !now.Before(p.admittedAt.Add(p.runs)) {
			// The core hears of it now: what it ran until then counts.
			p.endedAt = now
			w.q.UpsertPod(w.podObj(p).Phase(corev1.PodSucceeded).Pod())
			w.logf("end %s/%s (evicted %v)", p.ns, p.name, p.evicting)
		}
	}
}

// restart is a new manager: a new core, given each budget with the status.usage the
// last one would have written now, and the pods as the API server has them.
func (w *hourWorld) restart() {
	w.restarts++
	old := w.q
	q := NewAdmissionQueue(WithClock(w.clk))
	for _, ns := range hourNamespaces {
		l := map[string]string{v1alpha1.EnabledLabel: "true"}
		if ns == "team-a" || ns == "team-b" {
			l["tier"] = "gold"
		}
		q.SetNamespace(ns, l)
	}
	for _, k := range slices.SortedFunc(maps.Keys(w.budgets), BudgetKey.Compare) {
		b := w.budgets[k]
		if st, ok := old.Reader().Status(k); ok && st.Usage != nil {
			b.HoursRestore = roundTrip(st.Usage)
		}
		q.UpsertBudget(b)
	}
	for _, name := range slices.Sorted(maps.Keys(w.pods)) {
		if p := w.pods[name]; p.endedAt.IsZero() {
			q.UpsertPod(w.podObj(p).Pod())
		}
	}
	w.q = q
	w.logf("restart")
}

// roundTrip is st as the status keeps it: used rounded up to the milli-hour.
func roundTrip(st *hours.State) *hours.State {
	out := *st
	out.Used = map[corev1.ResourceName]float64{}
	for r, v := range st.Used {
		out.Used[r] = float64(int64(v*1000+0.999999)) / 1000
	}
	return &out
}

// The record's accounting, for budget k at now.

func (w *hourWorld) covers(p *hPod, k BudgetKey) bool { return slices.Contains(p.budgets, k) }

// recordUsed is what k's pods used in the current day (for e, its rolling window);
// withinMax counts only what they used within their maximum.
func (w *hourWorld) recordUsed(k BudgetKey, now time.Time, withinMax bool) float64 {
	dayStart := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	if k == hRoll {
		dayStart = dayStart.AddDate(0, 0, -hRollDays)
	}
	sum := 0.0
	for _, p := range w.pods {
		if p.admittedAt.IsZero() || p.admittedAt.After(now) || !w.covers(p, k) {
			continue
		}
		from, to := p.admittedAt, now
		if !p.endedAt.IsZero() && p.endedAt.Before(now) {
			to = p.endedAt
		}
		if withinMax && p.admittedAt.Add(p.max).Before(to) {
			to = p.admittedAt.Add(p.max)
		}
		if k == hDecay {
			// Decayed, never reset: ∫ cpu·2^(-(now-τ)/h) dτ over [from, to].
			if to.After(from) {
				h := hDecayHalfLife.Hours()
				sum += p.cpu * h / math.Ln2 * (math.Exp2(-now.Sub(to).Hours()/h) - math.Exp2(-now.Sub(from).Hours()/h))
			}
			continue
		}
		if from.Before(dayStart) {
			from = dayStart
		}
		if to.After(from) {
			sum += p.cpu * to.Sub(from).Hours()
		}
	}
	return sum
}

func (w *hourWorld) recordReserved(k BudgetKey, now time.Time) float64 {
	sum := 0.0
	for _, p := range w.pods {
		if p.admittedAt.IsZero() || p.admittedAt.After(now) || (!p.endedAt.IsZero() && !p.endedAt.After(now)) || !w.covers(p, k) {
			continue
		}
		if left := p.admittedAt.Add(p.max).Sub(now); left > 0 {
			sum += p.cpu * left.Hours()
		}
	}
	return sum
}

func (w *hourWorld) limit(k BudgetKey) (float64, bool) {
	h := w.budgets[k].Hours
	if h == nil {
		return 0, false
	}
	return h.Limits["requests.cpu"], true
}

const hourSlack = 1e-6 // float rounding, and the status' milli-hours after a restart

func (w *hourWorld) admitAndCheck() error {
	now := w.clk.Now()
	into := map[BudgetKey]bool{}
	for _, a := range w.q.Admit() {
		p := w.pods[a.Pod.Name]
		if p == nil || !p.admittedAt.IsZero() {
			return fmt.Errorf("admitted %s, which the model does not know gated", a.Pod.Name)
		}
		p.admittedAt, p.budgets = now, a.Budgets
		w.q.Done(a.Pod.UID, Ungated, "")
		w.q.UpsertPod(w.podObj(p).Pod())
		w.admitted++
		for _, k := range a.Budgets {
			into[k] = true
		}
		w.logf("admit %s/%s into %v", p.ns, p.name, a.Budgets)
	}
	slack := hourSlack * float64(1+w.restarts) * 1000 // each restart may round up by a milli-hour
	for _, k := range slices.SortedFunc(maps.Keys(w.budgets), BudgetKey.Compare) {
		limit, ok := w.limit(k)
		if !ok {
			continue
		}
		used, reserved := w.recordUsed(k, now, false), w.recordReserved(k, now)
		within := w.recordUsed(k, now, true)
		if into[k] && within+reserved > limit+hourSlack {
			return fmt.Errorf("admitted into %s with %.4f used within maxima + %.4f reserved > %v CPU-hours", k.Describe(), within, reserved, limit)
		}
		if within > limit+hourSlack {
			return fmt.Errorf("%s: %.4f CPU-hours used within the pods' maxima today, over its %v", k.Describe(), within, limit)
		}
		st, _ := w.q.Reader().Status(k)
		if st.Usage == nil {
			return fmt.Errorf("%s has hours and no usage in its status", k.Describe())
		}
		if got := st.Usage.Used["requests.cpu"]; got < used-hourSlack || got > used+slack {
			return fmt.Errorf("%s: status used %.6f CPU-hours, the record %.6f", k.Describe(), got, used)
		}
	}
	// Waits for hours: the record agrees that the pod does not fit.
	for _, name := range slices.Sorted(maps.Keys(w.pods)) {
		p := w.pods[name]
		if !p.admittedAt.IsZero() {
			continue
		}
		r, ok := w.q.Reader().WaitReason(types.UID(p.name))
		if !ok || r.Code != CodeHoursExhausted {
			continue
		}
		w.waited++
		if !strings.Contains(r.Message, "resource-hours") {
			return fmt.Errorf("%s waits with %q", p.name, r.Message)
		}
		// The reason is the core's at its last evaluation of the pod: between two, used
		// decays (budget d), and the pod is looked at again at d's next step of decay.
		seen, ok := w.waits[p.name]
		if !ok || seen.message != r.Message {
			seen = hWait{message: r.Message, since: now}
			w.waits[p.name] = seen
		}
		at := seen.since
		fits := true
		for _, k := range slices.SortedFunc(maps.Keys(w.budgets), BudgetKey.Compare) {
			limit, ok := w.limit(k)
			if !ok || !w.podIn(p, k) {
				continue
			}
			// A restart reads used back rounded up to the milli-hour: the core may count
			// up to that much more than the record.
			if w.recordUsed(k, at, false)+w.recordReserved(k, at)+p.cpu*p.max.Hours() > limit-slack {
				fits = false
			}
		}
		if fits {
			return fmt.Errorf("%s waits for hours (%s), and fits by the record", p.name, r.Message)
		}
	}
	return w.checkEvictions(now)
}

// podIn says whether a gated pod is covered by k.
func (w *hourWorld) podIn(p *hPod, k BudgetKey) bool {
	switch k {
	case hOrg:
		return p.ns == "team-a" || p.ns == "team-b"
	case hA:
		return p.ns == "team-a"
	case hB:
		return p.ns == "team-b"
	case hEvic:
		return p.ns == "team-c"
	case hRoll:
		return p.ns == "team-e"
	default:
		return p.ns == "team-d"
	}
}

// checkEvictions: under Evict (budget c), the victims are exactly the pods past their
// maximum not already on their way out.
func (w *hourWorld) checkEvictions(now time.Time) error {
	got := map[string]bool{}
	for _, pr := range w.q.Preemptions() {
		if pr.Reason != PreemptMaxRuntime || pr.Budget != hEvic || pr.Preemptor.UID != "" {
			return fmt.Errorf("preemption %+v, want only MaxRuntime victims of %s", pr, hEvic.Describe())
		}
		got[pr.Victim.Name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(w.pods)) {
		p := w.pods[name]
		past := !p.admittedAt.IsZero() && p.endedAt.IsZero() && !p.evicting && w.covers(p, hEvic) && !now.Before(p.admittedAt.Add(p.max))
		if got[name] != past {
			return fmt.Errorf("pod %s (admitted %v, max %v): chosen as victim %v, past its maximum under Evict %v", name, p.admittedAt, p.max, got[name], past)
		}
		if past {
			p.evicting = true
			w.evicted++
			w.q.Evicted(types.UID(name))
		}
	}
	return nil
}
