package quota

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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
	p.lastView = NewPod(p.obj, w.clk.Now())
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

func (w *world) randomHard() corev1.ResourceList {
	hard := corev1.ResourceList{}
	if w.rng.IntN(5) > 0 {
		hard["cpu"] = *resourceMilli(int64(1000 * (1 + w.rng.IntN(8))))
	}
	if w.rng.IntN(3) == 0 {
		hard["pods"] = *resourceCount(int64(1 + w.rng.IntN(6)))
	}
	return hard
}

func (w *world) randomClusterBudget() {
	name := fmt.Sprintf("c%d", w.rng.IntN(4))
	b := Budget{Key: BudgetKey{Name: name}, Hard: w.randomHard()}
	switch w.rng.IntN(3) {
	case 0:
		b.NamespaceSelector = labels.Everything()
	case 1:
		b.NamespaceSelector = labels.SelectorFromSet(labels.Set{"tier": "gold"})
	}
	if w.rng.IntN(2) == 0 {
		b.Parent = fmt.Sprintf("c%d", w.rng.IntN(4)) // may be missing, or loop
	}
	w.upsertBudget(w.decorate(b))
}

func (w *world) randomBudget() {
	ns := worldNamespaces[w.rng.IntN(len(worldNamespaces))]
	b := Budget{Key: BudgetKey{Namespace: ns, Name: fmt.Sprintf("b%d", w.rng.IntN(2))}, Hard: w.randomHard()}
	if w.rng.IntN(3) == 0 {
		b.PodSelector = labels.SelectorFromSet(labels.Set{"app": "web"})
	}
	if w.rng.IntN(2) == 0 {
		b.Parent = fmt.Sprintf("c%d", w.rng.IntN(4))
	}
	w.upsertBudget(w.decorate(b))
}

func (w *world) decorate(b Budget) Budget {
	if w.rng.IntN(2) == 0 {
		b.Strategy = v1alpha1.StrictFIFO
	}
	if w.rng.IntN(6) == 0 {
		b.State = v1alpha1.StateClosed
	}
	return b
}

func (w *world) upsertBudget(b Budget) {
	w.budgets[b.Key] = b
	w.q.UpsertBudget(b)
	w.logf("upsert %s hard=%v parent=%q strategy=%s state=%s", b.Key.Describe(), b.Hard, b.Parent, b.Strategy, b.State)
}

func (w *world) randomPod(gated bool) {
	w.serial++
	name := fmt.Sprintf("p%d", w.serial)
	ns := worldNamespaces[w.rng.IntN(len(worldNamespaces))]
	cpu := int64(500 * (1 + w.rng.IntN(6)))
	if w.rng.IntN(25) == 0 {
		cpu = 100000
	}
	b := makePod(name).NS(ns).Created(w.step*10 + w.rng.IntN(10)).Priority(int32(w.rng.IntN(3))).
		Req(fmt.Sprintf("cpu=%dm", cpu))
	if w.rng.IntN(3) == 0 {
		b.Label("app", "web")
	}
	mp := &mPod{informAt: -1}
	if w.rng.IntN(4) == 0 {
		mp.groupName = fmt.Sprintf("g%d", w.rng.IntN(3))
		mp.groupSize = 1 + w.rng.IntN(3)
		b.Group(mp.groupName, mp.groupSize)
	}
	if !gated {
		b.Ungated()
		mp.state = mRunning
		mp.preexisted = true
	}
	mp.obj = b.Obj()
	mp.usage = PodUsage(mp.obj)
	w.pods[mp.obj.UID] = mp
	w.write(mp)
	if !gated {
		mp.pinned = w.cover(mp.obj) // first seen running: pinned where it is covered
	}
	w.view(mp)
	w.logf("create pod %s/%s cpu=%dm gated=%v group=%s/%d labels=%v", ns, name, cpu, gated, mp.groupName, mp.groupSize, mp.obj.Labels)
}

func (w *world) randomEvent() {
	switch r := w.rng.IntN(100); {
	case r < 35:
		w.randomPod(w.rng.IntN(15) > 0)
	case r < 55:
		if p := w.pickPod(func(p *mPod) bool { return p.state == mRunning }); p != nil {
			w.finish(p)
		}
	case r < 62:
		if p := w.pickPod(nil); p != nil {
			w.deletePod(p)
		}
	case r < 66:
		if p := w.pickPod(nil); p != nil {
			w.toggleLabel(p)
		}
	case r < 72:
		w.randomBudget()
	case r < 77:
		w.randomClusterBudget()
	case r < 80:
		keys := w.budgetKeys()
		if len(keys) > 0 {
			k := keys[w.rng.IntN(len(keys))]
			delete(w.budgets, k)
			w.q.DeleteBudget(k)
			w.logf("delete %s", k.Describe())
		}
	case r < 83:
		w.setNamespace(worldNamespaces[w.rng.IntN(len(worldNamespaces))])
	case r < 90:
		w.clk.Step(time.Duration(w.rng.IntN(2000)) * time.Millisecond)
	case r < 91:
		w.clk.Step(DefaultFlushInterval)
	case r < 96:
		// A fresh read of a pod whose ungate is unresolved (the controller's GET).
		if p := w.pickPod(func(p *mPod) bool { return p.state == mUnresolved }); p != nil {
			w.logf("fresh read %s rv=%d gated=%v", p.obj.Name, p.rv, p.gated())
			w.view(p)
		}
	case r < 97:
		w.failover()
	}
	w.deliver()
}

