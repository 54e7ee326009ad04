package quota

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// TestRandomizedReclaim runs one family under a random load and checks, after every
// step, the promise of borrowing with reclaim: three teams of hard cpu=4 under a parent
// of cpu=12, two of them borrowing up to 8 (with random fair-sharing weights); pods of 1 or 2 cpu and random priority (3, a "system" class, clamped at the ceiling 2)
// arrive, finish and are evicted as the core decides (some evictions blocked for a
// while, as by a PodDisruptionBudget). After every step:
//
//   - the parent is never over its hard, and no team over its hard plus borrowingLimit;
//   - every preemption passes the model's checks (checkPreemptions);
//   - a team gets its guaranteed share in bounded time: a gated pod whose team's
//     running pods and the pods ahead of it in its queue leave room for it within the
//     team's hard, and keep leaving it, is admitted within maxReclaimSteps steps, plus
//     its preemption cooldown (a second a step; the backoff at most doubles it up to
//     the world's maxBackoff).
func TestRandomizedReclaim(t *testing.T) {
	seeds := *randomSeeds
	if testing.Short() {
		seeds = min(seeds, 30)
	}
	for seed := range seeds {
		if *randomSeed0 >= 0 && seed != *randomSeed0 {
			continue
		}
		if err := runReclaimWorld(seed, 120); err != nil {
			t.Fatalf("seed %d (rerun with -args -quota.seed=%d -quota.seeds=%d): %v", seed, seed, seed+1, err)
		}
	}
}

// maxReclaimSteps bounds how long an entitled pod may stay gated: one step to decide,
// then evictions blocked (one chance in three each step) a few steps in a row.
const maxReclaimSteps = 15

var reclaimTeams = []string{"team-a", "team-b", "team-c"}

func runReclaimWorld(seed, steps int) (err error) {
	w := newWorld(seed)
	w.rng = rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\nlast events:\n%s", err, strings.Join(w.lastEvents(300), "\n"))
		}
	}()
	for _, ns := range reclaimTeams {
		l := map[string]string{v1alpha1.EnabledLabel: "true"}
		w.namespaces[ns] = l
		w.q.SetNamespace(ns, l)
	}
	w.upsertBudget(Budget{Key: BudgetKey{Name: "org"}, Hard: parseList("cpu=12")})
	for i, ns := range reclaimTeams {
		b := Budget{Key: BudgetKey{Namespace: ns, Name: "quota"}, Hard: parseList("cpu=4"), Parent: "org"}
		if i > 0 {
			b.BorrowingLimit = parseList("cpu=8")
			weight := resource.MustParse([]string{"0", "1", "2"}[w.rng.IntN(3)])
			b.Weight = &weight
		}
		w.upsertBudget(b)
	}
	entitledSince := map[types.UID]int{}
	// A second a step: a pod waits out its preemption cooldown (the world's, as the seed
	// says) in at most as many steps as the longest cooldown has seconds.
	bound := maxReclaimSteps + int(max(w.cooldown, w.maxBackoff)/time.Second)
	for w.step = 0; w.step < steps; w.step++ {
		w.clk.Step(time.Second)
		for range 1 + w.rng.IntN(3) {
			switch r := w.rng.IntN(10); {
			case r < 5:
				w.serial++
				ns := reclaimTeams[w.rng.IntN(len(reclaimTeams))]
				mp := &mPod{informAt: -1}
				mp.obj = makePod(fmt.Sprintf("p%d", w.serial)).NS(ns).Created(w.step*10 + w.rng.IntN(10)).
					Priority(int32(w.rng.IntN(worldPriorityCeiling + 2))).Req(fmt.Sprintf("cpu=%d", 1+w.rng.IntN(2))).Obj()
				mp.usage = PodUsage(mp.obj)
				w.pods[mp.obj.UID] = mp
				w.write(mp)
				w.view(mp)
				cpu := mp.usage["requests.cpu"]
				w.logf("create %s/%s cpu=%s prio=%d", ns, mp.obj.Name, cpu.String(), *mp.obj.Spec.Priority)
			case r < 7:
				if p := w.pickPod(func(p *mPod) bool { return p.state == mRunning }); p != nil {
					w.finish(p)
				}
			default:
				w.evict(false)
			}
		}
		if err := w.admitAndCheck(); err != nil {
			return err
		}
		for _, p := range w.pods {
			if p.state == mInflight {
				// Every ungate applies and is confirmed at once: this world is about quota.
				p.doneAt, p.outcome, p.applies, p.bump, p.fence = w.step, Ungated, true, false, p.rv
			}
		}
		w.deliver()
		used := w.usedAll()
		if u, h := used[BudgetKey{Name: "org"}]["requests.cpu"], parseList("cpu=12")["cpu"]; u.Cmp(h) > 0 {
			return fmt.Errorf("the parent uses %s cpu, over its hard %s", u.String(), h.String())
		}
		now := entitled(w, used)
		if err := overEvicted(w, used); err != nil {
			return err
		}
		for uid := range entitledSince {
			if !slices.Contains(now, uid) {
				delete(entitledSince, uid) // pods of higher priority came first
			}
		}
		for _, uid := range now {
			if _, ok := entitledSince[uid]; !ok {
				entitledSince[uid] = w.step
			}
		}
		for _, uid := range slices.Sorted(mapsKeys(entitledSince)) {
			since := entitledSince[uid]
			p := w.pods[uid]
			if p == nil || p.state != mGated {
				delete(entitledSince, uid)
				continue
			}
			if w.step-since > bound {
				r, _ := w.q.Reader().WaitReason(uid)
				return fmt.Errorf("%s/%s fits in its team's own hard since step %d, still gated at step %d: %s: %s", p.obj.Namespace, p.obj.Name, since, w.step, r.Code, r.Message)
			}
		}
	}
	return nil
}

