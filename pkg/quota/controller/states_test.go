package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
)

// getStatus reads a Budget (namespace set) or ClusterBudget (namespace "") status.
func getStatus(t *testing.T, ns, name string) v1alpha1.BudgetStatus {
	t.Helper()
	if ns == "" {
		cb := &v1alpha1.ClusterBudget{}
		if err := admin.Get(t.Context(), client.ObjectKey{Name: name}, cb); err != nil {
			t.Fatalf("getting ClusterBudget %s: %v", name, err)
		}
		return cb.Status
	}
	b := &v1alpha1.Budget{}
	if err := admin.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
		t.Fatalf("getting Budget %s/%s: %v", ns, name, err)
	}
	return b.Status
}

func waitForState(t *testing.T, ns, name string, state v1alpha1.BudgetState, reason string) {
	t.Helper()
	testbed.Poll(t, 2*time.Minute, fmt.Sprintf("%s/%s to be %s (%s)", ns, name, state, reason), func(context.Context) (bool, error) {
		st := getStatus(t, ns, name)
		ready := apimeta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
		return st.State == state && (reason == "" || (ready != nil && ready.Reason == reason)), nil
	})
}

func setBudgetState(t *testing.T, obj client.Object, state v1alpha1.BudgetState) {
	t.Helper()
	raw := fmt.Sprintf(`{"spec":{"state":%q}}`, state)
	if err := admin.Patch(t.Context(), obj, client.RawPatch("application/merge-patch+json", []byte(raw))); err != nil {
		t.Fatalf("setting state %s: %v", state, err)
	}
}

func clusterBudget(name, parent string, hard corev1.ResourceList) *v1alpha1.ClusterBudget {
	return &v1alpha1.ClusterBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.ClusterBudgetSpec{BudgetSpec: v1alpha1.BudgetSpec{Hard: hard, Parent: parent}},
	}
}

func createClusterBudgets(t *testing.T, cbs ...*v1alpha1.ClusterBudget) {
	t.Helper()
	for _, cb := range cbs {
		mustCreate(t, cb)
		t.Cleanup(func() { _ = admin.Delete(context.Background(), cb) })
	}
}

