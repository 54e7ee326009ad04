package quota

import (
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

var (
	randomSeeds = flag.Int("quota.seeds", 300, "seeds for TestRandomizedAdmission (go test -run Randomized -args -quota.seeds=N); -short runs 30")
	randomSteps = flag.Int("quota.steps", 150, "steps per seed for TestRandomizedAdmission")
	randomSeed0 = flag.Int("quota.seed", -1, "run only this seed of TestRandomizedAdmission")
)

// TestRandomizedAdmission drives the core with random events (pods added, deleted,
// finished, relabelled; budgets created, deleted, resized, opened, closed, re-parented;
// namespaces relabelled; ungate patches that apply, apply but are reported failed or
// lose their response, fail, race a concurrent write, or find the pod gone; informer
// views confirmed late; fresh reads; failovers to a standby whose cache lags) and
// checks it against an independent model after every step:
//
//   - the promise: a pod the API server shows ungated is never counted as waiting by
//     the core (its charge is never given back while it runs), whatever the core was
//     told about the patch;
//   - safety: a pod admitted because it fits is charged to exactly the budgets the
//     model says cover it, all of them admitting, and none of them ends up over hard;
//     a group that had nothing admitted is admitted with at least group-size members;
//   - accounting: every budget's used equals the model's sum over the pods the core was
//     told are admitted or running, and the core's own bookkeeping is consistent;
//   - liveness: once the world calms down (every budget open and fixed, running pods
//     finishing), every gated pod is admitted unless it can never fit or its group is
//     incomplete.
func TestRandomizedAdmission(t *testing.T) {
	n := *randomSeeds
	if testing.Short() {
		n = min(n, 30)
	}
	seeds := make([]int, 0, n)
	if *randomSeed0 >= 0 {
		seeds = append(seeds, *randomSeed0)
	} else {
		for s := range n {
			seeds = append(seeds, s)
		}
	}
	for _, seed := range seeds {
		w := newWorld(seed)
		if err := w.run(*randomSteps); err != nil {
			t.Fatalf("seed %d (rerun with -args -quota.seed=%d): %v\nlast events:\n%s", seed, seed, err, strings.Join(w.lastEvents(25), "\n"))
		}
	}
	t.Logf("%d seeds x %d steps", len(seeds), *randomSteps)
}

type mPodState int

const (
	mGated      mPodState = iota
	mInflight             // admitted, Done pending
	mUnresolved           // Done said Unknown: the core holds the charge
	mRunning              // ungated, as the core knows
)

// mPod is the model of one pod: the API server's truth (obj, with its gate and
// resourceVersion) and what the core was told.
type mPod struct {
	obj        *corev1.Pod
	rv         int // the API server's resourceVersion of the pod
	state      mPodState
	doneAt     int // step at which Done is reported (in flight)
	outcome    Result
	applies    bool // the attempt in flight applies if its fence still holds
	bump       bool // a concurrent write lands before the attempt
	fence      int  // resourceVersion the attempt in flight is fenced on
	informAt   int  // step at which the ungated view is delivered (-1: none pending)
	lastView   Pod  // the newest view the core was given
	prevView   Pod  // the one before it
	pinned     []BudgetKey
	usage      corev1.ResourceList
	groupName  string
	groupSize  int
	preexisted bool
}

func (p *mPod) gated() bool { return len(p.obj.Spec.SchedulingGates) > 0 }

// write is an API server write of the pod: a new resourceVersion.
func (w *world) write(p *mPod) {
	w.rvSerial++
	p.rv = w.rvSerial
	p.obj.ResourceVersion = strconv.Itoa(p.rv)
}

// view gives the core the pod as the API server has it now.
func (w *world) view(p *mPod) {
	p.prevView = p.lastView
	p.lastView = NewPod(p.obj, v1alpha1.SchedulingGate, w.clk.Now())
	w.q.UpsertPod(p.lastView)
	w.sync(p)
}

// sync follows what the core decided for a pod it was told about: a charge given back
// (the pod waits again), or confirmed (it runs).
func (w *world) sync(p *mPod) {
	if _, waiting := w.q.WaitCode(p.obj.UID); waiting && p.state == mUnresolved {
		w.logf("core gave back %s", p.obj.Name)
		p.state = mGated
		p.pinned = nil
	}
	if !p.gated() && (p.state == mUnresolved || p.state == mGated) && p.lastView.ResourceVersion == p.obj.ResourceVersion {
		p.state = mRunning
	}
}

type world struct {
	rng    *rand.Rand
	clk    *clocktesting.FakeClock
	q      *AdmissionQueue
	step   int
	serial int

	namespaces map[string]map[string]string
	budgets    map[BudgetKey]Budget
	pods       map[types.UID]*mPod
	events     []string
	rvSerial   int
}

var worldNamespaces = []string{"ns-a", "ns-b", "ns-c"}

func newWorld(seed int) *world {
	clk := clocktesting.NewFakeClock(t0)
	w := &world{
		rng: rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15)),
		clk: clk,
		// No periodic flush: liveness must follow from events alone.
		q:          NewAdmissionQueue(WithClock(clk), WithFlushInterval(1000*time.Hour)),
		namespaces: map[string]map[string]string{},
		budgets:    map[BudgetKey]Budget{},
		pods:       map[types.UID]*mPod{},
	}
	return w
}

