package quota

// What happens in the randomized world: budgets, pods and namespaces change, managers fail over,
// and the API server delivers late.

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

func (w *world) randomHard() corev1.ResourceList {
	hard := corev1.ResourceList{}
	if w.rng.IntN(5) > 0 {
		hard["cpu"] = *resourceMilli(int64(1000 * (1 + w.rng.IntN(8))))
	}
	if w.rng.IntN(3) == 0 {
		hard["pods"] = *resourceCount(int64(1 + w.rng.IntN(6)))
	}
	if w.rng.IntN(3) == 0 {
		hard[worldDevices] = *resourceCount(int64(2 + w.rng.IntN(5)))
	}
	// Values ResourceQuota requires every container to set (randomized_unset_test.go).
	if w.rng.IntN(6) == 0 {
		hard["memory"] = resource.MustParse(fmt.Sprintf("%dGi", 2+w.rng.IntN(6)))
	}
	if w.rng.IntN(8) == 0 {
		hard["limits.cpu"] = *resourceMilli(int64(1000 * (2 + w.rng.IntN(8))))
	}
	// A limit on limits.memory, which the tenant's huge limits test (randomResources).
	if w.tenant && w.rng.IntN(6) == 0 {
		hard["limits.memory"] = resource.MustParse(fmt.Sprintf("%dGi", 8+w.rng.IntN(8)))
	}
	return hard
}

func (w *world) randomClusterBudget() {
	name := fmt.Sprintf("c%d", w.rng.IntN(4))
	b := Budget{Key: BudgetKey{Name: name}, Hard: w.randomHard()}
	switch w.rng.IntN(4) {
	case 0:
		b.NamespaceSelector = labels.Everything()
	case 1:
		b.NamespaceSelector = labels.SelectorFromSet(labels.Set{"tier": "gold"})
	case 2:
		// A parent as tall as its children together: lenders get their hard back by
		// reclaim, not by the parent's limit.
		b.Hard = corev1.ResourceList{"cpu": *resourceMilli(int64(1000 * (12 + w.rng.IntN(9))))}
	}
	if w.rng.IntN(2) == 0 {
		b.Parent = fmt.Sprintf("c%d", w.rng.IntN(4)) // may be missing, or loop
		w.borrowing(&b)
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
		w.borrowing(&b)
	}
	w.upsertBudget(w.decorate(b))
}

// borrowing gives a budget with a parent a borrowingLimit, a lendingLimit, both or
// neither.
func (w *world) borrowing(b *Budget) {
	if w.rng.IntN(2) == 0 {
		b.BorrowingLimit = corev1.ResourceList{"cpu": *resourceMilli(int64(500 * (1 + w.rng.IntN(8))))}
	}
	if w.rng.IntN(3) == 0 {
		b.LendingLimit = corev1.ResourceList{"cpu": *resourceMilli(int64(500 * w.rng.IntN(8)))}
	}
}

func (w *world) decorate(b Budget) Budget {
	if w.rng.IntN(2) == 0 {
		b.Strategy = v1alpha1.StrictFIFO
	}
	if w.rng.IntN(6) == 0 {
		b.State = v1alpha1.StateClosed
	}
	w.randomPreemption(&b)
	return b
}

func (w *world) upsertBudget(b Budget) {
	b = w.withWindows(b)
	w.budgets[b.Key] = b
	w.q.UpsertBudget(b)
	w.logf("upsert %s hard=%v borrow=%v lend=%v parent=%q strategy=%s state=%s reclaim=%q within=%q weight=%v reclaimAfter=%q", b.Key.Describe(), b.Hard, b.BorrowingLimit, b.LendingLimit, b.Parent, b.Strategy, b.State, b.Reclaim, b.WithinBudget, b.Weight, b.ReclaimAfter)
}

