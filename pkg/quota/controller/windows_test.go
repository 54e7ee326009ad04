package controller

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// windowWorld is a controller fed by hand, on a fake clock: a namespace "team" with a
// Budget "b" of 2 CPUs, and n gated pods of 1 CPU each.
func windowWorld(t *testing.T, n int) (*Controller, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC))
	opts := DefaultOptions()
	opts.Clock = clk
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	c.onNamespace(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{v1alpha1.EnabledLabel: "true"}}})
	c.onBudget(&v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "b"},
		Spec: v1alpha1.BudgetSpec{Hard: corev1.ResourceList{"requests.cpu": resource.MustParse("2")}}})
	for i := range n {
		addGatedPod(c, i)
	}
	return c, clk
}

func addGatedPod(c *Controller, i int) {
	c.onPod(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: fmt.Sprintf("p%d", i), UID: types.UID(fmt.Sprintf("u%d", i)), ResourceVersion: "1",
			CreationTimestamp: metav1.NewTime(time.Date(2026, 12, 5, 9, 0, i, 0, time.UTC))},
		Spec: corev1.PodSpec{
			SchedulingGates: []corev1.PodSchedulingGate{{Name: v1alpha1.SchedulingGate}},
			Containers:      []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
		},
	}, false)
}

// admit admits what the core admits now and returns the pods' names.
func admit(c *Controller) []string {
	var names []string
	for _, a := range c.core.Admit() {
		names = append(names, a.Pod.Name)
		c.core.Done(a.Pod.UID, quota.Ungated, "")
	}
	return names
}

func hardCPU(t *testing.T, c *Controller) string {
	t.Helper()
	st, ok := c.core.Reader().Status(quota.BudgetKey{Namespace: "team", Name: "b"})
	if !ok {
		t.Fatal("budget team/b unknown to the core")
	}
	q := st.Hard["requests.cpu"]
	return q.String()
}

func doubling(start, end time.Time) *v1alpha1.BudgetWindow {
	s, e := metav1.NewTime(start), metav1.NewTime(end)
	return &v1alpha1.BudgetWindow{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "double"},
		Spec: v1alpha1.BudgetWindowSpec{BudgetName: "b", Start: &s, End: &e,
			Add: corev1.ResourceList{"requests.cpu": resource.MustParse("2")}}}
}

// TestWindowEdgesFeedTheCore: a window that adds 2 CPUs to a Budget of 2 from 10 s
// ahead for 30 s admits two more queued pods at its start, and at its end holds: nothing
// is taken back, and a new pod waits while used (4) is over the written hard (2).
func TestWindowEdgesFeedTheCore(t *testing.T) {
	c, clk := windowWorld(t, 4)
	if diff := cmp.Diff([]string{"p0", "p1"}, admit(c)); diff != "" {
		t.Fatalf("admitted before the window (-want +got):\n%s", diff)
	}
	start := clk.Now().Add(10 * time.Second)
	end := start.Add(30 * time.Second)
	c.onWindow(doubling(start, end))
	if got := admit(c); len(got) != 0 {
		t.Fatalf("admitted %v before the window opened", got)
	}
	open, next := c.windows.budgetStatus(quota.BudgetKey{Namespace: "team", Name: "b"})
	if len(open) != 0 || next == nil || !next.Time.Equal(start) {
		t.Errorf("before the start: activeWindows %v, nextWindowChange %v; want none and %v", open, next, start)
	}
	if edge, ok := c.windows.nextEdge(); !ok || !edge.Equal(start) {
		t.Errorf("timer armed for %v (%v), want the start %v", edge, ok, start)
	}

	clk.SetTime(start)
	c.windows.due(clk.Now())
	if got := hardCPU(t, c); got != "4" {
		t.Errorf("hard while open = %s, want 4", got)
	}
	if diff := cmp.Diff([]string{"p2", "p3"}, admit(c)); diff != "" {
		t.Errorf("admitted at the start (-want +got):\n%s", diff)
	}
	open, next = c.windows.budgetStatus(quota.BudgetKey{Namespace: "team", Name: "b"})
	if diff := cmp.Diff([]string{"double"}, open); diff != "" || next == nil || !next.Time.Equal(end) {
		t.Errorf("while open: activeWindows %v (diff %s), nextWindowChange %v; want [double] and %v", open, diff, next, end)
	}

	clk.SetTime(end)
	c.windows.due(clk.Now())
	if got := hardCPU(t, c); got != "2" {
		t.Errorf("hard after the end = %s, want 2 as written", got)
	}
	addGatedPod(c, 4)
	if got := admit(c); len(got) != 0 {
		t.Errorf("admitted %v after the end while used 4 is over hard 2", got)
	}
	if p := c.core.Preemptions(); len(p) != 0 {
		t.Errorf("the end of a Hold window evicts %v; want none", p)
	}
	st, _ := c.core.Reader().Status(quota.BudgetKey{Namespace: "team", Name: "b"})
	if used := st.Used["requests.cpu"]; used.Cmp(resource.MustParse("4")) != 0 {
		t.Errorf("used after the end = %s, want the 4 running pods", used.String())
	}
	open, next = c.windows.budgetStatus(quota.BudgetKey{Namespace: "team", Name: "b"})
	if len(open) != 0 || next != nil {
		t.Errorf("after the end: activeWindows %v, nextWindowChange %v; want none", open, next)
	}
}

