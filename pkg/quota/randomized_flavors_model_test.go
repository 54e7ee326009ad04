package quota

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// The flavor world's model: what covers a pod, what each budget limits, what running
// pods use, and which flavors may take a pod, written from the documented rules
// (docs/budgets.md, "Flavors") without the core's code.

// mQty is a pod's or a limit's amounts by quota name, in milli-units.
type mQty map[corev1.ResourceName]int64

func mQtyOf(l corev1.ResourceList) mQty {
	out := mQty{}
	for r, q := range l {
		out[r] = q.MilliValue()
	}
	return out
}

// mCover is the budgets that cover a pod of ns: its namespace's Budget, then org.
func mCover(ns string) []BudgetKey {
	if ns == "team-a" {
		return []BudgetKey{flavorA, flavorOrg}
	}
	return []BudgetKey{flavorB, flavorOrg}
}

// mLimits are a budget's flavor-less hard and its hard per flavor.
func (w *flavorWorld) mLimits(k BudgetKey) (base mQty, perFlavor map[string]mQty) {
	b := w.budgets[k]
	h, _ := NormalizeHard(b.Hard)
	base, perFlavor = mQtyOf(h), map[string]mQty{}
	for _, f := range b.Flavors {
		fh, _ := NormalizeHard(f.Hard)
		perFlavor[f.Name] = mQtyOf(fh)
	}
	return base, perFlavor
}

// mSelected is the existing flavor all of whose labels a selector asks for.
func (w *flavorWorld) mSelected(sel map[string]string) []string {
	var out []string
	for _, n := range slices.Sorted(maps.Keys(w.flavors)) {
		all := true
		for k, v := range w.flavors[n].NodeLabels {
			if sel[k] != v {
				all = false
			}
		}
		if all {
			out = append(out, n)
		}
	}
	return out
}

// mUsed is what the running pods covered by k use, flavor-less and per flavor (each
// running pod on the flavor its selector selects).
func (w *flavorWorld) mUsed(k BudgetKey) (base mQty, perFlavor map[string]mQty) {
	base, perFlavor = mQty{}, map[string]mQty{}
	for _, p := range w.pods {
		if !p.running || !slices.Contains(mCover(p.view.Namespace), k) {
			continue
		}
		req := mQtyOf(p.view.Usage)
		var on string
		if sel := w.mSelected(p.view.NodeSelector); len(sel) > 0 {
			on = sel[0]
		}
		for r, v := range req {
			base[r] += v
			if on != "" {
				if perFlavor[on] == nil {
					perFlavor[on] = mQty{}
				}
				perFlavor[on][r] += v
			}
		}
	}
	return base, perFlavor
}

// mChoices are the flavors that may take a pod, in its flavored budget's order, and
// whether flavors apply to it at all; preferred is set when that budget waits for the
// first of them.
func (w *flavorWorld) mChoices(p *fPod) (names []string, apply, preferred bool) {
	cover := mCover(p.view.Namespace)
	var home *Budget
	named := map[string]map[corev1.ResourceName]bool{} // flavor -> resources some budget names
	listed := map[string]int{}
	flavored := 0
	for _, k := range cover {
		b := w.budgets[k]
		if len(b.Flavors) == 0 {
			continue
		}
		flavored++
		if home == nil {
			home = &b
		}
		_, per := w.mLimits(k)
		for f, h := range per {
			listed[f]++
			if named[f] == nil {
				named[f] = map[corev1.ResourceName]bool{}
			}
			for r := range h {
				named[f][r] = true
			}
		}
	}
	if home == nil {
		return nil, false, false
	}
	var wanted []corev1.ResourceName
	for r, v := range mQtyOf(p.view.Usage) {
		for _, n := range named {
			if v != 0 && n[r] {
				wanted = append(wanted, r)
				break
			}
		}
	}
	if len(wanted) == 0 {
		return nil, false, false
	}
	selected := w.mSelected(p.view.NodeSelector)
	for _, fq := range home.Flavors {
		f, exists := w.flavors[fq.Name]
		if !exists || listed[fq.Name] != flavored || (len(selected) > 0 && !slices.Contains(selected, fq.Name)) {
			continue
		}
		ok := true
		for k, v := range f.NodeLabels {
			if got, set := p.view.NodeSelector[k]; set && got != v {
				ok = false
			}
		}
		for _, r := range wanted {
			ok = ok && named[fq.Name][r]
		}
		// A flavor that holds less of a resource than the pod requests (0 of what its
		// nodes do not have) is no choice for it.
		req := mQtyOf(p.view.Usage)
		for _, k := range cover {
			_, per := w.mLimits(k)
			for r, h := range per[fq.Name] {
				ok = ok && req[r] <= h
			}
		}
		if ok {
			names = append(names, fq.Name)
		}
	}
	return names, true, home.Fungibility.WaitForPreferred
}

// mFits reports whether the pod fits beside the running pods on flavor f ("" for
// none), in every budget that covers it: each resource it requests, as ResourceQuota
// checks only those.
func (w *flavorWorld) mFits(p *fPod, f string) error {
	req := mQtyOf(p.view.Usage)
	for _, k := range mCover(p.view.Namespace) {
		hard, hardF := w.mLimits(k)
		used, usedF := w.mUsed(k)
		for r, h := range hard {
			if req[r] > 0 && used[r]+req[r] > h {
				return fmt.Errorf("%s: %s %d+%d > %d", k, r, used[r], req[r], h)
			}
		}
		for r, h := range hardF[f] {
			if req[r] > 0 && usedF[f][r]+req[r] > h {
				return fmt.Errorf("%s: %s on %s %d+%d > %d", k, r, f, usedF[f][r], req[r], h)
			}
		}
	}
	return nil
}

