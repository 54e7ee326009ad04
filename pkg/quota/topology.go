package quota

import (
	"cmp"
	"container/heap"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// UpsertBudget adds or changes a Budget or ClusterBudget. Changing hard, opening the
// budget or fixing its parent wakes its inadmissible pods; changing selectors or the
// parent re-computes which budgets cover which pods.
//
// A budget that cannot work admits nothing and says why in its status: a selector that
// does not parse (InvalidSelector; it then covers every pod it might have meant, see
// parseSelector), another invalid spec (InvalidSpec), a parent that does not exist
// (ParentNotFound), a parent chain that loops (ParentCycle, for every budget on the
// loop). Its pods stay gated, and its descendants are Closed with ClosedByParent, until
// it is fixed.
func (q *AdmissionQueue) UpsertBudget(spec Budget) {
	q.mu.Lock()
	defer q.mu.Unlock()
	b := q.budgets[spec.Key]
	topology, hardChanged := true, false
	if b == nil {
		b = newBudget(spec)
		q.budgets[spec.Key] = b
		if !spec.Key.IsCluster() {
			ns := q.byNS[spec.Key.Namespace]
			if ns == nil {
				ns = map[string]*budget{}
				q.byNS[spec.Key.Namespace] = ns
			}
			ns[spec.Key.Name] = b
		}
	} else {
		oldStrict := b.strict()
		topology, hardChanged = b.setSpec(spec)
		if oldStrict != b.strict() {
			q.wakeAll(b)
		}
	}
	q.markStatus(b)
	q.resolveTopology()
	if topology {
		q.recover(spec.Key)
	}
	if hardChanged {
		// Pods may start or stop never fitting; the rest get another look.
		for _, p := range q.waitingIn(b) {
			if q.pods[p.pod.UID] == p && p.phase == phaseWaiting {
				q.settleWaiting(p)
			}
		}
		q.wake(b)
	}
}

// DeleteBudget removes a budget: its charges vanish with it, and the pods it covered
// are re-evaluated against the budgets that remain. Budgets naming it as parent report
// ParentNotFound.
func (q *AdmissionQueue) DeleteBudget(key BudgetKey) {
	q.mu.Lock()
	defer q.mu.Unlock()
	b := q.budgets[key]
	if b == nil {
		return
	}
	delete(q.budgets, key)
	if ns := q.byNS[key.Namespace]; ns != nil && !key.IsCluster() {
		delete(ns, key.Name)
		if len(ns) == 0 {
			delete(q.byNS, key.Namespace)
		}
	}
	delete(q.statusDirty, key)
	q.resolveTopology()
	q.recover(key)
	if b.dirtyIndex >= 0 {
		heap.Remove(&q.dirty, b.dirtyIndex)
	}
}

// SetNamespace records a namespace's labels (for namespaceSelectors and the opt-in
// label). A namespace whose opt-in label is removed has its gated pods released.
func (q *AdmissionQueue) SetNamespace(name string, l map[string]string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	old, known := q.namespaces[name]
	if known && maps.Equal(old, labels.Set(l)) {
		return
	}
	q.namespaces[name] = maps.Clone(labels.Set(l))
	for _, p := range q.sortedPodsIn(name) {
		cover := q.coverage(&p.pod)
		switch {
		case p.phase != phaseWaiting:
			q.coverAdmitted(p, cover)
		case !sameBudgets(cover, p.cover) || q.released(name):
			q.detach(p)
			p.cover = cover
			q.settleWaiting(p)
		}
	}
}

// DeleteNamespace forgets a namespace's labels.
func (q *AdmissionQueue) DeleteNamespace(name string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.namespaces, name)
}