// TestDeletedWindowRestoresTheBudget: a window deleted while open leaves the budget as
// written, and a window naming a budget that does not exist changes nothing.
func TestDeletedWindowRestoresTheBudget(t *testing.T) {
	c, clk := windowWorld(t, 0)
	w := doubling(clk.Now().Add(-time.Second), clk.Now().Add(time.Hour))
	c.onWindow(w)
	if got := hardCPU(t, c); got != "4" {
		t.Fatalf("hard while open = %s, want 4", got)
	}
	other := w.DeepCopy()
	other.Name, other.Spec.BudgetName = "elsewhere", "missing"
	c.onWindow(other)
	c.budgetWindowHandler().OnDelete(w)
	if got := hardCPU(t, c); got != "2" {
		t.Errorf("hard after the open window was deleted = %s, want 2 as written", got)
	}
	if _, ok := c.core.Reader().Status(quota.BudgetKey{Namespace: "team", Name: "missing"}); ok {
		t.Error("a window naming a missing budget created it in the core")
	}
	v := c.windows.view(windowRef{Namespace: "team", Name: "elsewhere"})
	if v.problem == nil || v.problem.Reason != v1alpha1.ReasonBudgetNotFound {
		t.Errorf("the window naming a missing budget reports %+v, want %s", v.problem, v1alpha1.ReasonBudgetNotFound)
	}
}

// reclaimWindow is the window "double" with endPolicy Reclaim, ended at end after
// being open for 30 s.
func reclaimWindow(end time.Time) *v1alpha1.BudgetWindow {
	w := doubling(end.Add(-30*time.Second), end)
	w.Spec.EndPolicy = v1alpha1.WindowEndReclaim
	return w
}

// reclaimWindowEnded is windowWorld of four pods, two admitted before reclaimWindow
// opens a second later and two in it, with the clock at the window's end and the
// core's pass after it done.
func reclaimWindowEnded(t *testing.T) (*Controller, *clocktesting.FakeClock) {
	t.Helper()
	c, clk := windowWorld(t, 4)
	if got := admit(c); len(got) != 2 {
		t.Fatalf("admitted %v before the window, want two", got)
	}
	end := clk.Now().Add(31 * time.Second)
	c.onWindow(reclaimWindow(end))
	clk.SetTime(end.Add(-30 * time.Second))
	c.windows.due(clk.Now())
	if got := admit(c); len(got) != 2 {
		t.Fatalf("admitted %v when the window opened, want the other two", got)
	}
	clk.SetTime(end)
	c.windows.due(clk.Now())
	admit(c)
	return c, clk
}