// admitAndCheck runs Admit and checks each admission in the order it was decided, then
// applies it as the ungate patch does (gate removed, the flavor's labels added), then
// checks every budget's accounting.
func (w *flavorWorld) admitAndCheck() error {
	for _, a := range w.q.Admit() {
		p := w.pods[a.Pod.UID]
		if p == nil || p.running {
			return fmt.Errorf("admitted %s, which is not a gated pod of the world", a.Pod.Name)
		}
		choices, apply, preferred := w.mChoices(p)
		on := ""
		if a.Flavor != nil {
			on = a.Flavor.Name
		}
		w.logf("admitted %s on %q (choices %v)", a.Pod.Name, on, choices)
		switch {
		case apply && on == "":
			return fmt.Errorf("%s admitted on no flavor; it may go on %v", a.Pod.Name, choices)
		case !apply && on != "" && !slices.Contains(w.mSelected(p.view.NodeSelector), on):
			// A pod no flavor applies to is on the flavor it selects itself, if any.
			return fmt.Errorf("%s admitted on %s; no flavor applies to it, and it does not select %s", a.Pod.Name, on, on)
		case apply && !slices.Contains(choices, on):
			return fmt.Errorf("%s admitted on %s, not one of %v", a.Pod.Name, on, choices)
		case preferred && on != choices[0]:
			return fmt.Errorf("%s admitted on %s; its budget waits for %s", a.Pod.Name, on, choices[0])
		}
		if err := w.mFits(p, on); err != nil {
			return fmt.Errorf("%s admitted on %q without room: %v", a.Pod.Name, on, err)
		}
		for _, g := range choices {
			if g == on {
				break
			}
			if w.mFits(p, g) == nil {
				return fmt.Errorf("%s admitted on %s although %s, before it, has room", a.Pod.Name, on, g)
			}
		}
		w.q.Done(a.Pod.UID, Ungated, "")
		p.running = true
		p.view.Gated = false
		if a.Flavor != nil {
			p.view.NodeSelector = maps.Clone(p.view.NodeSelector)
			if p.view.NodeSelector == nil {
				p.view.NodeSelector = map[string]string{}
			}
			maps.Copy(p.view.NodeSelector, a.Flavor.NodeLabels)
		}
		w.rv++
		p.view.ResourceVersion = strconv.Itoa(w.rv)
		w.q.UpsertPod(p.view)
	}
	if err := w.evict(); err != nil {
		return err
	}
	return w.checkAccounts()
}

// evict ends the victims of the preemptions the core decided, as the controller's
// evictions do, after checking that each may be preempted: a running pod, of lower
// priority than its preemptor's when in the same budget.
func (w *flavorWorld) evict() error {
	for _, pr := range w.q.Preemptions() {
		v, by := w.pods[pr.Victim.UID], w.pods[pr.Preemptor.UID]
		switch {
		case v == nil || !v.running:
			return fmt.Errorf("%s preempted for %s, but it is not a running pod", pr.Victim.Name, pr.Preemptor.Name)
		case by == nil || by.running:
			return fmt.Errorf("%s preempted for %s, which is not a gated pod", pr.Victim.Name, pr.Preemptor.Name)
		case pr.Reason == PreemptWithinBudget && v.view.Priority >= by.view.Priority:
			return fmt.Errorf("%s (priority %d) preempted within %s for %s (priority %d)", pr.Victim.Name, v.view.Priority, pr.Budget, pr.Preemptor.Name, by.view.Priority)
		}
		if !w.q.PreemptionNeeded(pr.Victim.UID) {
			continue
		}
		delete(w.pods, pr.Victim.UID)
		w.q.DeletePod(pr.Victim.UID)
		w.logf("pod %s preempted (%s) for %s", pr.Victim.Name, pr.Reason, pr.Preemptor.Name)
	}
	return nil
}

func (w *flavorWorld) checkAccounts() error {
	for _, k := range []BudgetKey{flavorOrg, flavorA, flavorB} {
		st, ok := w.q.Reader().Status(k)
		if !ok {
			return fmt.Errorf("no status for %s", k)
		}
		used, usedF := w.mUsed(k)
		for r := range st.Hard {
			if got := st.Used[r]; got.MilliValue() != used[r] {
				return fmt.Errorf("%s used %s = %s, model %dm", k, r, got.String(), used[r])
			}
		}
		for _, f := range st.Flavors {
			for r := range f.Hard {
				if got := f.Used[r]; got.MilliValue() != usedF[f.Name][r] {
					return fmt.Errorf("%s used %s on %s = %s, model %dm", k, r, f.Name, got.String(), usedF[f.Name][r])
				}
			}
		}
	}
	return nil
}

// checkLiveness: with nothing running, no gated pod is left that fits.
func (w *flavorWorld) checkLiveness() error {
	for _, uid := range slices.Sorted(maps.Keys(w.pods)) {
		p := w.pods[uid]
		if p.running {
			continue
		}
		choices, apply, preferred := w.mChoices(p)
		switch {
		case !apply:
			choices = []string{""}
		case preferred && len(choices) > 0:
			choices = choices[:1]
		}
		for _, f := range choices {
			if w.mFits(p, f) == nil {
				r, _ := w.q.Reader().WaitReason(uid)
				return fmt.Errorf("%s waits (%s: %s) although it fits on %q", p.view.Name, r.Code, r.Message, f)
			}
		}
	}
	return nil
}
