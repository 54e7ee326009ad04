package quota

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// The preemption cooldown and its backoff (preemptcooldown.go), as the model keeps them:
// when the core first saw each pod (mPod.seenAt), each namespace's doubling, and the
// preemptors it chose victims for, judged as docs/budgets.md ("Preemption cooldown")
// says. checkCooldown checks every decision against them; checkChurn bounds what the
// tenant's churn (churnMove) gets evicted.

// mBackoff is a namespace's doubling of the cooldown, as of since.
type mBackoff struct {
	doublings int
	since     time.Time
}

// mPreemptor is what the model keeps of a pod victims were chosen for.
type mPreemptor struct {
	uid        types.UID
	ns         string
	budget     BudgetKey // Preemption.Budget of its latest decision
	evictions  int       // of its victims, reported evicted while the core knew them
	admittedAt time.Time
	judged     bool
	churn      bool // one of the tenant's churn pods
}

// mChurn is the tenant's churn in one namespace: its pod (created, then deleted at the
// next churn move there), since when the core's backoff has counted it (its first
// churn pod since the core started), how many of its pods vanished after evictions were
// made for them, and those evictions.
type mChurn struct {
	pod       types.UID
	start     time.Time
	episodes  int
	evictions int
}

// resetPreemptionModel forgets what the core's memory held: a new core starts every
// namespace at the cooldown, and its churn is counted from now.
func (w *world) resetPreemptionModel() {
	w.backoffs = map[string]mBackoff{}
	w.preemptors = map[types.UID]*mPreemptor{}
	w.victimOf = map[types.UID]*mPreemptor{}
	w.evictedTold = map[types.UID]bool{}
	if w.churn == nil {
		w.churn = map[string]*mChurn{}
	}
	for _, c := range w.churn {
		c.start, c.episodes, c.evictions = time.Time{}, 0, 0
		if c.pod != "" && w.pods[c.pod] != nil {
			c.start = w.clk.Now()
		}
	}
}

// cooldownOf is the model's cooldown of namespace ns now, and its doubling: one more for
// each preemptor that vanished, up to maxBackoff, one less for each maxBackoff since
// the last.
func (w *world) cooldownOf(ns string) (time.Duration, int) {
	n := 0
	if b, ok := w.backoffs[ns]; ok {
		n = b.doublings
		if quiet := w.clk.Now().Sub(b.since); w.maxBackoff > 0 && quiet > 0 {
			n -= int(min(quiet/w.maxBackoff, time.Duration(n)))
		}
	}
	d := w.cooldown
	for range n {
		d *= 2
	}
	return min(d, max(w.cooldown, w.maxBackoff)), n
}

// vanished doubles the cooldown of the preemptor's namespace: its room went unused.
func (w *world) vanished(e *mPreemptor, why string) {
	e.judged = true
	_, n := w.cooldownOf(e.ns)
	top := 0
	for d := w.cooldown; d > 0 && d < w.maxBackoff; d *= 2 {
		top++
	}
	if n = min(n+1, top); n > 0 {
		w.backoffs[e.ns] = mBackoff{doublings: n, since: w.clk.Now()}
	}
	d, _ := w.cooldownOf(e.ns)
	w.logf("preemptor %s vanished (%s) after %d evictions: namespace %s cooldown %s", e.uid, why, e.evictions, e.ns, d)
	if c := w.churn[e.ns]; e.churn && c != nil {
		c.episodes++
		c.evictions += e.evictions
	}
}

// checkCooldown checks a decision against the cooldown: its preemptor has waited its
// namespace's cooldown since the core first saw it. It records the preemptor.
// With the cooldown off, the model still follows the preemptors (the churn's
// evictions are counted), and the core's backoff is off too.
func (w *world) checkCooldown(p Preemption) error {
	by := w.pods[p.Preemptor.UID]
	d, n := w.cooldownOf(p.Preemptor.Namespace)
	if waited := w.clk.Now().Sub(by.seenAt); waited < d {
		return fmt.Errorf("preempting %s for %s, which has waited %s, less than the cooldown of namespace %s (%s, doubled %d times)", p.Victim, p.Preemptor, waited, p.Preemptor.Namespace, d, n)
	}
	e := w.preemptors[p.Preemptor.UID]
	if e == nil {
		e = &mPreemptor{uid: p.Preemptor.UID, ns: p.Preemptor.Namespace}
		if c := w.churn[e.ns]; c != nil && c.pod == e.uid {
			e.churn = true
		}
		w.preemptors[e.uid] = e
	}
	e.budget = p.Budget
	w.victimOf[p.Victim.UID] = e
	return nil
}

// evicted records that the core was told a victim it still needed went: an eviction
// for its preemptor.
func (w *world) evicted(uid types.UID) {
	w.q.Evicted(uid)
	w.evictedTold[uid] = true
	w.evictions++
	if e := w.victimOf[uid]; e != nil {
		delete(w.victimOf, uid)
		e.evictions++
		if w.pods[e.uid] == nil && !e.judged {
			w.vanished(e, "deleted while its eviction was under way")
		}
	}
}

