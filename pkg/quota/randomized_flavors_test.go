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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

var randomFlavorSeeds = flag.Int("quota.flavorseeds", 200, "seeds for TestRandomizedFlavors; -short runs 30")

// TestRandomizedFlavors drives the core with random flavor events (pods that select a
// flavor, ask for other labels or none; gated pods that narrow their node selector;
// budgets whose flavors, order and quota change; Flavor objects created and deleted;
// restarts whose pods arrive before or after the Flavors; priorities, budgets that
// preempt lower ones and stop on a flavor to preempt, victims evicted as the controller
// does) in a family of two Budgets under a ClusterBudget, and checks after every step,
// against a model of its own:
//
//   - no pod is admitted on a flavor whose labels its node selector contradicts, or on
//     another flavor than the one it selects, or on a Flavor that does not exist;
//   - a pod admitted on a flavor fits there: every budget that covers it has room for
//     it on its flavor-less hard and on that flavor's hard;
//   - fungibility order: every flavor before it in its flavored budget's order that
//     could take it had no room for it, and a budget that waits for its preferred
//     flavor admits on no other;
//   - a victim is a running pod, preempted for a gated one, of lower priority when in
//     the same budget;
//   - accounting: every budget's used, flavor-less and per flavor, is the model's exact
//     sum (Quantity arithmetic) over running pods, each on every flavor it reaches as
//     it runs (its selector, affinity and tolerations, with nested flavors: gpu-spot's
//     labels contain gpu's);
//   - containment: no step of the tenant's alone (pods created with selectors,
//     affinity and tolerations of its choosing, gated pods narrowing their selector,
//     pods ending, restarts) takes a budget over its hard on a flavor or overall; only
//     an administrator's move (a budget's spec, a Flavor created or deleted) may;
//   - must-specify: no pod that leaves its cpu request unset is admitted while a budget
//     that covers it tracks requests.cpu, on its hard or on any of its flavors' (such
//     a pod waits with MustSpecifyResources);
//   - liveness: once running pods end, no gated pod is left that fits on a flavor
//     that can take it (its preferred one, when its budget waits for that), or without
//     one when none applies.
func TestRandomizedFlavors(t *testing.T) {
	n := *randomFlavorSeeds
	if testing.Short() {
		n = min(n, 30)
	}
	for seed := range n {
		w := newFlavorWorld(seed)
		if err := w.run(120); err != nil {
			t.Fatalf("seed %d: %v\nlast events:\n%s", seed, err, strings.Join(w.log[max(0, len(w.log)-30):], "\n"))
		}
	}
}

// fPod is a pod of the flavor world: its view as the informer shows it.
type fPod struct {
	view    Pod
	running bool
	// cpuUnset: its container leaves its cpu request unset (a BestEffort pod, when it
	// asks for no GPU either), which ResourceQuota's must-specify rule refuses under a
	// budget that tracks requests.cpu, on its hard or on one of its flavors'.
	cpuUnset bool
}

type flavorWorld struct {
	rng      *rand.Rand
	q        *AdmissionQueue
	universe []Flavor
	flavors  map[string]Flavor // the Flavor objects that exist
	// admin is set by a step that an administrator takes (a budget's spec, a Flavor):
	// only such a step may take a budget over its hard.
	admin    bool
	budgets  map[BudgetKey]Budget
	pods     map[types.UID]*fPod
	next, rv int
	log      []string
}

var (
	flavorOrg = BudgetKey{Name: "org"}
	flavorA   = BudgetKey{Namespace: "team-a", Name: "a"}
	flavorB   = BudgetKey{Namespace: "team-b", Name: "b"}
)

func newFlavorWorld(seed int) *flavorWorld {
	w := &flavorWorld{
		rng:      rand.New(rand.NewPCG(uint64(seed), 31)),
		universe: []Flavor{h100, a100, spot, gpuPool, gpuSpot},
		flavors:  map[string]Flavor{},
		budgets:  map[BudgetKey]Budget{},
		pods:     map[types.UID]*fPod{},
	}
	w.q, _ = newTestQueue()
	for _, f := range w.universe {
		if w.rng.IntN(4) > 0 {
			w.setFlavor(f)
		}
	}
	for _, k := range []BudgetKey{flavorOrg, flavorA, flavorB} {
		w.setBudget(k)
	}
	return w
}

