package quota

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota/depend"
)

// The world of TestRandomizedAdmission: the model of each pod, the world that holds
// the core and the model, and its step loop. Its moves are in the randomized_*_test.go
// files beside it.

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
	obj      *corev1.Pod
	rv       int // the API server's resourceVersion of the pod
	state    mPodState
	doneAt   int // step at which Done is reported (in flight)
	outcome  Result
	applies  bool // the attempt in flight applies if its fence still holds
	bump     bool // a concurrent write lands before the attempt
	retried  bool // the attempt in flight retries one whose outcome was not known
	fence    int  // resourceVersion the attempt in flight is fenced on
	informAt int  // step at which the ungated view is delivered (-1: none pending)
	lastView Pod  // the newest view the core was given
	prevView Pod  // the one before it
	pinned   []BudgetKey
	// chargeLabels are the labels its charge is covered by (as the core keeps them):
	// those it was admitted with, read back from its admitted-labels annotation after
	// a restart, or those it had when first seen running.
	chargeLabels map[string]string
	admittedBy   []BudgetKey // the budgets of the attempt in flight: its admitted-by
	// admittedLabels are the labels of the attempt in flight: its admitted-labels.
	admittedLabels map[string]string
	usage          corev1.ResourceList // with its claim's
	claim          string              // namespace/name of the claim it uses ("" none)
	claimUsage     corev1.ResourceList
	groupName      string
	groupSize      int
	// podGroup is the PodGroup it names ("" for none); groupName and groupSize are then
	// the PodGroup's (randomized_podgroups_test.go).
	podGroup   string
	preexisted bool
	// seenAt is when the core first saw it (a new leader sees it anew): its wait for
	// the preemption cooldown is counted from then (randomized_churn_test.go).
	seenAt time.Time
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
	if p.lastView.UID == "" {
		p.seenAt = w.clk.Now() // the core's first view of it
	}
	p.prevView = p.lastView
	p.lastView = w.withPodGroup(w.withDependencies(w.withClaims(NewPod(p.obj, v1alpha1.SchedulingGate, w.clk.Now()), p.obj)))
	w.q.UpsertPod(p.lastView)
	w.sync(p)
}

// sync follows what the core decided for a pod it was told about: a charge given back
// (the pod waits again), or confirmed (it runs).
func (w *world) sync(p *mPod) {
	if _, waiting := w.q.Reader().WaitCode(p.obj.UID); waiting && p.state == mUnresolved {
		w.logf("core gave back %s", p.obj.Name)
		p.state = mGated
		p.pinned, p.chargeLabels = nil, nil
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

	// hold: the core holds uncovered pods (the default); else it releases them.
	hold bool
	// namespaces are the labels the core was told; late are namespace events (the
	// labels the API server has) not delivered to the core yet.
	namespaces map[string]map[string]string
	late       map[string]map[string]string
	budgets    map[BudgetKey]Budget
	pods       map[types.UID]*mPod
	events     []string
	rvSerial   int
	evicting   []types.UID           // preemption victims to evict (randomized_evict_test.go)
	accepted   []types.UID           // evicted, still terminating
	unheard    []types.UID           // evicted with the answer lost: going, the core not told
	untold     []types.UID           // of accepted: applied unheard, not retried; the core not told
	reclaimed  map[types.UID]reclaim // victims decided by reclaim (not WithinBudget)
	dropped    map[types.UID]bool    // while evict runs: victims it stopped trying
	failed     error                 // a check that failed outside admitAndCheck (evict)
	claims     fakeSpecs             // the ResourceClaims of the world's namespaces
	// tenant: the world has a hostile tenant's moves too (huge values, claims swapped,
	// limits on limits.memory to test them against). Without them the world draws
	// exactly the events it drew before they came, so a regression seed found then
	// still makes the world it was found in.
	tenant bool
	// admin is set by a step in which an administrator (or a pod created before its
	// namespace opted in) moved: only such a step may take a budget beyond its ceiling
	// (hard, plus its borrowingLimit in a family).
	admin bool
	// The preemption cooldown and its backoff as the model keeps them
	// (randomized_churn_test.go): off (0) outside the tenant's worlds, so that a
	// regression seed found before them still runs as it did.
	cooldown, maxBackoff time.Duration
	backoffs             map[string]mBackoff
	preemptors           map[types.UID]*mPreemptor
	victimOf             map[types.UID]*mPreemptor // the preemptor of a victim's latest decision
	evictedTold          map[types.UID]bool        // the core was told the pod was evicted
	evictions            int                       // the evictions the core was told of
	churn                map[string]*mChurn        // the tenant's churn, per namespace
	// starts: some pods say when they may start (randomized_starts_test.go). Off in
	// the regression worlds, which draw exactly what they drew when they were found.
	starts bool
	// jobs are the states of the Jobs pods wait for (randomized_deps_test.go), by
	// namespace/name; a Job not there has not ended. Pods wait for them only when
	// starts is set.
	jobs map[string]depend.State
	// podGroups are the minCounts of the PodGroups that exist, by namespace/name
	// (randomized_podgroups_test.go); pods name them only when starts is set.
	podGroups map[string]int
	// composites are the minGroupCounts of the CompositePodGroups that exist, by
	// namespace/name: "cpg", the parent of PodGroups cpg-a, cpg-b and cpg-c.
	composites map[string]int
	// cpgRng draws the world's choices about CompositePodGroups, so that they leave
	// the worlds the seeds made before them as they were.
	cpgRng *rand.Rand
	// windows open and end on budgets (randomized_windowends_test.go); nil in the
	// regression worlds.
	windows *worldWindows
	// notSent, when not nil, turns some ungate attempts into NotSent: the controller
	// sends no patch (the pod, changed since the decision, cannot take the admission,
	// or a claim could not be pinned). nil in the regression worlds, whose draws it
	// would change.
	notSent *worldNotSent
}

var worldNamespaces = []string{"ns-a", "ns-b", "ns-c"}

// worldPriorityCeiling is the world's priority ceiling: pods get priorities 0 to 3, and
// 3 (a "system" class) ranks as 2 (WithPriorityCeiling).
const worldPriorityCeiling = 2

// priority is the priority the model ranks a pod by: its own, clamped at the ceiling.
func (p *mPod) priority() int32 {
	if p.obj.Spec.Priority == nil {
		return 0
	}
	return min(*p.obj.Spec.Priority, worldPriorityCeiling)
}

// newWorld is a world with the hostile tenant's moves (newWorldOf(seed, true)).
func newWorld(seed int) *world {
	w := newWorldOf(seed, true)
	w.starts = true
	w.windows = newWorldWindows(seed)
	w.notSent = &worldNotSent{rng: rand.New(rand.NewPCG(uint64(seed), 0x6e6f7453656e74))}
	return w
}

func newWorldOf(seed int, tenant bool) *world {
	clk := clocktesting.NewFakeClock(t0)
	w := &world{
		rng:        rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15)),
		cpgRng:     rand.New(rand.NewPCG(uint64(seed), 0x5851f42d4c957f2d)),
		clk:        clk,
		hold:       seed%3 != 0,
		namespaces: map[string]map[string]string{},
		late:       map[string]map[string]string{},
		budgets:    map[BudgetKey]Budget{},
		pods:       map[types.UID]*mPod{},
		reclaimed:  map[types.UID]reclaim{},
		claims:     newWorldClaims(),
		jobs:       map[string]depend.State{},
		podGroups:  map[string]int{},
		composites: map[string]int{},
		tenant:     tenant,
	}
	if tenant {
		w.cooldown = []time.Duration{time.Second, 3 * time.Second, 0}[(seed/3)%3]
		w.maxBackoff = 8 * w.cooldown
	}
	w.resetPreemptionModel()
	w.q = w.newCore()
	return w
}