// Closing a busy budget: Closing while its admitted pods run, Closed once they finish;
// nothing is admitted meanwhile; re-opening admits again.
func TestCloseBusyBudgetThenReopen(t *testing.T) {
	ns := newNamespace(t, true)
	b := budget(ns, "b", cpu("2"), "")
	mustCreate(t, b)
	startManager(t, nil, false)
	// The running pods end when the test ends them, not after a time that a loaded
	// machine could let pass before the Closing state is seen.
	for i := range 2 {
		mustCreate(t, gatedJob(ns, "run-"+podName(i), "1", 1, "1h", ""))
	}
	testbed.Poll(t, time.Minute, "two pods admitted", func(context.Context) (bool, error) {
		_, u := countGated(t, ns)
		return u == 2, nil
	})
	setBudgetState(t, b, v1alpha1.StateClosed)
	waitForState(t, ns, "b", v1alpha1.StateClosing, v1alpha1.ReasonClosed)
	mustCreate(t, gatedJob(ns, "waits", "1", 1, "1s", ""))
	for i := range 2 {
		err := clientset.BatchV1().Jobs(ns).Delete(t.Context(), "run-"+podName(i),
			metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
		if err != nil {
			t.Fatalf("ending the running job: %v", err)
		}
	}
	waitForState(t, ns, "b", v1alpha1.StateClosed, v1alpha1.ReasonClosed)
	waitForWaitingEvent(t, ns, jobPod(t, ns, "waits"), "BudgetClosed")
	if g, _ := countGated(t, ns); g != 1 {
		t.Fatalf("%d pods gated in a Closed budget, want 1", g)
	}
	setBudgetState(t, b, v1alpha1.StateOpen)
	waitForState(t, ns, "b", v1alpha1.StateOpen, v1alpha1.ReasonActive)
	testbed.Poll(t, time.Minute, "the waiting pod admitted after re-opening", func(context.Context) (bool, error) {
		g, _ := countGated(t, ns)
		return g == 0, nil
	})
}

// A two-level hierarchy where the parent, not the child, is the binding limit; the
// parent's status shows its whole subtree's usage.
func TestParentIsTheBindingLimit(t *testing.T) {
	ns := newNamespace(t, true)
	parent := fmt.Sprintf("dept-%d", nsCounter.Add(1))
	createClusterBudgets(t, clusterBudget(parent, "", cpu("2")))
	child := budget(ns, "team", cpu("10"), "")
	child.Spec.Parent = parent
	mustCreate(t, child)
	startManager(t, nil, false)
	for i := range 4 {
		mustCreate(t, gatedPod(ns, podName(i), "1"))
	}
	testbed.Poll(t, time.Minute, "the parent's status: 2 admitted, 2 gated", func(context.Context) (bool, error) {
		st := getStatus(t, "", parent)
		used := st.Used["requests.cpu"]
		return st.AdmittedPods == 2 && st.GatedPods == 2 && used.String() == "2", nil
	})
	if g, u := countGated(t, ns); g != 2 || u != 2 {
		t.Errorf("gated/admitted = %d/%d, want 2/2 (the parent allows 2 CPUs)", g, u)
	}
	ev := waitForWaitingEvent(t, ns, "", "InsufficientQuota")
	if want := "ClusterBudget " + parent; !strings.Contains(ev.Message, want) {
		t.Errorf("wait reason %q does not name %q", ev.Message, want)
	}
}

// Closing the parent closes its children (ClosedByParent); re-opening it restores each
// child to its own spec.state.
func TestClosingParentClosesChildren(t *testing.T) {
	ns := newNamespace(t, true)
	parentName := fmt.Sprintf("org-%d", nsCounter.Add(1))
	parent := clusterBudget(parentName, "", cpu("10"))
	createClusterBudgets(t, parent)
	open := budget(ns, "open", cpu("5"), "")
	open.Spec.Parent = parentName
	closed := budget(ns, "closed", cpu("5"), "")
	closed.Spec.Parent = parentName
	closed.Spec.State = v1alpha1.StateClosed
	mustCreate(t, open, closed)
	startManager(t, nil, false)
	waitForState(t, ns, "open", v1alpha1.StateOpen, v1alpha1.ReasonActive)
	waitForState(t, ns, "closed", v1alpha1.StateClosed, v1alpha1.ReasonClosed)

	setBudgetState(t, parent, v1alpha1.StateClosed)
	waitForState(t, "", parentName, v1alpha1.StateClosed, v1alpha1.ReasonClosed)
	waitForState(t, ns, "open", v1alpha1.StateClosed, v1alpha1.ReasonClosedByParent)

	setBudgetState(t, parent, v1alpha1.StateOpen)
	waitForState(t, ns, "open", v1alpha1.StateOpen, v1alpha1.ReasonActive)
	waitForState(t, ns, "closed", v1alpha1.StateClosed, v1alpha1.ReasonClosed)
}

// A cycle in parents is reported on every budget in it, and they admit nothing; a
// ClusterBudget naming itself is refused by the API server.
func TestParentCycleIsReported(t *testing.T) {
	a := fmt.Sprintf("cyc-a-%d", nsCounter.Add(1))
	b := fmt.Sprintf("cyc-b-%d", nsCounter.Add(1))
	self := clusterBudget("self-"+a, "self-"+a, cpu("1"))
	if err := admin.Create(t.Context(), self); err == nil || !strings.Contains(err.Error(), "cannot name itself as parent") {
		t.Errorf("creating a self-parented ClusterBudget: err = %v, want a refusal naming the rule", err)
	}
	createClusterBudgets(t, clusterBudget(a, b, cpu("1")), clusterBudget(b, a, cpu("1")))
	startManager(t, nil, false)
	waitForState(t, "", a, v1alpha1.StateClosed, v1alpha1.ReasonParentCycle)
	waitForState(t, "", b, v1alpha1.StateClosed, v1alpha1.ReasonParentCycle)
}

// A group of 4 waits while only 3 fit, and is admitted in one step when room appears.
func TestGroupIsAdmittedAllTogether(t *testing.T) {
	ns := newNamespace(t, true)
	w := watchAdmissions(t, ns, "4")
	mustCreate(t, budget(ns, "b", cpu("4"), ""))
	startManager(t, nil, false)
	blocker := gatedPod(ns, "blocker", "1")
	mustCreate(t, blocker)
	testbed.Poll(t, time.Minute, "the blocker admitted", func(context.Context) (bool, error) { return !isGated(t, ns, "blocker"), nil })
	for i := range 4 {
		mustCreate(t, groupPod(ns, podName(i), "g1", 4))
	}
	ev := waitForWaitingEvent(t, ns, "", "InsufficientQuota")
	if !strings.Contains(ev.Message, "group g1") {
		t.Errorf("wait reason %q does not name the group", ev.Message)
	}
	if g, _ := countGated(t, ns); g != 4 {
		t.Fatalf("%d of the group's 4 pods gated with room for 3, want 4", g)
	}
	if err := admin.Delete(t.Context(), blocker, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	testbed.Poll(t, time.Minute, "the whole group admitted", func(context.Context) (bool, error) {
		g, _ := countGated(t, ns)
		return g == 0, nil
	})
	w.waitForAdmissions(t, 5)
	if order := w.check(t); len(order) != 5 {
		t.Errorf("admitted %v, want the blocker and the 4 members", order)
	}
}

// A group larger than the budget's hard can never fit, and says so.
func TestGroupLargerThanHardNeverFits(t *testing.T) {
	ns := newNamespace(t, true)
	mustCreate(t, budget(ns, "b", cpu("3"), ""))
	startManager(t, nil, false)
	for i := range 4 {
		mustCreate(t, groupPod(ns, podName(i), "g1", 4))
	}
	ev := waitForWaitingEvent(t, ns, "", "RequestsExceedHard")
	if !strings.Contains(ev.Message, "group g1") || !strings.Contains(ev.Message, "never fit") {
		t.Errorf("wait reason %q does not say the group can never fit", ev.Message)
	}
	if g, _ := countGated(t, ns); g != 4 {
		t.Errorf("%d of 4 members gated, want 4", g)
	}
}

// Two groups that each only half-fit do not deadlock: one is admitted whole, the other
// waits whole.
func TestTwoHalfFittingGroupsDoNotDeadlock(t *testing.T) {
	ns := newNamespace(t, true)
	mustCreate(t, budget(ns, "b", cpu("3"), ""))
	for i := range 2 {
		mustCreate(t, groupPod(ns, "a-"+podName(i), "ga", 2), groupPod(ns, "b-"+podName(i), "gb", 2))
	}
	startManager(t, nil, false)
	testbed.Poll(t, time.Minute, "one whole group admitted", func(context.Context) (bool, error) {
		_, u := countGated(t, ns)
		return u == 2, nil
	})
	admitted := map[string]int{}
	for _, p := range podsOf(t, ns) {
		if !isGated(t, ns, p.Name) {
			admitted[p.Labels[v1alpha1.GroupLabel]]++
		}
	}
	if len(admitted) != 1 {
		t.Errorf("admitted members by group = %v, want both members of one group", admitted)
	}
}

func groupPod(ns, name, group string, size int) *corev1.Pod {
	p := gatedPod(ns, name, "1")
	p.Labels = map[string]string{v1alpha1.GroupLabel: group}
	p.Annotations = map[string]string{v1alpha1.GroupSizeAnnotation: fmt.Sprint(size)}
	return p
}

// jobPod returns the name of a Job's pod, once it exists.
func jobPod(t *testing.T, ns, job string) string {
	t.Helper()
	var name string
	testbed.Poll(t, time.Minute, "the pod of Job "+job, func(context.Context) (bool, error) {
		for _, p := range podsOf(t, ns) {
			if p.Labels[batchv1.JobNameLabel] == job {
				name = p.Name
				return true, nil
			}
		}
		return false, nil
	})
	return name
}