func (w *world) randomPod(gated bool) {
	w.serial++
	name := fmt.Sprintf("p%d", w.serial)
	ns := worldNamespaces[w.rng.IntN(len(worldNamespaces))]
	cpu := int64(500 * (1 + w.rng.IntN(6)))
	if w.rng.IntN(25) == 0 {
		cpu = 100000
	}
	b := makePod(name).NS(ns).Created(w.step*10 + w.rng.IntN(10)).Priority(int32(w.rng.IntN(worldPriorityCeiling + 2)))
	resources := w.randomResources(b, cpu)
	if w.rng.IntN(3) == 0 {
		b.Label("app", "web")
	}
	mp := &mPod{informAt: -1}
	if w.rng.IntN(4) == 0 {
		mp.groupName = fmt.Sprintf("g%d", w.rng.IntN(3))
		mp.groupSize = 1 + w.rng.IntN(3)
		b.Group(mp.groupName, mp.groupSize)
	}
	if w.starts && w.rng.IntN(6) == 0 {
		w.randomStart(b)
	}
	if w.starts && w.rng.IntN(5) == 0 {
		w.randomWaitFor(b)
	}
	if w.starts && gated && w.rng.IntN(6) == 0 {
		w.randomPodGroup(b, mp, ns)
	}
	if !gated {
		b.Ungated()
		mp.state = mRunning
		mp.preexisted = true
		w.admin = true // a pod that runs without passing a queue: created before opt-in
	}
	mp.obj = b.Obj()
	mp.usage = PodUsage(mp.obj)
	w.randomClaim(mp)
	w.pods[mp.obj.UID] = mp
	w.write(mp)
	if !gated {
		mp.pinned = w.cover(mp.obj) // first seen running: pinned where it is covered
		mp.chargeLabels = maps.Clone(mp.obj.Labels)
	}
	w.view(mp)
	w.logf("create pod %s/%s %s gated=%v group=%s/%d podgroup=%q labels=%v claim=%q annotations=%v", ns, name, resources, gated, mp.groupName, mp.groupSize, mp.podGroup, mp.obj.Labels, mp.claim, mp.obj.Annotations)
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
		// The tenant relabels one of its pods, gated or running.
		if p := w.pickPod(nil); p != nil {
			w.toggleLabel(p)
		}
	case r < 67 && w.tenant:
		w.swapClaim()
	case r < 69 && w.tenant:
		w.churnMove(worldNamespaces[w.rng.IntN(len(worldNamespaces))])
	case r < 72:
		w.admin = true
		w.randomBudget()
	case r < 77:
		w.admin = true
		w.randomClusterBudget()
	case r < 80:
		w.admin = true
		keys := w.budgetKeys()
		if len(keys) > 0 {
			k := keys[w.rng.IntN(len(keys))]
			delete(w.budgets, k)
			w.forgetWindows(k)
			w.q.DeleteBudget(k)
			w.logf("delete %s", k.Describe())
		}
	case r < 83:
		w.admin = true
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
	case r < 99:
		w.evict(false)
	case w.starts && w.rng.IntN(2) == 0:
		w.finishJob()
	case w.starts:
		w.changePodGroup()
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
	w.q.UpsertPod(NewPod(p.obj, v1alpha1.SchedulingGate, w.clk.Now()))
	w.logf("finish %s", p.obj.Name)
	w.preemptorGone(p.obj.UID)
}

func (w *world) deletePod(p *mPod) {
	delete(w.pods, p.obj.UID)
	w.q.DeletePod(p.obj.UID)
	w.logf("delete pod %s (state %d)", p.obj.Name, p.state)
	w.preemptorGone(p.obj.UID)
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
	names := make([]string, len(p.admittedBy))
	for i, k := range p.admittedBy {
		names[i] = k.String()
	}
	if p.obj.Annotations == nil {
		p.obj.Annotations = map[string]string{}
	}
	p.obj.Annotations[v1alpha1.AdmittedByAnnotation] = strings.Join(names, ",")
	p.obj.Annotations[v1alpha1.AdmittedLabelsAnnotation] = AdmittedLabelsText(p.admittedLabels)
	w.write(p)
	p.informAt = w.step + w.rng.IntN(3)
	w.logf("ungated %s rv=%d", p.obj.Name, p.rv)
	return true
}

// parseKey reads an admitted-by entry: namespace/name or a ClusterBudget's name.
func parseKey(s string) BudgetKey {
	if ns, name, ok := strings.Cut(s, "/"); ok {
		return BudgetKey{Namespace: ns, Name: name}
	}
	return BudgetKey{Name: s}
}

// deliver reports due patch outcomes and informer views, and late namespace events.
func (w *world) deliver() {
	w.deliverNamespaces(30)
	for _, uid := range slices.Sorted(mapsKeys(w.pods)) {
		p := w.pods[uid]
		if p.state == mInflight && p.doneAt <= w.step {
			if p.outcome == Gone {
				w.q.Done(uid, Gone, "")
				w.logf("done %s gone", p.obj.Name)
				delete(w.pods, uid)
				w.preemptorGone(uid)
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
			switch {
			case report == Ungated:
				p.state = mRunning
			case report == NotSent && !p.retried:
				// Nothing was sent and no earlier attempt may still apply: the charge is
				// given back and the pod waits again. The accounting check holds the core
				// to it: the model no longer charges the pod.
				p.state = mGated
				p.pinned, p.chargeLabels = nil, nil
				w.notSent.given++
			default:
				// Unknown, or NotSent on a retry: an earlier attempt may still apply, so
				// the charge stays until a view settles it (sync).
				p.state = mUnresolved
				if report == NotSent {
					w.notSent.kept++
				}
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

// worldNotSent draws which attempts the controller does not send, from a stream of its
// own so that the other draws of a seed stay as they were, and counts what the core
// did with them.
type worldNotSent struct {
	rng *rand.Rand
	// given: reported NotSent on a first attempt, the charge given back; kept: on a
	// retry of an attempt whose outcome was not known, the charge kept.
	given, kept int
}

// draw reports whether this attempt is not sent: one in sixteen.
func (n *worldNotSent) draw() bool { return n != nil && n.rng.IntN(16) == 0 }
