package quota

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The flavor world's model: what covers a pod, what each budget limits, what running
// pods use, and which flavors may take a pod, written from the documented rules
// (docs/budgets.md, "Flavors") without the core's code.

// mQty is a pod's or a limit's quantities by quota name, summed with Quantity's own
// exact arithmetic (never the core's amounts).
type mQty map[corev1.ResourceName]resource.Quantity

func mQtyOf(l corev1.ResourceList) mQty {
	out := mQty{}
	for r, q := range l {
		out[r] = q.DeepCopy()
	}
	return out
}

// add adds v to q[r].
func (q mQty) add(r corev1.ResourceName, v resource.Quantity) {
	s := q[r].DeepCopy()
	s.Add(v)
	q[r] = s
}

// sumExceeds reports whether a+b > limit.
func sumExceeds(a, b, limit resource.Quantity) bool {
	s := a.DeepCopy()
	s.Add(b)
	return s.Cmp(limit) > 0
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

// mReach is, sorted, the existing flavors a pod can be scheduled on once on flavor on
// ("" for none), per docs/budgets.md ("Which flavors a pod is charged on"): those
// whose every label it asks for (its selector, the flavor's labels, or an In of an
// affinity term not ruled out by the flavor's labels), without another value for one
// of them; and those whose labels contain every label of one of these and more, whose
// labels it does not rule out and whose taints it may tolerate.
func (w *flavorWorld) mReach(p Pod, on string) []string {
	sel := maps.Clone(p.NodeSelector)
	if sel == nil {
		sel = map[string]string{}
	}
	tols := slices.Clone(p.Tolerations)
	if f, ok := w.flavors[on]; ok {
		maps.Copy(sel, f.NodeLabels)
		tols = append(tols, f.Tolerations...)
	}
	termOK := func(t corev1.NodeSelectorTerm, labels map[string]string) bool {
		if len(t.MatchExpressions) == 0 {
			return false
		}
		for _, e := range t.MatchExpressions {
			v, has := labels[e.Key]
			if has && e.Operator == corev1.NodeSelectorOpIn && !slices.Contains(e.Values, v) ||
				has && e.Operator == corev1.NodeSelectorOpNotIn && slices.Contains(e.Values, v) ||
				has && e.Operator == corev1.NodeSelectorOpDoesNotExist {
				return false
			}
		}
		return true
	}
	ruledOut := func(labels map[string]string) bool {
		for k, v := range labels {
			if got, has := sel[k]; has && got != v {
				return true
			}
		}
		if p.NodeAffinity == nil {
			return false
		}
		return !slices.ContainsFunc(p.NodeAffinity.NodeSelectorTerms, func(t corev1.NodeSelectorTerm) bool { return termOK(t, labels) })
	}
	asked := func(labels map[string]string) bool {
		for k, v := range labels {
			if sel[k] == v {
				continue
			}
			inTerm := p.NodeAffinity != nil && slices.ContainsFunc(p.NodeAffinity.NodeSelectorTerms, func(t corev1.NodeSelectorTerm) bool {
				return termOK(t, labels) && slices.ContainsFunc(t.MatchExpressions, func(e corev1.NodeSelectorRequirement) bool {
					return e.Key == k && e.Operator == corev1.NodeSelectorOpIn && slices.Contains(e.Values, v)
				})
			})
			if !inTerm {
				return false
			}
		}
		return len(labels) > 0
	}
	tolerated := func(f Flavor) bool {
		for _, taint := range f.Tolerations {
			if taint.Effect == corev1.TaintEffectPreferNoSchedule {
				continue
			}
			if !slices.ContainsFunc(tols, func(t corev1.Toleration) bool {
				keyOK := t.Key == taint.Key || (t.Key == "" && t.Operator == corev1.TolerationOpExists)
				valueOK := t.Operator == corev1.TolerationOpExists || taint.Operator == corev1.TolerationOpExists || t.Value == taint.Value
				effectOK := t.Effect == "" || taint.Effect == "" || t.Effect == taint.Effect
				return keyOK && valueOK && effectOK
			}) {
				return false
			}
		}
		return true
	}
	var direct []string
	for _, n := range slices.Sorted(maps.Keys(w.flavors)) {
		if f := w.flavors[n]; asked(f.NodeLabels) && !ruledOut(f.NodeLabels) {
			direct = append(direct, n)
		}
	}
	out := slices.Clone(direct)
	for _, n := range slices.Sorted(maps.Keys(w.flavors)) {
		f := w.flavors[n]
		if slices.Contains(direct, n) || ruledOut(f.NodeLabels) || !tolerated(f) {
			continue
		}
		for _, d := range direct {
			inner := w.flavors[d].NodeLabels
			contains := len(f.NodeLabels) > len(inner)
			for k, v := range inner {
				contains = contains && f.NodeLabels[k] == v
			}
			if contains {
				out = append(out, n)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// mSelected is the existing flavors all of whose labels a selector asks for.
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
// running pod on every flavor it reaches as it runs).
func (w *flavorWorld) mUsed(k BudgetKey) (base mQty, perFlavor map[string]mQty) {
	base, perFlavor = mQty{}, map[string]mQty{}
	for _, p := range w.pods {
		if !p.running || !slices.Contains(mCover(p.view.Namespace), k) {
			continue
		}
		reach := w.mReach(p.view, "")
		for r, v := range mQtyOf(p.view.Usage) {
			base.add(r, v)
			for _, f := range reach {
				if perFlavor[f] == nil {
					perFlavor[f] = mQty{}
				}
				perFlavor[f].add(r, v)
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
			if !v.IsZero() && n[r] {
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
		// The pod on fq must reach fq's nodes: its selector and affinity allow them.
		ok := slices.Contains(w.mReach(p.view, fq.Name), fq.Name)
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
				v := req[r]
				ok = ok && v.Cmp(h) <= 0
			}
		}
		if ok {
			names = append(names, fq.Name)
		}
	}
	return names, true, home.Fungibility.WaitForPreferred
}

// mTracksUnset returns a budget that covers the pod and tracks a value it leaves unset:
// requests.cpu, on the budget's hard or on the hard of any flavor it lists (existing or
// not), as ResourceQuota's must-specify rule applies to every value a quota tracks.
func (w *flavorWorld) mTracksUnset(p *fPod) (BudgetKey, bool) {
	if !p.cpuUnset {
		return BudgetKey{}, false
	}
	for _, k := range mCover(p.view.Namespace) {
		hard, hardF := w.mLimits(k)
		if _, ok := hard[corev1.ResourceRequestsCPU]; ok {
			return k, true
		}
		for _, h := range hardF {
			if _, ok := h[corev1.ResourceRequestsCPU]; ok {
				return k, true
			}
		}
	}
	return BudgetKey{}, false
}

// mFits reports whether the pod fits beside the running pods on flavor f ("" for
// none), in every budget that covers it: each resource it requests, as ResourceQuota
// checks only those, on every flavor it reaches once on f.
func (w *flavorWorld) mFits(p *fPod, f string) error {
	req := mQtyOf(p.view.Usage)
	var reach []string
	if f != "" {
		reach = w.mReach(p.view, f)
	}
	for _, k := range mCover(p.view.Namespace) {
		hard, hardF := w.mLimits(k)
		used, usedF := w.mUsed(k)
		for r, h := range hard {
			if v := req[r]; v.Sign() > 0 && sumExceeds(used[r], v, h) {
				return fmt.Errorf("%s: %s %s+%s > %s", k, r, used.str(r), req.str(r), h.String())
			}
		}
		for _, g := range reach {
			for r, h := range hardF[g] {
				if v := req[r]; v.Sign() > 0 && sumExceeds(usedF[g][r], v, h) {
					return fmt.Errorf("%s: %s on %s %s+%s > %s", k, r, g, usedF[g].str(r), req.str(r), h.String())
				}
			}
		}
	}
	return nil
}

// str prints q[r] (0 when absent).
func (q mQty) str(r corev1.ResourceName) string {
	v := q[r]
	return v.String()
}

// overHard is what the running pods use of every budget's hard, and of every hard of
// one of its flavors, that they use more of than it holds (the model's sums), by
// "budget: resource [on flavor]".
func (w *flavorWorld) overHard() map[string]resource.Quantity {
	out := map[string]resource.Quantity{}
	for _, k := range []BudgetKey{flavorOrg, flavorA, flavorB} {
		hard, hardF := w.mLimits(k)
		used, usedF := w.mUsed(k)
		for r, h := range hard {
			if u := used[r]; u.Cmp(h) > 0 {
				out[fmt.Sprintf("%s: %s (hard %s)", k, r, h.String())] = u
			}
		}
		for f, hf := range hardF {
			if _, exists := w.flavors[f]; !exists {
				continue
			}
			for r, h := range hf {
				if u := usedF[f][r]; u.Cmp(h) > 0 {
					out[fmt.Sprintf("%s: %s on %s (hard %s)", k, r, f, h.String())] = u
				}
			}
		}
	}
	return out
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
		if k, f, missing := w.mMissingFlavor(p); missing {
			return fmt.Errorf("admitted %s, although %s names Flavor %s, which does not exist", a.Pod.Name, k, f)
		}
		if k, tracks := w.mTracksUnset(p); tracks {
			return fmt.Errorf("admitted %s, which leaves its cpu request unset, although %s tracks requests.cpu", a.Pod.Name, k)
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
			p.view.Tolerations = append(slices.Clone(p.view.Tolerations), a.Flavor.Tolerations...)
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
			if got := st.Used[r]; got.Cmp(used[r]) != 0 {
				return fmt.Errorf("%s used %s = %s, model %s", k, r, got.String(), used.str(r))
			}
		}
		for _, f := range st.Flavors {
			for r := range f.Hard {
				if got := f.Used[r]; got.Cmp(usedF[f.Name][r]) != 0 {
					return fmt.Errorf("%s used %s on %s = %s, model %s", k, r, f.Name, got.String(), usedF[f.Name].str(r))
				}
			}
		}
	}
	return nil
}

// mMissingFlavor returns a budget that covers the pod and names a Flavor that does
// not exist: such a budget admits nothing (FlavorNotFound), nor do its children.
func (w *flavorWorld) mMissingFlavor(p *fPod) (BudgetKey, string, bool) {
	for _, k := range mCover(p.view.Namespace) {
		for _, f := range w.budgets[k].Flavors {
			if _, exists := w.flavors[f.Name]; !exists {
				return k, f.Name, true
			}
		}
	}
	return BudgetKey{}, "", false
}

// checkLiveness: with nothing running, no gated pod is left that fits.
func (w *flavorWorld) checkLiveness() error {
	for _, uid := range slices.Sorted(maps.Keys(w.pods)) {
		p := w.pods[uid]
		if p.running {
			continue
		}
		// A pod that leaves unset what a budget tracks is told so first: no other
		// change lets it run.
		if k, tracks := w.mTracksUnset(p); tracks {
			if r, _ := w.q.Reader().WaitReason(uid); r.Code != CodeMustSpecify {
				return fmt.Errorf("%s waits (%s: %s); want %s: it leaves its cpu request unset and %s tracks requests.cpu", p.view.Name, r.Code, r.Message, CodeMustSpecify, k)
			}
			continue
		}
		if k, f, missing := w.mMissingFlavor(p); missing {
			// A budget naming a Flavor that does not exist admits nothing, and says so.
			r, _ := w.q.Reader().WaitReason(uid)
			if r.Code != CodeBudgetClosed || !strings.Contains(r.Message, "Flavor") || !strings.Contains(r.Message, "not found") {
				return fmt.Errorf("%s waits (%s: %s); want BudgetClosed: %s names Flavor %s, which does not exist", p.view.Name, r.Code, r.Message, k, f)
			}
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