// newCore is a manager's core, started afresh: no periodic flush (liveness must follow
// from events alone), uncovered pods held or released as the seed says, the world's
// preemption cooldown.
func (w *world) newCore() *AdmissionQueue {
	// No periodic flush: liveness must follow from events alone.
	return NewAdmissionQueue(WithClock(w.clk), WithFlushInterval(1000*time.Hour), WithHoldUncovered(w.hold), WithPriorityCeiling(worldPriorityCeiling),
		WithPreemptionCooldown(w.cooldown, w.maxBackoff))
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
	w.logf("hold uncovered %v, preemption cooldown %s up to %s", w.hold, w.cooldown, w.maxBackoff)
	for range 2 + w.rng.IntN(3) {
		w.randomClusterBudget()
	}
	for range 2 + w.rng.IntN(4) {
		w.randomBudget()
	}
	for w.step = 0; w.step < steps; w.step++ {
		over := w.overCeiling()
		w.admin = false
		for range 1 + w.rng.IntN(4) {
			w.randomEvent()
		}
		w.windowStep()
		if err := w.admitAndCheck(); err != nil {
			return err
		}
		if !w.admin {
			for k, u := range w.overCeiling() {
				if before, was := over[k]; !was || u.Cmp(before) > 0 {
					return fmt.Errorf("%s: %s used (%s before) after a step in which no administrator moved", k, u.String(), before.String())
				}
			}
		}
	}
	return w.calmDown()
}

// setNamespace labels a namespace; one time in three the event reaches the core late
// (deliverNamespaces), after events of pods in it.
func (w *world) setNamespace(ns string) {
	l := map[string]string{v1alpha1.EnabledLabel: "true"}
	if w.rng.IntN(2) == 0 {
		l["tier"] = "gold"
	}
	if w.rng.IntN(3) == 0 {
		w.late[ns] = l
		w.logf("namespace %s %v (event late)", ns, l)
		return
	}
	delete(w.late, ns)
	w.namespaces[ns] = l
	w.q.SetNamespace(ns, l)
	w.logf("namespace %s %v", ns, l)
}

// deliverNamespaces delivers the late namespace events, each with probability p (in
// percent).
func (w *world) deliverNamespaces(p int) {
	for _, ns := range worldNamespaces {
		if l, ok := w.late[ns]; ok && w.rng.IntN(100) < p {
			delete(w.late, ns)
			w.namespaces[ns] = l
			w.q.SetNamespace(ns, l)
			w.admin = true // an administrator's relabel, reaching the core late
			w.logf("namespace event delivered: %s %v", ns, l)
		}
	}
}
