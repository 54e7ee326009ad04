package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/quota/controller"
)

func budgetWindow(ns, name, budgetName string, spec v1alpha1.BudgetWindowSpec) *v1alpha1.BudgetWindow {
	spec.BudgetName = budgetName
	return &v1alpha1.BudgetWindow{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
}

func absoluteWindow(start, end time.Time) v1alpha1.BudgetWindowSpec {
	s, e := metav1.NewTime(start), metav1.NewTime(end)
	return v1alpha1.BudgetWindowSpec{Start: &s, End: &e}
}

// hardIs says the requests.cpu of hard is v.
func hardIs(hard corev1.ResourceList, v string) bool {
	q, ok := hard["requests.cpu"]
	return ok && q.Cmp(resource.MustParse(v)) == 0
}

func windowStatus(t *testing.T, ns, name string) v1alpha1.BudgetWindowStatus {
	t.Helper()
	w := &v1alpha1.BudgetWindow{}
	if err := admin.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, w); err != nil {
		t.Fatalf("getting BudgetWindow %s/%s: %v", ns, name, err)
	}
	return w.Status
}

// TestWindowDoublesBudgetThenHolds: a window that starts 10 s ahead doubles a Budget
// of 2 CPUs for 30 s. Two of four queued pods run before it; the other two are admitted
// soon after its start (the delay from the edge to the first ungate is logged); at its
// end nothing is evicted, and a new pod waits while used (4) is over the written hard.
func TestWindowDoublesBudgetThenHolds(t *testing.T) {
	ns := newNamespace(t, true)
	mustCreate(t, budget(ns, "b", cpu("2"), ""))
	startManager(t, nil, false)
	for i := range 4 {
		mustCreate(t, gatedJob(ns, "run-"+podName(i), "1", 1, "1h", ""))
	}
	testbed.Poll(t, time.Minute, "two pods admitted", func(context.Context) (bool, error) {
		_, u := countGated(t, ns)
		return u == 2, nil
	})
	// Whole seconds: the API keeps a time to the second.
	start := time.Now().Add(10 * time.Second).Truncate(time.Second)
	end := start.Add(30 * time.Second)
	double := absoluteWindow(start, end)
	double.Add = cpu("2")
	mustCreate(t, budgetWindow(ns, "double", "b", double))

	testbed.Poll(t, time.Minute, "nextWindowChange at the start", func(context.Context) (bool, error) {
		st := getStatus(t, ns, "b")
		return st.NextWindowChange != nil && st.NextWindowChange.Time.Equal(start), nil
	})
	if _, u := countGated(t, ns); u != 2 {
		t.Fatalf("%d pods admitted before the window opened, want 2", u)
	}
	testbed.PollEvery(t, 20*time.Millisecond, time.Minute, "a third pod admitted", func(context.Context) (bool, error) {
		_, u := countGated(t, ns)
		return u >= 3, nil
	})
	seen := time.Now()
	t.Logf("first ungate seen %v after the window's start (poll every 20 ms)", seen.Sub(start))
	if seen.Before(start) {
		t.Fatalf("a pod was admitted %v before the window opened", start.Sub(seen))
	}
	testbed.Poll(t, time.Minute, "four pods admitted", func(context.Context) (bool, error) {
		_, u := countGated(t, ns)
		return u == 4, nil
	})
	// The status is written apart from the admissions (and may trail them on a busy
	// machine): it must show the window while it is open.
	var st v1alpha1.BudgetStatus
	if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, time.Until(end)-time.Second, true, func(context.Context) (bool, error) {
		st = getStatus(t, ns, "b")
		h := st.Hard["requests.cpu"]
		return h.Cmp(resource.MustParse("4")) == 0 && fmt.Sprint(st.ActiveWindows) == "[double]" && st.NextWindowChange != nil && st.NextWindowChange.Time.Equal(end), nil
	}); err != nil {
		h := st.Hard["requests.cpu"]
		t.Errorf("while open: status.hard %s, activeWindows %v, nextWindowChange %v; want 4, [double] and %v", h.String(), st.ActiveWindows, st.NextWindowChange, end)
	}
	waitForWaitingEvent(t, ns, "b", v1alpha1.EventWindowStarted)
	if ws := windowStatus(t, ns, "double"); !ws.Open {
		t.Errorf("the window's status.open is false while it is open")
	}

	testbed.Poll(t, time.Minute, "the window's end", func(context.Context) (bool, error) {
		st := getStatus(t, ns, "b")
		return len(st.ActiveWindows) == 0 && hardIs(st.Hard, "2"), nil
	})
	waitForWaitingEvent(t, ns, "b", v1alpha1.EventWindowEnded)
	mustCreate(t, gatedJob(ns, "after", "1", 1, "1h", ""))
	waitForWaitingEvent(t, ns, jobPod(t, ns, "after"), "InsufficientQuota")
	g, u := countGated(t, ns)
	if g != 1 || u != 4 {
		t.Errorf("after the end: %d gated and %d admitted, want 1 and the 4 running (Hold evicts nothing)", g, u)
	}
	if st := getStatus(t, ns, "b"); st.AdmittedPods != 4 || st.NextWindowChange != nil {
		t.Errorf("after the end: admittedPods %d, nextWindowChange %v; want 4 and none", st.AdmittedPods, st.NextWindowChange)
	}
}

