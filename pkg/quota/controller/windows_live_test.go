package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
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
	st := getStatus(t, ns, "b")
	if h := st.Hard["requests.cpu"]; h.Cmp(resource.MustParse("4")) != 0 {
		t.Errorf("status.hard while open = %s, want 4", h.String())
	}
	if fmt.Sprint(st.ActiveWindows) != "[double]" || st.NextWindowChange == nil || !st.NextWindowChange.Time.Equal(end) {
		t.Errorf("while open: activeWindows %v, nextWindowChange %v; want [double] and %v", st.ActiveWindows, st.NextWindowChange, end)
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
	st := getStatus(t, ns, "b")
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