// coverage returns the budgets that cover a pod: Budgets of its namespace whose
// podSelector matches, ClusterBudgets whose namespaceSelector matches its namespace
// (and podSelector the pod), then all their ancestors.
func (q *AdmissionQueue) coverage(p *Pod) []*budget {
	var out []*budget
	for _, b := range q.byNS[p.Namespace] {
		if b.coversDirectly(p, nil) {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(a, b *budget) int { return a.key.Compare(b.key) })
	if len(q.selecting) > 0 {
		nsLabels := q.namespaces[p.Namespace]
		for _, b := range q.selecting {
			if b.coversDirectly(p, nsLabels) {
				out = append(out, b)
			}
		}
	}
	direct := len(out)
	for i := 0; i < direct; i++ {
		for _, a := range out[i].ancestors {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

func sameBudgets(a, b []*budget) bool { return slices.Equal(a, b) }

// recover re-computes coverage after a budget's selectors, parent or existence changed:
// the pods of its namespace for a Budget, every pod for a ClusterBudget.
func (q *AdmissionQueue) recover(key BudgetKey) {
	var pods []*podState
	if key.IsCluster() {
		pods = q.sortedPods()
	} else {
		pods = q.sortedPodsIn(key.Namespace)
	}
	for _, p := range pods {
		if q.pods[p.pod.UID] != p {
			continue // forgotten while settling an earlier pod's group
		}
		cover := q.coverage(&p.pod)
		if p.phase != phaseWaiting {
			q.coverAdmitted(p, cover)
			continue
		}
		if sameBudgets(cover, p.cover) {
			continue
		}
		q.detach(p)
		p.cover = cover
		q.settleWaiting(p)
	}
}

// resolveTopology derives parents, ancestors, problems and effective states of every
// budget, and wakes the budgets that start admitting.
func (q *AdmissionQueue) resolveTopology() {
	// Map order is fine here: nothing below depends on the order of budgets except
	// selecting, which is sorted.
	all := slices.Collect(maps.Values(q.budgets))
	type view struct {
		admitting bool
		problem   problem
		closedBy  *budget
	}
	viewOf := func(b *budget) view {
		v := view{admitting: b.admitting, closedBy: b.closedBy}
		if b.problem != nil {
			v.problem = *b.problem
		}
		return v
	}
	was := make(map[*budget]view, len(all))
	q.selecting = q.selecting[:0]
	for _, b := range all {
		was[b] = viewOf(b)
		b.parent, b.ancestors, b.problem, b.closedBy = nil, nil, nil, nil
		if b.spec.Parent != "" {
			b.parent = q.budgets[BudgetKey{Name: b.spec.Parent}]
		}
		if b.key.IsCluster() && b.spec.NamespaceSelector != nil {
			q.selecting = append(q.selecting, b)
		}
	}
	slices.SortFunc(q.selecting, func(a, b *budget) int { return a.key.Compare(b.key) })
	for _, b := range all {
		seen := map[*budget]bool{b: true}
		for a := b.parent; a != nil; a = a.parent {
			if seen[a] {
				if a == b {
					b.problem = &problem{Reason: v1alpha1.ReasonParentCycle, Message: "parent chain loops: " + cycleString(b)}
				}
				break
			}
			seen[a] = true
			b.ancestors = append(b.ancestors, a)
		}
		switch {
		case b.problem != nil:
		case b.specErr != "":
			b.problem = &problem{Reason: b.specReason, Message: b.specErr}
		case b.spec.Parent != "" && b.parent == nil:
			b.problem = &problem{Reason: v1alpha1.ReasonParentNotFound, Message: fmt.Sprintf("parent ClusterBudget %s not found", b.spec.Parent)}
		}
	}
	for _, b := range all {
		b.admitting = b.problem == nil && b.specOpen()
		for _, a := range b.ancestors {
			if a.problem != nil || !a.specOpen() {
				b.admitting = false
				if b.problem == nil && b.specOpen() && b.closedBy == nil {
					b.closedBy = a
				}
			}
		}
	}
	for _, b := range all {
		if viewOf(b) != was[b] {
			q.markStatus(b)
		}
		if b.admitting && !was[b].admitting {
			q.wake(b)
		}
	}
}

func cycleString(b *budget) string {
	names := []string{b.key.Name}
	for a := b.parent; a != nil && a != b; a = a.parent {
		names = append(names, a.key.Name)
	}
	return strings.Join(append(names, b.key.Name), " -> ")
}

func (q *AdmissionQueue) sortedBudgets() []*budget {
	keys := slices.SortedFunc(maps.Keys(q.budgets), BudgetKey.Compare)
	out := make([]*budget, len(keys))
	for i, k := range keys {
		out[i] = q.budgets[k]
	}
	return out
}

func (q *AdmissionQueue) sortedPods() []*podState {
	out := slices.Collect(maps.Values(q.pods))
	slices.SortFunc(out, func(a, b *podState) int { return cmp.Compare(a.pod.UID, b.pod.UID) })
	return out
}

func (q *AdmissionQueue) sortedPodsIn(ns string) []*podState {
	out := slices.Collect(maps.Values(q.podsNS[ns]))
	slices.SortFunc(out, func(a, b *podState) int { return cmp.Compare(a.pod.UID, b.pod.UID) })
	return out
}

// waitingIn returns the gated pods a budget covers, by UID.
func (q *AdmissionQueue) waitingIn(b *budget) []*podState {
	var out []*podState
	for _, h := range []entryHeap{b.active, b.backoff, b.inadmissible} {
		for _, e := range h {
			out = append(out, e.pod)
		}
	}
	for e := range b.parked {
		out = append(out, e.pod)
	}
	slices.SortFunc(out, func(a, b *podState) int { return cmp.Compare(a.pod.UID, b.pod.UID) })
	return out
}
