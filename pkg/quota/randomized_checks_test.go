package quota

// What TestRandomizedAdmission checks: after every step, the safety and accounting
// invariants of Admit against the model (admitAndCheck, checkAtHead); at the end of a
// seed, that a calm world leaves no pod gated without a reason (calmDown).

import (
	"strings"
	"time"

	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// admitAndCheck runs Admit and checks the safety and accounting invariants.
func (w *world) admitAndCheck() error {
	if w.failed != nil {
		return w.failed
	}
	startedBefore := map[string]bool{}
	for _, p := range w.pods {
		if p.groupName != "" && p.state != mGated {
			startedBefore[p.obj.Namespace+"/"+p.groupName] = true
		}
	}
	compositeBefore := w.compositeStarted()
	usedBefore := w.usedAll()
	admitted := w.q.Admit()
	defer w.disarmWithin()
	if err := w.writeRecords(); err != nil {
		return err
	}
	perGroup := map[string]int{}
	touched := map[BudgetKey]bool{}
	for _, a := range admitted {
		p := w.pods[a.Pod.UID]
		if p == nil || (p.state != mGated && p.state != mUnresolved) {
			return fmt.Errorf("admitted %s, which is neither gated nor unresolved", a.Pod)
		}
		retry := p.state == mUnresolved
		if open, _ := w.startOpen(p.obj, w.clk.Now()); !open && !retry {
			return fmt.Errorf("admitted %s at %s, before its start rule lets it (%v)", a.Pod, w.clk.Now().Format(time.RFC3339Nano), p.obj.Annotations)
		}
		if w.podGroupMissing(p) && !retry {
			return fmt.Errorf("admitted %s, whose PodGroup %s does not exist", a.Pod, p.podGroup)
		}
		if ready, _ := w.dependenciesReady(p.obj); !ready && !retry {
			return fmt.Errorf("admitted %s before the Jobs it waits for completed (%s)", a.Pod, p.obj.Annotations[v1alpha1.WaitForAnnotation])
		}
		if _, told := w.namespaces[a.Pod.Namespace]; !told {
			return fmt.Errorf("admitted %s, whose namespace the core has not been told about", a.Pod)
		}
		p.state = mInflight
		p.admittedBy, p.admittedLabels = a.Budgets, a.Labels
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
		if w.notSent.draw() {
			p.outcome, p.applies, p.bump = NotSent, false, false
		}
		p.retried = retry
		w.logf("admit %s budgets=%v retry=%v reason=%s", a.Pod, a.Budgets, retry, a.Reason.Message)
		if retry {
			// The budgets that admitted it, not those that came to cover it since: its
			// admitted-by pins it to them after a restart, as the core's memory does.
			if err := sameKeys(a.Budgets, p.pinned); err != nil {
				return fmt.Errorf("retry of %s: admitted by %w", a.Pod, err)
			}
			continue
		}
		p.pinned = w.cover(p.obj)
		p.chargeLabels = maps.Clone(p.obj.Labels)
		w.preemptorAdmitted(a.Pod.UID, a.Budgets)
		if !maps.Equal(a.Labels, p.obj.Labels) {
			return fmt.Errorf("%s admitted with labels %v, model says %v", a.Pod, a.Labels, p.obj.Labels)
		}
		wantCover := w.cover(p.obj)
		if err := sameKeys(a.Budgets, wantCover); err != nil {
			return fmt.Errorf("%s admitted against %w", a.Pod, err)
		}
		switch a.Reason.Code {
		case CodeFits:
			if uncountable(p.usage) {
				return fmt.Errorf("%s admitted through its queue with a value beyond what can be counted: %v", a.Pod, p.usage)
			}
			for _, k := range wantCover {
				if !w.admitting(k) {
					return fmt.Errorf("%s admitted while %s does not admit", a.Pod, k.Describe())
				}
				touched[k] = true
			}
			if err := w.admittedSetsTracked(p); err != nil {
				return err
			}
		case CodeNoBudget:
			if len(wantCover) > 0 {
				return fmt.Errorf("%s admitted as uncovered", a.Pod)
			}
			if w.hold {
				return fmt.Errorf("%s admitted as uncovered by a core that holds uncovered pods", a.Pod)
			}
		default:
			return fmt.Errorf("%s admitted with unexpected reason %v", a.Pod, a.Reason)
		}
		if p.groupName != "" {
			perGroup[p.obj.Namespace+"/"+p.groupName]++
		}
	}
	var admittedPods []*mPod
	for _, a := range admitted {
		admittedPods = append(admittedPods, w.pods[a.Pod.UID])
	}
	if err := w.checkComposites(admittedPods, compositeBefore); err != nil {
		return err
	}
	for g, n := range perGroup {
		size := 0
		for _, p := range w.pods {
			// A member with a value beyond what can be counted is no member: it waits
			// alone (ValueOutOfRange), and its group-size counts for nothing.
			if p.obj.Namespace+"/"+p.groupName == g && (p.state != mGated || !uncountable(p.usage)) {
				size = max(size, p.groupSize)
			}
		}
		if !startedBefore[g] && n < size {
			return fmt.Errorf("group %s: %d members admitted, size %d, none admitted before", g, n, size)
		}
	}
	for _, uid := range slices.Sorted(mapsKeys(w.pods)) {
		p := w.pods[uid]
		if _, waiting := w.q.Reader().WaitCode(uid); waiting && !p.gated() {
			return fmt.Errorf("pod %s is ungated in the API server (rv %d), but the core counts it as waiting: its charge was given back", p.obj.Name, p.rv)
		}
	}
	usedAll := w.usedAll()
	for k := range touched {
		used := usedAll[k]
		for name, h := range w.ceiling(k) {
			// Over hard, by this round's admissions: a resource that hard was lowered
			// below before them, and that they do not use (devices), may stay over.
			u, before := used[name], usedBefore[k][name]
			if u.Cmp(h) > 0 && u.Cmp(before) > 0 {
				return fmt.Errorf("%s over hard (plus borrowingLimit) after admissions: %s used %s > %s", k.Describe(), name, u.String(), h.String())
			}
		}
	}
	// A family that borrows uses above its guaranteed parts no more than it lends, or, if
	// it did before (a lendingLimit lowered, pods ungated by others), no more than before.
	for _, p := range w.borrowingParents(slices.Collect(maps.Keys(touched))) {
		for _, name := range []corev1.ResourceName{"requests.cpu", "pods"} {
			after, pool := w.familyAbove(p, name, usedAll)
			before, _ := w.familyAbove(p, name, usedBefore)
			if after.Cmp(pool) > 0 && after.Cmp(before) > 0 {
				return fmt.Errorf("the family of %s uses %s %s above its guaranteed parts, more than the %s it lends (and than the %s before)", p.Describe(), name, after.String(), pool.String(), before.String())
			}
		}
	}
	for _, k := range w.budgetKeys() {
		st, ok := w.q.Reader().Status(k)
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
	if err := w.checkPreemptions(); err != nil {
		return err
	}
	if err := w.checkUnset(); err != nil {
		return err
	}
	return w.q.checkInvariants()
}

// checkAtHead: AtHead picks exactly the pods the snapshot places among the first n of
// some budget's queue, or holds with no budget, whichever queue they wait in.
func (w *world) checkAtHead(n int) error {
	s := w.q.Reader().Snapshot()
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
	got := w.q.Reader().AtHead(asked, n)
	if !maps.Equal(got, want) {
		return fmt.Errorf("AtHead(n=%d) = %v, the snapshot's first %d = %v", n, slices.Sorted(maps.Keys(got)), n, slices.Sorted(maps.Keys(want)))
	}
	return nil
}

// calmDown opens and repairs every budget, then lets running pods finish until nothing
// moves, and checks that every pod still gated has a reason never to be admitted.
func (w *world) calmDown() error {
	w.logf("calm down")
	w.finishAllJobs()
	w.createAllPodGroups()
	w.deliverNamespaces(100)
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
	if err := w.reclaimedInCalm(); err != nil {
		return err
	}
	for round := 0; round < 200; round++ {
		if err := w.calmRound(true); err != nil {
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
			if open, valid := w.startOpen(p.obj, w.clk.Now()); p.state == mGated && valid && !open {
				busy = true // waits for its start: the clock moves on
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
		r, _ := w.q.Reader().WaitReason(uid)
		return fmt.Errorf("pod %s/%s is still gated in a calm world: %s: %s\nwhy the gated pods wait:\n%s", p.obj.Namespace, p.obj.Name, r.Code, r.Message, w.gatedReasons())
	}
	return nil
}

// calmRound is one round of a calm world: no pod and no response is lost, every
// eviction is accepted, and, when finish is true, every running pod finishes; then time
// passes (pods whose ungate is unresolved are tried again after their backoff) and the
// core admits.
func (w *world) calmRound(finish bool) error {
	w.step++
	for _, p := range w.pods {
		p.doneAt = 0
		if p.outcome == Gone || (p.state == mInflight && !p.applies) {
			p.outcome, p.applies, p.bump = Ungated, true, false
		}
	}
	w.deliver()
	w.evict(true)
	if finish {
		for _, uid := range slices.Sorted(mapsKeys(w.pods)) {
			if p := w.pods[uid]; p.state == mRunning {
				w.finish(p)
			}
		}
	}
	w.clk.Step(DefaultMaxBackoff)
	return w.admitAndCheck()
}

// writeRecords writes the charge labels of running pods no manager admitted into their
// admitted-labels annotation, as the manager does; one write in five fails and is
// handed back. The labels must be those the model charges the pod by.
func (w *world) writeRecords() error {
	for _, r := range w.q.TakeRecords() {
		p := w.pods[r.Pod.UID]
		if p == nil {
			return fmt.Errorf("record of %s, a pod the world does not have", r.Pod.Name)
		}
		if p.state != mRunning {
			return fmt.Errorf("record of %s, which the model says is not running (state %d)", p.obj.Name, p.state)
		}
		if !maps.Equal(r.Labels, p.chargeLabels) {
			return fmt.Errorf("record of %s: charge labels %v, model says %v", p.obj.Name, r.Labels, p.chargeLabels)
		}
		if w.rng.IntN(5) == 0 {
			w.q.RecordAgain(r.Pod.UID)
			continue
		}
		if p.obj.Annotations == nil {
			p.obj.Annotations = map[string]string{}
		}
		p.obj.Annotations[v1alpha1.AdmittedLabelsAnnotation] = AdmittedLabelsText(r.Labels)
		w.write(p)
		w.logf("recorded %s labels %v rv=%d", p.obj.Name, r.Labels, p.rv)
		w.view(p)
	}
	return nil
}

// gatedReasons says why each gated pod waits, a line each.
func (w *world) gatedReasons() string {
	var b strings.Builder
	for _, uid := range slices.Sorted(mapsKeys(w.pods)) {
		if p := w.pods[uid]; p.state == mGated {
			r, _ := w.q.Reader().WaitReason(uid)
			fmt.Fprintf(&b, "  %s/%s: %s: %s\n", p.obj.Namespace, p.obj.Name, r.Code, r.Message)
		}
	}
	return b.String()
}