func (w *flavorWorld) logf(format string, args ...any) {
	w.log = append(w.log, fmt.Sprintf(format, args...))
}

func (w *flavorWorld) setFlavor(f Flavor) {
	w.admin = true
	w.flavors[f.Name] = f
	w.q.UpsertFlavor(f)
	w.logf("flavor %s created", f.Name)
}

// setBudget gives a budget a random spec: some of the flavors in a random order, each
// with GPUs and maybe CPUs, and maybe a flavor-less hard.
func (w *flavorWorld) setBudget(k BudgetKey) {
	b := makeBudget(k.Namespace, k.Name)
	if k != flavorOrg {
		b.Parent("org")
	}
	scale := int64(1)
	if k == flavorOrg {
		scale = 2
	}
	for _, i := range w.rng.Perm(len(w.universe)) {
		if w.rng.IntN(3) == 0 {
			continue
		}
		hard := "nvidia.com/gpu=" + strconv.FormatInt(scale*int64(w.rng.IntN(4)), 10)
		if w.rng.IntN(2) == 0 {
			hard += ",cpu=" + strconv.FormatInt(scale*int64(w.rng.IntN(6)), 10)
		}
		b.flavor(w.universe[i].Name, hard, "")
	}
	if w.rng.IntN(2) == 0 {
		b.Hard("nvidia.com/gpu=" + strconv.FormatInt(scale*int64(2+w.rng.IntN(4)), 10))
	}
	b.b.Fungibility.WaitForPreferred = k != flavorOrg && w.rng.IntN(4) == 0
	b.b.Fungibility.StopToPreempt = k != flavorOrg && w.rng.IntN(3) == 0
	if k != flavorOrg && w.rng.IntN(2) == 0 {
		b.PreemptLowerPriority()
	}
	w.budgets[k] = b.Obj()
	w.admin = true
	w.q.UpsertBudget(b.Obj())
	w.logf("budget %s: hard %v, flavors %v, fungibility %+v, preempts lower priorities %v", k, b.b.Hard, b.b.Flavors, b.b.Fungibility, b.b.WithinBudget != "")
}

func (w *flavorWorld) newPod() {
	w.next++
	ns := []string{"team-a", "team-b"}[w.rng.IntN(2)]
	req := fmt.Sprintf("nvidia.com/gpu=%d,cpu=%d", w.rng.IntN(3), w.rng.IntN(3))
	cpuUnset := w.rng.IntN(6) == 0
	if cpuUnset {
		req = fmt.Sprintf("nvidia.com/gpu=%d", w.rng.IntN(2))
	}
	view := makePod("p" + strconv.Itoa(w.next)).NS(ns).Created(w.next).Priority(int32(w.rng.IntN(3))).Req(req).Pod()
	view.NodeSelector = w.randomSelector()
	view.NodeAffinity = w.randomAffinity()
	view.Tolerations = w.randomTolerations()
	w.rv++
	view.ResourceVersion = strconv.Itoa(w.rv)
	w.pods[view.UID] = &fPod{view: view, cpuUnset: cpuUnset}
	w.q.UpsertPod(view)
	w.logf("pod %s/%s created: %s, priority %d, selector %v, affinity %v, tolerations %v", ns, view.Name, req, view.Priority, view.NodeSelector, view.NodeAffinity, view.Tolerations)
}

func (w *flavorWorld) randomSelector() map[string]string {
	switch w.rng.IntN(12) {
	case 0, 1:
		return maps.Clone(w.universe[w.rng.IntN(len(w.universe))].NodeLabels)
	case 2:
		return map[string]string{"gpu": "t4"}
	case 3:
		return map[string]string{"zone": "z1"}
	case 4:
		return map[string]string{"spot": "true"} // with a flavor on {pool: gpu}: gpu-spot's nodes
	}
	return nil
}

// randomAffinity is a required node affinity a tenant may write: none mostly, or terms
// that ask for one of several GPU models, or keep off spot nodes.
func (w *flavorWorld) randomAffinity() *corev1.NodeSelector {
	req := func(k string, op corev1.NodeSelectorOperator, v ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: k, Operator: op, Values: v}
	}
	switch w.rng.IntN(10) {
	case 0:
		return &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{req("gpu", corev1.NodeSelectorOpIn, "h100", "a100")}}}}
	case 1:
		return &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{req("spot", corev1.NodeSelectorOpNotIn, "true")}}}}
	case 2:
		return &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{req("pool", corev1.NodeSelectorOpIn, "gpu"), req("spot", corev1.NodeSelectorOpIn, "true")}},
			{MatchExpressions: []corev1.NodeSelectorRequirement{req("gpu", corev1.NodeSelectorOpIn, "a100")}}}}
	}
	return nil
}