// TestReclaimWindowEndEvictsBackToHard: TestWindowEdgesFeedTheCore's window with
// endPolicy Reclaim takes the budget back to its written hard at its end: the two pods
// admitted in it go, through the core's preemptions; deleting an open Reclaim window
// evicts nothing (it ends with Hold), and a window that opens again stops a reclaim
// under way.
func TestReclaimWindowEndEvictsBackToHard(t *testing.T) {
	c, clk := reclaimWindowEnded(t)
	end := clk.Now()
	var victims []string
	for _, p := range c.core.Preemptions() {
		if p.Reason != quota.PreemptWindowEnd || !strings.HasPrefix(p.VictimMessage, "window double ended with endPolicy Reclaim") {
			t.Errorf("preemption %+v is not the window end's", p)
		}
		victims = append(victims, p.Victim.Name)
	}
	slices.Sort(victims)
	if diff := cmp.Diff([]string{"p2", "p3"}, victims); diff != "" {
		t.Fatalf("victims at the end (-want +got):\n%s", diff)
	}

	// The window opens again (it was moved on): the reclaim stops, the victims are
	// spared.
	again := doubling(end, end.Add(time.Hour))
	again.Name = "again"
	c.onWindow(again)
	for _, v := range victims {
		if c.core.PreemptionNeeded(types.UID("u" + v[1:])) {
			t.Errorf("%s is still to be evicted while a window is open again", v)
		}
	}
	// Deleted while open, the Reclaim-free window "again" ends with Hold: nothing goes.
	c.budgetWindowHandler().OnDelete(again)
	admit(c)
	if p := c.core.Preemptions(); len(p) != 0 {
		t.Errorf("deleting an open window evicted %v", p)
	}
}

// TestReclaimResumesAfterRestart: a manager that starts after a Reclaim window ended,
// while the budget's status says the reclaim is not finished, takes it up: its core
// evicts back to hard. One that finds no such status evicts nothing (the budget holds).
func TestReclaimResumesAfterRestart(t *testing.T) {
	c, clk := reclaimWindowEnded(t)
	key := quota.BudgetKey{Namespace: "team", Name: "b"}
	st, _ := c.core.Reader().Status(key)
	written := &v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "b"},
		Spec: v1alpha1.BudgetSpec{Hard: corev1.ResourceList{"requests.cpu": resource.MustParse("2")}}}
	applyStatus(&written.Status, st, "team", 1, metav1.NewTime(clk.Now()))
	if written.Status.ReclaimingAfterWindow != "double" {
		t.Fatalf("the status written during the reclaim says %q, want double", written.Status.ReclaimingAfterWindow)
	}

	for name, status := range map[string]v1alpha1.BudgetStatus{"resumes": written.Status, "holds": {}} {
		t.Run(name, func(t *testing.T) {
			opts := DefaultOptions()
			opts.Clock = clk
			next, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			next.onNamespace(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{v1alpha1.EnabledLabel: "true"}}})
			b := written.DeepCopy()
			b.Status = status
			next.onBudget(b)
			next.onWindow(reclaimWindow(clk.Now()))
			for i := range 4 { // all four run: the old manager's victims were not evicted yet
				next.onPod(windowPodRunning(i), false)
			}
			admit(next)
			var victims []string
			for _, p := range next.core.Preemptions() {
				if p.Reason != quota.PreemptWindowEnd {
					t.Errorf("preemption %+v is not the window end's", p)
				}
				victims = append(victims, p.Victim.Name)
			}
			want := 2
			if name == "holds" {
				want = 0
			}
			if len(victims) != want {
				t.Errorf("the new manager chose %v, want %d victims", victims, want)
			}
		})
	}
}

// windowPodRunning is pod i of windowWorld, ungated and running.
func windowPodRunning(i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: fmt.Sprintf("p%d", i), UID: types.UID(fmt.Sprintf("u%d", i)), ResourceVersion: "2",
			CreationTimestamp: metav1.NewTime(time.Date(2026, 12, 5, 9, 0, i, 0, time.UTC))},
		Spec: corev1.PodSpec{
			NodeName:   "node",
			Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}