// TestWindowProblemsOnConditions: a window with an unknown time zone, and one naming a
// budget that does not exist, are Ready=False with their reason and change nothing.
func TestWindowProblemsOnConditions(t *testing.T) {
	ns := newNamespace(t, true)
	mustCreate(t, budget(ns, "b", cpu("2"), ""))
	startManager(t, nil, false)
	zone := v1alpha1.BudgetWindowSpec{Schedule: "* * * * *", Duration: &metav1.Duration{Duration: time.Hour},
		TimeZone: "Europe/Atlantis", Hard: cpu("8")}
	mustCreate(t, budgetWindow(ns, "atlantis", "b", zone))
	open := absoluteWindow(time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	open.Hard = cpu("8")
	mustCreate(t, budgetWindow(ns, "nobudget", "missing", open))
	for name, reason := range map[string]string{"atlantis": v1alpha1.ReasonUnknownTimeZone, "nobudget": v1alpha1.ReasonBudgetNotFound} {
		testbed.Poll(t, time.Minute, name+" Ready=False "+reason, func(context.Context) (bool, error) {
			ws := windowStatus(t, ns, name)
			c := apimeta.FindStatusCondition(ws.Conditions, v1alpha1.ConditionReady)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason && !ws.Open, nil
		})
	}
	// The budget's status is written apart from the windows' conditions, and may come
	// after them: wait for it, then check what it says.
	var st v1alpha1.BudgetStatus
	testbed.Poll(t, time.Minute, "the budget's status.hard", func(context.Context) (bool, error) {
		st = getStatus(t, ns, "b")
		return len(st.Hard) > 0, nil
	})
	if !hardIs(st.Hard, "2") || len(st.ActiveWindows) != 0 {
		t.Errorf("the budget with a broken window: hard %v, activeWindows %v; want 2 as written and none", st.Hard, st.ActiveWindows)
	}
}

// TestDeletedWindowRestoresBudgetAsWritten: deleting an open window puts the budget
// back as written, and the Budget object itself was never changed.
func TestDeletedWindowRestoresBudgetAsWritten(t *testing.T) {
	ns := newNamespace(t, true)
	b := budget(ns, "b", cpu("2"), "")
	mustCreate(t, b)
	startManager(t, nil, false)
	open := absoluteWindow(time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	open.Hard = cpu("8")
	w := budgetWindow(ns, "big", "b", open)
	mustCreate(t, w)
	testbed.Poll(t, time.Minute, "hard 8 while the window is open", func(context.Context) (bool, error) {
		return hardIs(getStatus(t, ns, "b").Hard, "8"), nil
	})
	if err := admin.Delete(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	testbed.Poll(t, time.Minute, "hard 2 as written once the window is deleted", func(context.Context) (bool, error) {
		st := getStatus(t, ns, "b")
		return hardIs(st.Hard, "2") && len(st.ActiveWindows) == 0, nil
	})
	got := &v1alpha1.Budget{}
	if err := admin.Get(t.Context(), client.ObjectKeyFromObject(b), got); err != nil {
		t.Fatal(err)
	}
	if got.Generation != 1 || !hardIs(got.Spec.Hard, "2") {
		t.Errorf("the Budget's spec was written: generation %d, hard %v", got.Generation, got.Spec.Hard)
	}
}

// TestReclaimWindowEvictsBackToHard: a window with endPolicy Reclaim doubles a Budget of
// 2 CPUs for 30 s; four pods of 1 CPU are admitted one at a time while it is open. At
// its end the budget evicts back to its hard: the most recently admitted go first, but
// the last one's PodDisruptionBudget refuses, so the one admitted before it goes in its
// place (the refusal is counted; the protected pod gets no event, as when a reclaim of
// lent quota finds another victim). The oldest pod and the protected one run on.
func TestReclaimWindowEvictsBackToHard(t *testing.T) {
	ns := newNamespace(t, true)
	mustCreate(t, budget(ns, "b", cpu("2"), ""))
	reg := prometheus.NewRegistry()
	startManager(t, func(o *controller.Options) { o.Registerer = reg }, false)
	end := openReclaimWindow(t, ns)
	testbed.Poll(t, time.Minute, "the window counted open", func(context.Context) (bool, error) {
		return windowsOpen(t, reg, ns, "b") == 1, nil
	})
	runInWindow(t, ns, end, noDisruption(ns, "protected", 1), 1, "team", "team", "team", "protected")

	testbed.Poll(t, 2*time.Minute, "the budget back within its hard", func(context.Context) (bool, error) {
		var left []string
		for _, p := range podsOf(t, ns) {
			if p.DeletionTimestamp == nil {
				left = append(left, p.Name)
			}
		}
		slices.Sort(left)
		return slices.Equal(left, []string{"p0", "p3"}), nil
	})
	for _, victim := range []string{"p1", "p2"} {
		ev := waitForWaitingEvent(t, ns, victim, "Preempted")
		if !strings.Contains(ev.Message, "window double ended with endPolicy Reclaim") {
			t.Errorf("%s's Preempted event does not say the window ended: %q", victim, ev.Message)
		}
	}
	testbed.Poll(t, time.Minute, "used back at 2, no window counted open, the reclaim over", func(context.Context) (bool, error) {
		st := getStatus(t, ns, "b")
		u := st.Used["requests.cpu"]
		return hardIs(st.Hard, "2") && u.Cmp(resource.MustParse("2")) == 0 && windowsOpen(t, reg, ns, "b") == 0 && st.ReclaimingAfterWindow == "", nil
	})
	if got := preemptionCounter(t, reg, "quotagate_preemptions_total", quota.PreemptWindowEnd); got != 2 {
		t.Errorf("quotagate_preemptions_total{reason=WindowEnd} = %v, want 2", got)
	}
	// p3 was chosen first and refused: another went in its place, so it has no event.
	if got := preemptionCounter(t, reg, "quotagate_preemption_attempts_failed_total", quota.PreemptWindowEnd); got < 1 {
		t.Errorf("quotagate_preemption_attempts_failed_total{reason=WindowEnd} = %v, want p3's refusal counted", got)
	}
	// Within its hard, the reclaim is done: a new pod waits, nothing more is evicted.
	mustCreate(t, familyPod(ns, "after", "team", "none"))
	waitForWaitingEvent(t, ns, "after", "InsufficientQuota")
	if n := running(t, ns); n != 2 {
		t.Errorf("%d pods run after the reclaim, want p0 and p3", n)
	}
}

// openReclaimWindow opens window "double" on Budget ns/b (2 CPUs as written): 2 CPUs
// more for 30 s from now, with endPolicy Reclaim. It waits for the budget's status to
// show it, and returns the window's end.
func openReclaimWindow(t *testing.T, ns string) time.Time {
	t.Helper()
	start := time.Now().Truncate(time.Second)
	end := start.Add(30 * time.Second)
	double := absoluteWindow(start, end)
	double.Add, double.EndPolicy = cpu("2"), v1alpha1.WindowEndReclaim
	mustCreate(t, budgetWindow(ns, "double", "b", double))
	testbed.Poll(t, time.Minute, "the window open", func(context.Context) (bool, error) {
		return hardIs(getStatus(t, ns, "b").Hard, "4"), nil
	})
	return end
}

// noDisruption is a PodDisruptionBudget of ns that keeps minAvailable of the pods
// labelled app.
func noDisruption(ns, app string, minAvailable int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: new(intstr.FromInt32(minAvailable)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		},
	}
}

// runInWindow creates pdb, then pods p0, p1, ... of 1 CPU labelled app=apps[i], each
// admitted before the next is created, waits until pdb counts healthy pods and allows
// no disruption, and fails if the pods ran only after the window's end.
func runInWindow(t *testing.T, ns string, end time.Time, pdb *policyv1.PodDisruptionBudget, healthy int32, apps ...string) {
	t.Helper()
	mustCreate(t, pdb)
	for i, app := range apps {
		name := fmt.Sprintf("p%d", i)
		mustCreate(t, familyPod(ns, name, app, "none"))
		testbed.Poll(t, time.Minute, name+" admitted", func(context.Context) (bool, error) { return !isGated(t, ns, name), nil })
	}
	waitPDB(t, pdb, healthy, 0)
	if time.Now().After(end) {
		t.Fatalf("the pods ran only after the window's end; the test needs a longer window")
	}
}

// windowsOpen is quotagate_budget_windows_open of Budget ns/name in reg (-1: no series).
func windowsOpen(t *testing.T, reg *prometheus.Registry, ns, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "quotagate_budget_windows_open" {
			continue
		}
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if got["kind"] == "Budget" && got["namespace"] == ns && got["name"] == name {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

// TestReclaimResumesAfterManagerRestart: a window with endPolicy Reclaim doubles a
// Budget of 2 CPUs; four pods of 1 CPU run in it, all under a PodDisruptionBudget that
// allows no disruption, so at the window's end every eviction is refused and the
// budget stays over its hard, its status naming the window. The manager stops; the
// PodDisruptionBudget goes; a new manager, which never saw the window end, takes the
// reclaim up from the status and evicts back to hard.
func TestReclaimResumesAfterManagerRestart(t *testing.T) {
	ns := newNamespace(t, true)
	mustCreate(t, budget(ns, "b", cpu("2"), ""))
	first := startManager(t, nil, false)
	end := openReclaimWindow(t, ns)
	pdb := noDisruption(ns, "team", 4)
	runInWindow(t, ns, end, pdb, 4, "team", "team", "team", "team")
	testbed.Poll(t, 2*time.Minute, "the reclaim under way, refused, in the status", func(context.Context) (bool, error) {
		st := getStatus(t, ns, "b")
		return hardIs(st.Hard, "2") && st.ReclaimingAfterWindow == "double", nil
	})
	first.stop(t)
	if n := running(t, ns); n != 4 {
		t.Fatalf("%d pods run when the first manager stops, want all four (every eviction refused)", n)
	}

	if err := admin.Delete(t.Context(), pdb); err != nil {
		t.Fatal(err)
	}
	startManager(t, nil, false)
	testbed.Poll(t, 2*time.Minute, "the new manager back within hard", func(context.Context) (bool, error) {
		st := getStatus(t, ns, "b")
		u := st.Used["requests.cpu"]
		return running(t, ns) == 2 && u.Cmp(resource.MustParse("2")) == 0 && st.ReclaimingAfterWindow == "", nil
	})
}

// TestClusterBudgetWindow: a ClusterBudgetWindow raises a ClusterBudget while open: a
// pod that did not fit is admitted, the status shows the effective hard and the open
// window; deleted, the window leaves the ClusterBudget as written, and the pod runs on
// (Hold).
func TestClusterBudgetWindow(t *testing.T) {
	ns := newNamespace(t, true)
	name := "cbw-" + ns
	cb := clusterBudget(name, "", cpu("2"))
	cb.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}
	mustCreate(t, cb)
	startManager(t, nil, false)
	mustCreate(t, gatedPod(ns, "first", "2"))
	testbed.Poll(t, time.Minute, "first admitted", func(context.Context) (bool, error) { return !isGated(t, ns, "first"), nil })
	mustCreate(t, gatedPod(ns, "big", "2"))
	waitForWaitingEvent(t, ns, "big", "InsufficientQuota")

	open := absoluteWindow(time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	open.BudgetName, open.Add = name, cpu("2")
	win := &v1alpha1.ClusterBudgetWindow{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: open}
	mustCreate(t, win)
	testbed.Poll(t, time.Minute, "the pod admitted in the window", func(context.Context) (bool, error) {
		st := getStatus(t, "", name)
		return !isGated(t, ns, "big") && hardIs(st.Hard, "4") && slices.Equal(st.ActiveWindows, []string{name}), nil
	})
	var ws v1alpha1.ClusterBudgetWindow
	if err := admin.Get(t.Context(), client.ObjectKey{Name: name}, &ws); err != nil {
		t.Fatal(err)
	}
	if c := apimeta.FindStatusCondition(ws.Status.Conditions, v1alpha1.ConditionReady); !ws.Status.Open || c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("the open ClusterBudgetWindow's status: open %v, Ready %+v", ws.Status.Open, c)
	}
	if err := admin.Delete(t.Context(), win); err != nil {
		t.Fatal(err)
	}
	testbed.Poll(t, time.Minute, "the ClusterBudget as written again", func(context.Context) (bool, error) {
		st := getStatus(t, "", name)
		return hardIs(st.Hard, "2") && len(st.ActiveWindows) == 0, nil
	})
	if isGated(t, ns, "big") || running(t, ns) != 2 {
		t.Errorf("the pod admitted in the window does not run on after it was deleted")
	}
}
