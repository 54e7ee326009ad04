package quota

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// The model's independent answers for TestRandomizedAdmission: which budgets cover a
// pod, which admit, what each is charged, and which pods can never be admitted.

// cover is the model's coverage: direct budgets and all their existing ancestors.
func (w *world) cover(pod *corev1.Pod) []BudgetKey {
	var out []BudgetKey
	add := func(k BudgetKey) {
		for !slices.Contains(out, k) {
			out = append(out, k)
			b, ok := w.budgets[k]
			if !ok || b.Parent == "" {
				return
			}
			if _, ok := w.budgets[BudgetKey{Name: b.Parent}]; !ok {
				return
			}
			k = BudgetKey{Name: b.Parent}
		}
	}
	for _, k := range w.budgetKeys() {
		b := w.budgets[k]
		direct := false
		if k.IsCluster() {
			direct = b.NamespaceSelector != nil && b.NamespaceSelector.Matches(labels.Set(w.namespaces[pod.Namespace]))
		} else {
			direct = k.Namespace == pod.Namespace
		}
		if direct && (b.PodSelector == nil || b.PodSelector.Matches(labels.Set(pod.Labels))) {
			add(k)
		}
	}
	return out
}

// admitting is the model's effective Open: open, parent chain complete, acyclic, open.
func (w *world) admitting(k BudgetKey) bool {
	seen := map[BudgetKey]bool{}
	for {
		b, ok := w.budgets[k]
		if !ok || seen[k] || b.State == v1alpha1.StateClosed {
			return false
		}
		seen[k] = true
		if b.Parent == "" {
			return true
		}
		k = BudgetKey{Name: b.Parent}
	}
}