// overEvicted checks that the victims still to go make room for no more than the
// gated pods entitled to their team's share ask for, once the victims are gone, give or
// take one victim (a victim of 2 CPU may make room for a pod of 1): reclaim evicts only
// what is needed.
func overEvicted(w *world, used map[BudgetKey]corev1.ResourceList) error {
	var victims, demand resource.Quantity
	var largest resource.Quantity
	after := map[BudgetKey]corev1.ResourceList{}
	for k, u := range used {
		after[k] = u.DeepCopy()
	}
	for _, uid := range slices.Concat(w.evicting, w.unheard) {
		if p := w.pods[uid]; p != nil && w.q.PreemptionNeeded(uid) {
			q := p.usage["requests.cpu"]
			victims.Add(q)
			if q.Cmp(largest) > 0 {
				largest = q.DeepCopy()
			}
			for _, k := range w.charged(p) {
				subtractFrom(after[k], p.usage)
			}
		}
	}
	for _, uid := range entitled(w, after) {
		demand.Add(w.pods[uid].usage["requests.cpu"])
	}
	victims.Sub(largest)
	if victims.Cmp(demand) >= 0 && !victims.IsZero() {
		return fmt.Errorf("victims still to go free %s CPU beyond the largest, for %s CPU that entitled pods wait for", victims.String(), demand.String())
	}
	return nil
}

// entitled lists the gated pods each team's own hard has room for: in admission order
// (priority, then creation), after what the team runs and the gated pods before it
// that fit (BestEffortFIFO: a pod too big for what is left does not hold back those
// behind it).
func entitled(w *world, used map[BudgetKey]corev1.ResourceList) []types.UID {
	var out []types.UID
	for _, ns := range reclaimTeams {
		var gated []*mPod
		for _, p := range w.pods {
			if p.obj.Namespace == ns && p.state == mGated {
				gated = append(gated, p)
			}
		}
		slices.SortFunc(gated, func(a, b *mPod) int {
			return cmp.Or(cmp.Compare(b.priority(), a.priority()),
				a.obj.CreationTimestamp.Compare(b.obj.CreationTimestamp.Time), cmp.Compare(a.obj.Name, b.obj.Name))
		})
		sum := used[BudgetKey{Namespace: ns, Name: "quota"}]["requests.cpu"]
		for _, p := range gated {
			sum.Add(p.usage["requests.cpu"])
			if sum.Cmp(resource.MustParse("4")) > 0 {
				sum.Sub(p.usage["requests.cpu"]) // BestEffortFIFO: the pods behind it may fit
				continue
			}
			out = append(out, p.obj.UID)
		}
	}
	return out
}