// randomTolerations are a tenant's tolerations: none mostly, or h100's taint, or every
// taint.
func (w *flavorWorld) randomTolerations() []corev1.Toleration {
	switch w.rng.IntN(8) {
	case 0:
		return slices.Clone(h100.Tolerations)
	case 1:
		return []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	case 2:
		return slices.Clone(gpuSpot.Tolerations)
	}
	return nil
}

func (w *flavorWorld) pick(running bool) *fPod {
	var out []*fPod
	for _, uid := range slices.Sorted(maps.Keys(w.pods)) {
		if p := w.pods[uid]; p.running == running {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out[w.rng.IntN(len(out))]
}

func (w *flavorWorld) run(steps int) error {
	for range steps {
		over := w.overHard()
		w.admin = false
		switch r := w.rng.IntN(20); {
		case r < 8:
			w.newPod()
		case r < 12:
			if p := w.pick(true); p != nil {
				delete(w.pods, p.view.UID)
				w.q.DeletePod(p.view.UID)
				w.logf("pod %s ended", p.view.Name)
			}
		case r < 13:
			if p := w.pick(false); p != nil {
				delete(w.pods, p.view.UID)
				w.q.DeletePod(p.view.UID)
				w.logf("gated pod %s deleted", p.view.Name)
			}
		case r < 14:
			if p := w.pick(false); p != nil {
				w.rv++
				p.view.NodeSelector = w.randomSelector()
				p.view.ResourceVersion = strconv.Itoa(w.rv)
				w.q.UpsertPod(p.view)
				w.logf("gated pod %s: selector now %v", p.view.Name, p.view.NodeSelector)
			}
		case r < 16:
			w.setBudget([]BudgetKey{flavorOrg, flavorA, flavorB}[w.rng.IntN(3)])
		case r < 18:
			f := w.universe[w.rng.IntN(len(w.universe))]
			if _, ok := w.flavors[f.Name]; ok {
				w.admin = true
				delete(w.flavors, f.Name)
				w.q.DeleteFlavor(f.Name)
				w.logf("flavor %s deleted", f.Name)
			} else {
				w.setFlavor(f)
			}
		case r < 19:
			w.restart()
		default:
		}
		if err := w.admitAndCheck(); err != nil {
			return err
		}
		if !w.admin {
			for k, u := range w.overHard() {
				if before, was := over[k]; !was || u.Cmp(before) > 0 {
					return fmt.Errorf("%s: %s used (%s before) after a step of the tenant's alone", k, u.String(), before.String())
				}
			}
		}
	}
	for _, p := range slices.Collect(maps.Values(w.pods)) {
		if p.running {
			delete(w.pods, p.view.UID)
			w.q.DeletePod(p.view.UID)
		}
	}
	w.logf("calm: every running pod ended")
	for range 3 {
		if err := w.admitAndCheck(); err != nil {
			return err
		}
	}
	return w.checkLiveness()
}

// restart starts a new core and tells it the world in an order a restarted manager's
// informers may: namespaces, then pods and Flavors in either order, budgets between.
func (w *flavorWorld) restart() {
	w.q, _ = newTestQueue()
	flavorsFirst := w.rng.IntN(2) == 0
	if flavorsFirst {
		for _, n := range slices.Sorted(maps.Keys(w.flavors)) {
			w.q.UpsertFlavor(w.flavors[n])
		}
	}
	for _, k := range []BudgetKey{flavorOrg, flavorA, flavorB} {
		w.q.UpsertBudget(w.budgets[k])
	}
	for _, uid := range slices.Sorted(maps.Keys(w.pods)) {
		w.q.UpsertPod(w.pods[uid].view)
	}
	if !flavorsFirst {
		for _, n := range slices.Sorted(maps.Keys(w.flavors)) {
			w.q.UpsertFlavor(w.flavors[n])
		}
	}
	w.logf("restart (flavors first: %v)", flavorsFirst)
}
