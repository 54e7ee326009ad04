package quota

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// failover hands the work to a standby whose cache lags: it has every event but the
// ungated views still on their way, and for some pods the latest view is missing too.
// The old leader's attempts in flight land or not, the new leader catches up with a
// fresh read of every pod before it admits, and the informer's late (older) views
// arrive after that.
//
// It is also a restart of the only replica: nothing of the old core survives but what
// the API server holds. A pod the new core first sees running is pinned to the budgets
// its admitted-by annotation names (written by the ungate patch that landed) and
// covered by its admitted-labels; created running, by the admitted-labels the old
// core's record wrote (writeRecords), or, with no annotation (no core saw it before),
// by the labels it has; so a running pod relabelled out of a budget's selector before
// the restart is charged to it after, as before.
func (w *world) failover() {
	w.logf("failover")
	nq := w.newCore()
	// The new leader lists namespaces: the late events are in its list.
	for _, ns := range worldNamespaces {
		if l, ok := w.late[ns]; ok {
			delete(w.late, ns)
			w.namespaces[ns] = l
			w.admin = true // an administrator's relabel the old leader had not seen
		}
		if l, ok := w.namespaces[ns]; ok {
			nq.SetNamespace(ns, l)
		}
	}
	for _, k := range w.budgetKeys() {
		nq.UpsertBudget(w.budgets[k])
	}
	w.rearmWindows()
	uids := slices.Sorted(mapsKeys(w.pods))
	firstSeen := map[types.UID]Pod{}
	for _, uid := range uids {
		p := w.pods[uid]
		v := p.lastView
		if p.prevView.UID != "" && w.rng.IntN(2) == 0 {
			v = p.prevView
		}
		// The manager resolves every view it hands over against the objects as they are
		// then (ResolveDependencies): an old view of the pod, never an old verdict.
		v = w.withPodGroup(w.withDependencies(v))
		firstSeen[uid] = v
		nq.UpsertPod(v)
		p.seenAt = w.clk.Now() // the new core's first view of it
	}
	w.resetPreemptionModel() // the backoff lived in the old core's memory
	// The evictions the old leader was told were accepted: the new one was not (its
	// informer would show the pods terminating, which the world does not model), so
	// they count as running to it until they go.
	for _, uid := range w.accepted {
		if !slices.Contains(w.untold, uid) {
			w.untold = append(w.untold, uid)
		}
	}
	for _, uid := range uids {
		p := w.pods[uid]
		if p.state == mInflight {
			w.land(p)
		}
	}
	w.q = nq
	for _, uid := range uids {
		p := w.pods[uid]
		stale := p.lastView
		if p.prevView.UID != "" && w.rng.IntN(2) == 0 {
			stale = p.prevView
		}
		w.view(p) // the catch-up read
		w.q.UpsertPod(w.withPodGroup(w.withDependencies(stale)))
		p.informAt = -1
		by, hasBy := p.obj.Annotations[v1alpha1.AdmittedByAnnotation]
		switch first := firstSeen[uid]; {
		case p.gated():
			p.state, p.pinned, p.chargeLabels = mGated, nil, nil
		case hasBy:
			// Read back from the record the ungate patch wrote, whatever the labels
			// are now.
			p.state, p.pinned = mRunning, nil
			for _, s := range strings.Split(by, ",") {
				p.pinned = append(p.pinned, parseKey(s))
			}
			p.chargeLabels = nil
			if err := json.Unmarshal([]byte(p.obj.Annotations[v1alpha1.AdmittedLabelsAnnotation]), &p.chargeLabels); err != nil {
				w.failed = fmt.Errorf("%s: admitted-labels %q: %w", p.obj.Name, p.obj.Annotations[v1alpha1.AdmittedLabelsAnnotation], err)
			}
		case p.obj.Annotations[v1alpha1.AdmittedLabelsAnnotation] != "":
			// Run without an admission (created ungated, ungated by someone else),
			// its charge labels recorded by a manager that saw it running: covered by
			// them, whatever the labels are now.
			p.state, p.chargeLabels = mRunning, nil
			if err := json.Unmarshal([]byte(p.obj.Annotations[v1alpha1.AdmittedLabelsAnnotation]), &p.chargeLabels); err != nil {
				w.failed = fmt.Errorf("%s: admitted-labels %q: %w", p.obj.Name, p.obj.Annotations[v1alpha1.AdmittedLabelsAnnotation], err)
			}
			p.pinned = w.cover(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.obj.Namespace, Labels: p.chargeLabels}})
		case first.Gated:
			// First seen gated, then running (the catch-up read), ungated by no
			// manager: pinned where it is covered now.
			p.state, p.pinned, p.chargeLabels = mRunning, w.cover(p.obj), maps.Clone(p.obj.Labels)
		default:
			// First seen running, with the labels of that view.
			p.state = mRunning
			p.pinned = w.cover(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: first.Namespace, Labels: first.Labels}})
			p.chargeLabels = maps.Clone(first.Labels)
		}
	}
}