// charged is where the model charges an admitted or running pod: the budgets that
// cover it by the labels it was admitted with (whatever its labels are now), and those
// that admitted it (pinned) that exist.
func (w *world) charged(p *mPod) []BudgetKey {
	out := w.cover(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.obj.Namespace, Labels: p.chargeLabels}})
	for _, k := range p.pinned {
		if _, ok := w.budgets[k]; ok && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

func sameKeys(got []BudgetKey, want []BudgetKey) error {
	g := make([]string, 0, len(got))
	for _, k := range got {
		g = append(g, k.String())
	}
	wt := make([]string, 0, len(want))
	for _, k := range want {
		wt = append(wt, k.String())
	}
	slices.Sort(g)
	slices.Sort(wt)
	if !slices.Equal(g, wt) {
		return fmt.Errorf("%v, model says %v", g, wt)
	}
	return nil
}

// usedAll is the model's charge of every budget: admitted or running pods it covers.
func (w *world) usedAll() map[BudgetKey]corev1.ResourceList { return w.usedExcept(nil) }

// usedExcept is usedAll with the pods of gone left out.
func (w *world) usedExcept(gone map[types.UID]bool) map[BudgetKey]corev1.ResourceList {
	out := map[BudgetKey]corev1.ResourceList{}
	claims := map[BudgetKey]map[string]bool{} // a shared claim is charged once
	for _, uid := range slices.Sorted(mapsKeys(w.pods)) {
		p := w.pods[uid]
		if p.state == mGated || gone[uid] {
			continue
		}
		for _, k := range w.charged(p) {
			if out[k] == nil {
				out[k] = corev1.ResourceList{}
				claims[k] = map[string]bool{}
			}
			addTo(out[k], p.addsTo(k, claims))
			if p.claim != "" {
				claims[k][p.claim] = true
			}
		}
	}
	return out
}

// neverAdmissible: the pod (with its gated group mates) exceeds some covering budget's
// hard, or leaves unset a value one tracks, or its group has fewer members than its
// size, or (where uncovered pods are held) it or a gated member of its group is covered
// by no budget.
func (w *world) neverAdmissible(p *mPod) bool {
	unit := []*mPod{p}
	if p.groupName != "" {
		unit = nil
		size := 0
		for _, m := range w.pods {
			if m.obj.Namespace == p.obj.Namespace && m.groupName == p.groupName && (m.state != mGated || !uncountable(m.usage)) {
				unit = append(unit, m)
				size = max(size, m.groupSize)
			}
		}
		if len(unit) < size || w.compositeIncomplete(p) {
			return true
		}
	}
	// What holds one member holds the group; what must fit is what would go (below a
	// CompositePodGroup, the pods of the PodGroups that may go).
	all := unit
	unit = w.compositeUnit(p, unit)
	for _, m := range all {
		if w.hold && m.state == mGated && len(w.cover(m.obj)) == 0 {
			return true
		}
		if _, valid := w.startOpen(m.obj, w.clk.Now()); m.state == mGated && !valid {
			return true // its start annotations do not parse: held until fixed
		}
		if _, never := w.dependenciesReady(m.obj); m.state == mGated && never {
			return true // waits for a Job that failed, or for another namespace's
		}
	}
	if p.state == mGated && uncountable(p.usage) {
		return true // a value beyond what can be counted: never admitted, whatever fits
	}
	sums := map[BudgetKey]corev1.ResourceList{}
	for _, m := range unit {
		if m.state == mGated && w.leavesTrackedUnset(m.obj) {
			return true
		}
		for _, k := range w.cover(m.obj) {
			if sums[k] == nil {
				sums[k] = corev1.ResourceList{}
			}
			addTo(sums[k], m.usage)
		}
	}
	for k, sum := range sums {
		for name, h := range w.ceiling(k) {
			s := sum[name]
			if s.Cmp(h) > 0 {
				return true
			}
		}
	}
	// In an empty family the unit must fit in what its members lend, above their
	// guaranteed parts.
	for _, p := range w.borrowingParents(slices.Collect(maps.Keys(sums))) {
		for name := range sums[p] {
			if above, pool := w.familyAbove(p, name, sums); above.Cmp(pool) > 0 {
				return true
			}
		}
	}
	return false
}

// overCeiling is what the admitted and running pods use of every budget's ceiling
// (hard, plus its borrowingLimit in a family) that they use more of than it allows,
// by "budget: resource".
func (w *world) overCeiling() map[string]resource.Quantity {
	out := map[string]resource.Quantity{}
	used := w.usedAll()
	for _, k := range w.budgetKeys() {
		for name, c := range w.ceiling(k) {
			if u := used[k][name]; u.Cmp(c) > 0 {
				out[k.Describe()+": "+string(name)+" (ceiling "+c.String()+")"] = u
			}
		}
	}
	return out
}

func (w *world) modelCharged(k BudgetKey) []string {
	var out []string
	for _, p := range w.pods {
		if p.state != mGated && slices.Contains(w.charged(p), k) {
			out = append(out, p.obj.Name)
		}
	}
	slices.Sort(out)
	return out
}

// workConserving: after an Admit, no gated pod outside any group, covered only by open
// BestEffortFIFO budgets, fits in all of them now (unless it backs off), within their
// hard and in the families it belongs to. Capacity an
// event freed must not be left unused because a wake was missed.
func (w *world) workConserving() error {
	usedAll := w.usedAll()
	charged := w.claimsCharged()
	for _, uid := range slices.Sorted(mapsKeys(w.pods)) {
		p := w.pods[uid]
		if p.state != mGated || p.groupName != "" {
			continue
		}
		if code, _ := w.q.Reader().WaitCode(uid); code == CodeBackoff {
			continue
		}
		if open, _ := w.startOpen(p.obj, w.clk.Now()); !open {
			continue // its start rule holds it
		}
		if ready, _ := w.dependenciesReady(p.obj); !ready {
			continue // a Job it waits for holds it
		}
		cover := w.cover(p.obj)
		fits := len(cover) > 0 && !w.leavesTrackedUnset(p.obj) && !uncountable(p.usage)
		for _, k := range cover {
			if !fits {
				break
			}
			b := w.budgets[k]
			if b.Strategy == v1alpha1.StrictFIFO || !w.admitting(k) {
				fits = false
				break
			}
			hard, _ := NormalizeHard(b.Hard)
			for name, h := range hard {
				sum := usedAll[k][name].DeepCopy()
				sum.Add(p.addsTo(k, charged)[name])
				if sum.Cmp(h) > 0 {
					fits = false
				}
			}
		}
		// It fits within every hard, so it borrows nothing: its families must still have
		// room above their guaranteed parts for it (lenders do not get what they lent
		// back while borrowers run).
		with := map[BudgetKey]corev1.ResourceList{}
		for k, u := range usedAll {
			with[k] = u
		}
		for _, k := range cover {
			sum := corev1.ResourceList{}
			addTo(sum, usedAll[k])
			addTo(sum, p.addsTo(k, charged))
			with[k] = sum
		}
		for _, f := range w.borrowingParents(cover) {
			for name := range p.usage {
				if above, pool := w.familyAbove(f, name, with); above.Cmp(pool) > 0 {
					fits = false
				}
			}
		}
		if fits {
			r, _ := w.q.Reader().WaitReason(uid)
			return fmt.Errorf("pod %s/%s fits its open BestEffortFIFO budgets %v but waits: %s: %s", p.obj.Namespace, p.obj.Name, cover, r.Code, r.Message)
		}
	}
	return nil
}

// ceiling is the model's limit of a budget: hard, plus its borrowingLimit when its
// parent exists (restricted to what hard limits).
func (w *world) ceiling(k BudgetKey) corev1.ResourceList {
	b := w.budgets[k]
	hard, _ := NormalizeHard(b.Hard)
	if _, ok := w.budgets[BudgetKey{Name: b.Parent}]; b.Parent == "" || !ok {
		return hard
	}
	borrow, _ := NormalizeHard(b.BorrowingLimit)
	out := corev1.ResourceList{}
	for name, h := range hard {
		c := h.DeepCopy()
		c.Add(borrow[name])
		out[name] = c
	}
	return out
}

// family is the model's children of parent p, and whether one of them borrows.
func (w *world) family(p BudgetKey) (children []BudgetKey, borrows bool) {
	for _, k := range w.budgetKeys() {
		if b := w.budgets[k]; b.Parent != "" && b.Parent == p.Name && p.IsCluster() {
			children = append(children, k)
			hard, _ := NormalizeHard(b.Hard)
			borrow, _ := NormalizeHard(b.BorrowingLimit)
			for name := range borrow {
				if _, ok := hard[name]; ok {
					borrows = true
				}
			}
		}
	}
	return children, borrows
}

// familyAbove is, for resource r of parent p's family, what the children use above
// their guaranteed parts (hard minus what they lend) with used, and what they lend.
func (w *world) familyAbove(p BudgetKey, r corev1.ResourceName, used map[BudgetKey]corev1.ResourceList) (above, pool resource.Quantity) {
	children, _ := w.family(p)
	for _, c := range children {
		hard, _ := NormalizeHard(w.budgets[c].Hard)
		h, ok := hard[r]
		if !ok {
			continue
		}
		lend, _ := NormalizeHard(w.budgets[c].LendingLimit)
		lendable := h.DeepCopy()
		if l, ok := lend[r]; ok && l.Cmp(h) < 0 {
			lendable = l.DeepCopy()
		}
		pool.Add(lendable)
		u := used[c][r].DeepCopy()
		u.Sub(h)
		u.Add(lendable)
		if u.Sign() > 0 {
			above.Add(u)
		}
	}
	return above, pool
}

// borrowingParents are the existing parents of the budgets in keys whose family
// borrows.
func (w *world) borrowingParents(keys []BudgetKey) []BudgetKey {
	var out []BudgetKey
	for _, k := range keys {
		b := w.budgets[k]
		if b.Parent == "" {
			continue
		}
		p := BudgetKey{Name: b.Parent}
		if _, ok := w.budgets[p]; !ok || slices.Contains(out, p) {
			continue
		}
		if _, borrows := w.family(p); borrows {
			out = append(out, p)
		}
	}
	return out
}