func (w *world) logf(format string, args ...any) {
	w.events = append(w.events, fmt.Sprintf("%4d ", w.step)+fmt.Sprintf(format, args...))
}

func (w *world) lastEvents(n int) []string {
	return w.events[max(0, len(w.events)-n):]
}

func (w *world) run(steps int) error {
	for _, ns := range worldNamespaces {
		w.setNamespace(ns)
	}
	for range 2 + w.rng.IntN(3) {
		w.randomClusterBudget()
	}
	for range 2 + w.rng.IntN(4) {
		w.randomBudget()
	}
	for w.step = 0; w.step < steps; w.step++ {
		for range 1 + w.rng.IntN(4) {
			w.randomEvent()
		}
		if err := w.admitAndCheck(); err != nil {
			return err
		}
	}
	return w.calmDown()
}

func (w *world) setNamespace(ns string) {
	l := map[string]string{v1alpha1.EnabledLabel: "true"}
	if w.rng.IntN(2) == 0 {
		l["tier"] = "gold"
	}
	w.namespaces[ns] = l
	w.q.SetNamespace(ns, l)
	w.logf("namespace %s %v", ns, l)
}

// admitAndCheck runs Admit and checks the safety and accounting invariants.
func (w *world) admitAndCheck() error {
	startedBefore := map[string]bool{}
	for _, p := range w.pods {
		if p.groupName != "" && p.state != mGated {
			startedBefore[p.obj.Namespace+"/"+p.groupName] = true
		}
	}
	admitted := w.q.Admit()
	perGroup := map[string]int{}
	touched := map[BudgetKey]bool{}
	for _, a := range admitted {
		p := w.pods[a.Pod.UID]
		if p == nil || (p.state != mGated && p.state != mUnresolved) {
			return fmt.Errorf("admitted %s, which is neither gated nor unresolved", a.Pod)
		}
		retry := p.state == mUnresolved
		p.state = mInflight
		p.doneAt = w.step + w.rng.IntN(3)
		// The controller fences the patch on the version its cache has: mostly the
		// newest, sometimes the one the core saw (the cache lags).
		p.fence = p.rv
		if w.rng.IntN(5) == 0 {
			p.fence, _ = strconv.Atoi(p.lastView.ResourceVersion)
		}
		p.applies, p.bump = false, false
		switch r := w.rng.IntN(100); {
		case r < 60:
			p.outcome, p.applies = Ungated, true
		case r < 70:
			p.outcome, p.applies = Unknown, true // applied; the response was lost
		case r < 85:
			p.outcome = Unknown // never reached the API server, or refused
		case r < 93:
			p.outcome, p.bump = Unknown, true // a concurrent write wins; the test op fails
		default:
			p.outcome = Gone
		}
		w.logf("admit %s budgets=%v retry=%v reason=%s", a.Pod, a.Budgets, retry, a.Reason.Message)
		if retry {
			if err := sameKeys(a.Budgets, w.charged(p)); err != nil {
				return fmt.Errorf("retry of %s: %w", a.Pod, err)
			}
			continue
		}
		p.pinned = w.cover(p.obj)
		wantCover := w.cover(p.obj)
		var got []string
		for _, k := range a.Budgets {
			got = append(got, k.String())
		}
		var want []string
		for _, k := range wantCover {
			want = append(want, k.String())
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			return fmt.Errorf("%s admitted against %v, model says it is covered by %v", a.Pod, got, want)
		}
		switch a.Reason.Code {
		case CodeFits:
			for _, k := range wantCover {
				if !w.admitting(k) {
					return fmt.Errorf("%s admitted while %s does not admit", a.Pod, k.Describe())
				}
				touched[k] = true
			}
		case CodeNoBudget:
			if len(wantCover) > 0 {
				return fmt.Errorf("%s admitted as uncovered", a.Pod)
			}
		default:
			return fmt.Errorf("%s admitted with unexpected reason %v", a.Pod, a.Reason)
		}
		if p.groupName != "" {
			perGroup[p.obj.Namespace+"/"+p.groupName]++
		}
	}
	for g, n := range perGroup {
		size := 0
		for _, p := range w.pods {
			if p.obj.Namespace+"/"+p.groupName == g {
				size = max(size, p.groupSize)
			}
		}
		if !startedBefore[g] && n < size {
			return fmt.Errorf("group %s: %d members admitted, size %d, none admitted before", g, n, size)
		}
	}
	for _, uid := range slices.Sorted(mapsKeys(w.pods)) {
		p := w.pods[uid]
		if _, waiting := w.q.WaitCode(uid); waiting && !p.gated() {
			return fmt.Errorf("pod %s is ungated in the API server (rv %d), but the core counts it as waiting: its charge was given back", p.obj.Name, p.rv)
		}
	}
	usedAll := w.usedAll()
	for k := range touched {
		used := usedAll[k]
		hard, _ := NormalizeHard(w.budgets[k].Hard)
		for name, h := range hard {
			u := used[name]
			if u.Cmp(h) > 0 {
				return fmt.Errorf("%s over hard after admissions: %s used %s > %s", k.Describe(), name, u.String(), h.String())
			}
		}
	}
	for _, k := range w.budgetKeys() {
		st, ok := w.q.Status(k)
		if !ok {
			return fmt.Errorf("no status for %s", k.Describe())
		}
		used := usedAll[k]
		for name, got := range st.Used {
			want := used[name]
			if got.Cmp(want) != 0 {
				return fmt.Errorf("%s used %s = %s, model says %s; core charges %v, model %v", k.Describe(), name, got.String(), want.String(), w.q.chargedNames(k), w.modelCharged(k))
			}
		}
	}
	if err := w.checkAtHead(1 + w.rng.IntN(4)); err != nil {
		return err
	}
	return w.q.checkInvariants()
}