// preemptorAdmitted judges a preemptor at its admission, charged to budgets.
func (w *world) preemptorAdmitted(uid types.UID, budgets []BudgetKey) {
	e := w.preemptors[uid]
	if e == nil || e.judged {
		return
	}
	switch {
	case e.evictions == 0:
		delete(w.preemptors, uid)
	case !slices.Contains(budgets, e.budget):
		delete(w.preemptors, uid)
		w.vanished(e, "admitted without "+e.budget.Describe())
	default:
		e.admittedAt = w.clk.Now()
	}
}

// preemptorGone judges a preemptor that ended or was deleted.
func (w *world) preemptorGone(uid types.UID) {
	e := w.preemptors[uid]
	delete(w.preemptors, uid)
	evicted := w.evictedTold[uid]
	delete(w.evictedTold, uid)
	if e == nil || e.judged || e.evictions == 0 {
		return
	}
	switch {
	case e.admittedAt.IsZero():
		w.vanished(e, "gone before its admission")
	case !evicted && w.clk.Now().Sub(e.admittedAt) < w.cooldown:
		w.vanished(e, "gone within the cooldown after its admission")
	default:
		e.judged = true
	}
}

// churnMove is the tenant's churn in namespace ns: it creates a pod of the highest
// priority, which sets every value a budget may track, and at its next churn move
// there deletes it, whatever became of it (waiting, its victims evicted, admitted).
func (w *world) churnMove(ns string) {
	c := w.churn[ns]
	if c == nil {
		c = &mChurn{}
		w.churn[ns] = c
	}
	if c.pod != "" {
		if p := w.pods[c.pod]; p != nil {
			w.logf("churn: delete %s", p.obj.Name)
			w.deletePod(p)
		}
		c.pod = ""
		return
	}
	w.serial++
	name := fmt.Sprintf("churn%d", w.serial)
	mp := &mPod{informAt: -1}
	mp.obj = makePod(name).NS(ns).Created(w.step * 10).Priority(worldPriorityCeiling + 1).
		Req("cpu=1,memory=1Gi").Lim("cpu=1,memory=1Gi").Obj()
	mp.usage = PodUsage(mp.obj)
	w.pods[mp.obj.UID] = mp
	w.write(mp)
	w.view(mp)
	c.pod = mp.obj.UID
	if c.start.IsZero() {
		c.start = w.clk.Now()
	}
	w.logf("churn: create pod %s/%s cpu=1 priority %d", ns, name, worldPriorityCeiling+1)
}

// checkChurn bounds what the churn gets evicted: in each namespace, the churn pods that
// vanished after evictions were made for them are no more than the backoff lets one
// pod after another wait for since the churn began (or the core started). The k-th
// waits the cooldown doubled k-1 times, at most maxBackoff: other preemptors of the
// namespace that vanish only double it further, and it falls back only after a quiet
// maxBackoff, which costs as much as it saves.
func (w *world) checkChurn() error {
	if w.cooldown == 0 {
		return nil
	}
	for _, ns := range slices.Sorted(maps.Keys(w.churn)) {
		c := w.churn[ns]
		if c.start.IsZero() {
			continue
		}
		elapsed := w.clk.Now().Sub(c.start)
		if allowed := w.churnAllowed(elapsed); c.episodes > allowed {
			return fmt.Errorf("namespace %s: %d churn pods vanished after %d evictions were made for them in %s; the cooldown %s, doubling up to %s, allows %d",
				ns, c.episodes, c.evictions, elapsed, w.cooldown, w.maxBackoff, allowed)
		}
	}
	return nil
}

// churnAllowed is how many pods, one after another, can each wait out the backoff's
// cooldown within elapsed: the k-th waits the cooldown doubled k-1 times, at most
// maxBackoff.
func (w *world) churnAllowed(elapsed time.Duration) int {
	k := 0
	for d, sum := w.cooldown, w.cooldown; sum <= elapsed; k++ {
		d = min(2*d, max(w.cooldown, w.maxBackoff))
		sum += d
	}
	return k
}