func (w *world) pickPod(filter func(*mPod) bool) *mPod {
	var uids []types.UID
	for uid, p := range w.pods {
		if filter == nil || filter(p) {
			uids = append(uids, uid)
		}
	}
	if len(uids) == 0 {
		return nil
	}
	slices.Sort(uids)
	return w.pods[uids[w.rng.IntN(len(uids))]]
}

func (w *world) budgetKeys() []BudgetKey {
	var keys []BudgetKey
	for k := range w.budgets {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b BudgetKey) int { return strings.Compare(a.String(), b.String()) })
	return keys
}

// finish makes a running pod Succeed.
func (w *world) finish(p *mPod) {
	p.obj.Status.Phase = corev1.PodSucceeded
	delete(w.pods, p.obj.UID)
	w.q.UpsertPod(NewPod(p.obj, w.clk.Now()))
	w.logf("finish %s", p.obj.Name)
}

// failover hands the work to a standby whose cache lags: it has every event but the
// ungated views still on their way, and for some pods the latest view is missing too.
// The old leader's attempts in flight land or not, the new leader catches up with a
// fresh read of every pod before it admits, and the informer's late (older) views
// arrive after that.
func (w *world) failover() {
	w.logf("failover")
	nq := NewAdmissionQueue(WithClock(w.clk), WithFlushInterval(1000*time.Hour))
	for _, ns := range worldNamespaces {
		nq.SetNamespace(ns, w.namespaces[ns])
	}
	for _, k := range w.budgetKeys() {
		nq.UpsertBudget(w.budgets[k])
	}
	uids := slices.Sorted(mapsKeys(w.pods))
	firstSeen := map[types.UID]Pod{}
	for _, uid := range uids {
		p := w.pods[uid]
		v := p.lastView
		if p.prevView.UID != "" && w.rng.IntN(2) == 0 {
			v = p.prevView
		}
		firstSeen[uid] = v
		nq.UpsertPod(v)
	}
	for _, uid := range uids {
		p := w.pods[uid]
		if p.state == mInflight {
			w.land(p)
		}
	}
	w.q = nq
	for _, uid := range uids {
		p := w.pods[uid]
		stale := p.lastView
		if p.prevView.UID != "" && w.rng.IntN(2) == 0 {
			stale = p.prevView
		}
		w.view(p) // the catch-up read
		w.q.UpsertPod(stale)
		p.informAt = -1
		switch first := firstSeen[uid]; {
		case p.gated():
			p.state, p.pinned = mGated, nil
		case first.Gated:
			// First seen gated, then running (the catch-up read): pinned where it is
			// covered now.
			p.state, p.pinned = mRunning, w.cover(p.obj)
		default:
			// First seen running, with the labels of that view.
			p.state = mRunning
			p.pinned = w.cover(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: first.Namespace, Labels: first.Labels}})
		}
	}
}

func (w *world) deletePod(p *mPod) {
	delete(w.pods, p.obj.UID)
	w.q.DeletePod(p.obj.UID)
	w.logf("delete pod %s (state %d)", p.obj.Name, p.state)
}

func (w *world) toggleLabel(p *mPod) {
	if p.obj.Labels["app"] == "web" {
		delete(p.obj.Labels, "app")
	} else {
		if p.obj.Labels == nil {
			p.obj.Labels = map[string]string{}
		}
		p.obj.Labels["app"] = "web"
	}
	w.write(p)
	w.logf("relabel %s %v rv=%d", p.obj.Name, p.obj.Labels, p.rv)
	w.view(p)
}

// land carries out the attempt in flight at the API server: it applies only if the pod
// still has the gate at the version the attempt was fenced on.
func (w *world) land(p *mPod) bool {
	if p.bump {
		w.write(p)
		w.logf("concurrent write %s rv=%d", p.obj.Name, p.rv)
		w.view(p)
	}
	if !p.applies || !p.gated() || p.rv != p.fence {
		return false
	}
	p.obj.Spec.SchedulingGates = nil
	w.write(p)
	p.informAt = w.step + w.rng.IntN(3)
	w.logf("ungated %s rv=%d", p.obj.Name, p.rv)
	return true
}

// deliver reports due patch outcomes and informer views.
func (w *world) deliver() {
	for _, uid := range slices.Sorted(mapsKeys(w.pods)) {
		p := w.pods[uid]
		if p.state == mInflight && p.doneAt <= w.step {
			if p.outcome == Gone {
				w.q.Done(uid, Gone, "")
				w.logf("done %s gone", p.obj.Name)
				delete(w.pods, uid)
				continue
			}
			wasGated := p.gated()
			applied := w.land(p)
			report := p.outcome
			switch {
			case !wasGated:
				report = Ungated // the controller saw the pod without the gate
			case report == Ungated && !applied:
				report = Unknown // the fence or the gate did not hold: the patch failed
			}
			w.q.Done(uid, report, strconv.Itoa(p.fence))
			w.logf("done %s %d (applied %v, fence %d)", p.obj.Name, report, applied, p.fence)
			if report == Ungated {
				p.state = mRunning
			} else {
				p.state = mUnresolved
			}
			w.sync(p)
		}
		if p.informAt >= 0 && p.informAt <= w.step {
			p.informAt = -1
			w.logf("informer: %s ungated", p.obj.Name)
			w.view(p)
		}
	}
}

func mapsKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
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
	return w.q.checkInvariants()
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