// checkAtHead: AtHead picks exactly the pods the snapshot places among the first n of
// some budget's queue, or holds with no budget, whichever queue they wait in.
func (w *world) checkAtHead(n int) error {
	s := w.q.Snapshot()
	want := map[types.UID]bool{}
	var asked []types.UID
	for _, bq := range s.Budgets {
		for _, qp := range bq.Pods {
			asked = append(asked, qp.Pod.UID)
			if qp.Position <= n {
				want[qp.Pod.UID] = true
			}
		}
	}
	for _, qp := range s.Held {
		asked = append(asked, qp.Pod.UID)
		want[qp.Pod.UID] = true
	}
	got := w.q.AtHead(asked, n)
	if !maps.Equal(got, want) {
		return fmt.Errorf("AtHead(n=%d) = %v, the snapshot's first %d = %v", n, slices.Sorted(maps.Keys(got)), n, slices.Sorted(maps.Keys(want)))
	}
	return nil
}

// calmDown opens and repairs every budget, then lets running pods finish until nothing
// moves, and checks that every pod still gated has a reason never to be admitted.
func (w *world) calmDown() error {
	w.logf("calm down")
	for _, k := range w.budgetKeys() {
		b := w.budgets[k]
		b.State = v1alpha1.StateOpen
		w.budgets[k] = b
	}
	// Keep the hierarchy, cutting only parent links that are missing or loop.
	for _, k := range w.budgetKeys() {
		if b := w.budgets[k]; !w.admitting(k) {
			b.Parent = ""
			w.budgets[k] = b
		}
	}
	for _, k := range w.budgetKeys() {
		w.upsertBudget(w.budgets[k])
	}
	for round := 0; round < 200; round++ {
		w.step++
		for _, p := range w.pods {
			p.doneAt = 0
			if p.outcome == Gone || (p.state == mInflight && !p.applies) {
				// The calm world loses no pods and no responses.
				p.outcome, p.applies, p.bump = Ungated, true, false
			}
		}
		w.deliver()
		for _, uid := range slices.Sorted(mapsKeys(w.pods)) {
			if p := w.pods[uid]; p.state == mRunning {
				w.finish(p)
			}
		}
		w.clk.Step(DefaultMaxBackoff)
		if err := w.admitAndCheck(); err != nil {
			return err
		}
		if err := w.workConserving(); err != nil {
			return err
		}
		busy := false
		for _, p := range w.pods {
			if p.state != mGated {
				busy = true // admitted this round, or still to finish
			}
		}
		if !busy {
			break
		}
	}
	for _, uid := range slices.Sorted(mapsKeys(w.pods)) {
		p := w.pods[uid]
		if p.state != mGated {
			continue
		}
		if w.neverAdmissible(p) {
			continue
		}
		r, _ := w.q.WaitReason(uid)
		return fmt.Errorf("pod %s/%s is still gated in a calm world: %s: %s", p.obj.Namespace, p.obj.Name, r.Code, r.Message)
	}
	return nil
}