// TestRandomizedEvictionChurn plays issue 46's eviction churn against the core and the
// model: ClusterBudget shared (4 CPU over every namespace) preempts lower priorities
// within it. Team B keeps 4 pods of 1 CPU and priority 0 running, as a Job does (one
// that is evicted or ends is created again, gated). The tenant in team A churns: it
// creates a pod of 1 CPU and the highest priority, deletes it (at random before its
// cooldown ends, once a victim was evicted for it, or after it was admitted), and
// creates the next. Time moves on by up to 1.5 s a step. After every step the model
// checks every preemption against the cooldown and the backoff, and the churn pods
// that vanished after evictions were made for them against what the backoff allows
// (checkChurn). The same worlds with the cooldown off are the baseline: there nearly
// every churn pod has a pod of team B evicted; the test fails unless the cooldown and
// its backoff cut the churn's evictions to at most a third of the baseline's.
func TestRandomizedEvictionChurn(t *testing.T) {
	seeds := min(*randomSeeds, 100)
	if testing.Short() {
		seeds = min(seeds, 20)
	}
	var on, off churnTally
	for seed := range seeds {
		if *randomSeed0 >= 0 && seed != *randomSeed0 {
			continue
		}
		for _, run := range []struct {
			cooldown, maxBackoff time.Duration
			tally                *churnTally
		}{{2 * time.Second, 32 * time.Second, &on}, {0, 0, &off}} {
			got, err := runChurnWorld(seed, 200, run.cooldown, run.maxBackoff)
			if err != nil {
				t.Fatalf("seed %d, cooldown %s (rerun with -args -quota.seed=%d): %v", seed, run.cooldown, seed, err)
			}
			run.tally.add(got)
		}
	}
	t.Logf("cooldown 2s up to 32s: %s", on)
	t.Logf("cooldown off:          %s", off)
	if off.evictions == 0 || on.episodes == 0 {
		t.Fatalf("the churn evicted nothing (%d evictions with the cooldown off, %d churn pods vanished after evictions with it on): the world does not play the attack", off.evictions, on.episodes)
	}
	if 3*on.evictions > off.evictions {
		t.Errorf("the churn had %d pods evicted with the cooldown, %d without: the cooldown and backoff do not cut it to a third", on.evictions, off.evictions)
	}
}

// churnTally counts what a churn did: its pods, those that vanished after evictions
// were made for them (episodes), and the evictions of team B's pods.
type churnTally struct{ pods, episodes, evictions int }

func (c *churnTally) add(o churnTally) {
	c.pods += o.pods
	c.episodes += o.episodes
	c.evictions += o.evictions
}

func (c churnTally) String() string {
	return fmt.Sprintf("%d churn pods, %d of them vanished after evictions; %d of team B's pods evicted", c.pods, c.episodes, c.evictions)
}

func runChurnWorld(seed, steps int, cooldown, maxBackoff time.Duration) (out churnTally, err error) {
	w := newWorldOf(seed, false)
	w.rng = rand.New(rand.NewPCG(uint64(seed), 0xc4a2))
	w.cooldown, w.maxBackoff = cooldown, maxBackoff
	w.q = w.newCore()
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\nlast events:\n%s", err, strings.Join(w.lastEvents(200), "\n"))
		}
	}()
	const tenant, victims = "team-a", "team-b"
	for _, ns := range []string{tenant, victims} {
		l := map[string]string{v1alpha1.EnabledLabel: "true"}
		w.namespaces[ns] = l
		w.q.SetNamespace(ns, l)
	}
	w.upsertBudget(Budget{Key: BudgetKey{Name: "shared"}, Hard: parseList("cpu=4"), NamespaceSelector: labels.Everything(),
		WithinBudget: v1alpha1.WithinBudgetLowerPriority})
	w.logf("preemption cooldown %s up to %s", w.cooldown, w.maxBackoff)
	for w.step = 0; w.step < steps; w.step++ {
		// Team B's Job keeps 4 pods.
		for n := w.countIn(victims); n < 4; n++ {
			w.serial++
			mp := &mPod{informAt: -1}
			mp.obj = makePod(fmt.Sprintf("b%d", w.serial)).NS(victims).Created(w.step).Priority(0).Req("cpu=1").Obj()
			mp.usage = PodUsage(mp.obj)
			w.pods[mp.obj.UID] = mp
			w.write(mp)
			w.view(mp)
			w.logf("create %s/%s", victims, mp.obj.Name)
		}
		// The tenant: a churn pod, deleted sooner once a victim was evicted for it.
		c := w.churn[tenant]
		switch {
		case c == nil || c.pod == "" || w.pods[c.pod] == nil:
			w.churnMove(tenant)
			if c == nil || c.pod == "" {
				w.churnMove(tenant) // it was gone: the move cleared it, this one creates
			}
			out.pods++
		case w.rng.IntN(8) == 0 || (w.preemptors[c.pod] != nil && w.preemptors[c.pod].evictions > 0 && w.rng.IntN(2) == 0):
			w.churnMove(tenant)
		}
		if p := w.pickPod(func(p *mPod) bool { return p.state == mRunning && p.obj.Namespace == victims }); p != nil && w.rng.IntN(10) == 0 {
			w.finish(p)
		}
		w.evict(false)
		w.clk.Step(time.Duration(w.rng.IntN(1500)) * time.Millisecond)
		if err := w.admitAndCheck(); err != nil {
			return out, err
		}
		for _, p := range w.pods {
			if p.state == mInflight {
				// Every ungate applies and is confirmed at once: this world is about evictions.
				p.doneAt, p.outcome, p.applies, p.bump, p.fence = w.step, Ungated, true, false, p.rv
			}
		}
		w.deliver()
	}
	out.evictions = w.evictions // all of team B's: the tenant's pods are never victims
	if c := w.churn[tenant]; c != nil {
		out.episodes = c.episodes
	}
	return out, nil
}

// countIn counts the pods of namespace ns the world has.
func (w *world) countIn(ns string) int {
	n := 0
	for _, p := range w.pods {
		if p.obj.Namespace == ns {
			n++
		}
	}
	return n
}
