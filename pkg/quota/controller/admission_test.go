package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/pkg/quota/controller"
)

// A Budget of 4 CPUs and ten 1-CPU Jobs: four run, six wait; as Jobs complete the rest
// follow, and at no instant do admitted, non-terminal pods exceed 4 CPUs.
func TestBudgetAdmitsUpToHardAndDrainsJobs(t *testing.T) {
	ns := newNamespace(t, true)
	w := watchAdmissions(t, ns, "4")
	mustCreate(t, budget(ns, "team", cpu("4"), ""))
	// Long enough that the first four are still running when we count.
	for i := range 10 {
		mustCreate(t, gatedJob(ns, "job-"+podName(i), "1", 1, "3s", ""))
	}
	testbed.Poll(t, time.Minute, "ten Job pods", func(context.Context) (bool, error) { return len(podsOf(t, ns)) == 10, nil })
	startManager(t, nil, false)

	testbed.Poll(t, time.Minute, "four pods admitted", func(context.Context) (bool, error) {
		gated, ungated := countGated(t, ns)
		return gated == 6 && ungated == 4, nil
	})
	testbed.Poll(t, time.Minute, "the Budget's status to show 4 admitted and 6 gated", func(context.Context) (bool, error) {
		b := &v1alpha1.Budget{}
		if err := admin.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "team"}, b); err != nil {
			return false, err
		}
		used := b.Status.Used["requests.cpu"]
		return b.Status.AdmittedPods == 4 && b.Status.GatedPods == 6 && used.String() == "4" &&
			b.Status.State == v1alpha1.StateOpen, nil
	})
	testbed.Poll(t, 2*time.Minute, "every Job to complete", func(context.Context) (bool, error) {
		jobs := &batchv1.JobList{}
		if err := admin.List(t.Context(), jobs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, j := range jobs.Items {
			if j.Status.Succeeded != 1 {
				return false, nil
			}
		}
		return true, nil
	})
	w.waitForAdmissions(t, 10)
	if order := w.check(t); len(order) != 10 {
		t.Errorf("admitted %d pods, want 10", len(order))
	}
	// Every pod records when and by which budget it was admitted.
	for _, p := range podsOf(t, ns) {
		if p.Annotations[v1alpha1.AdmittedByAnnotation] != ns+"/team" {
			t.Errorf("pod %s admitted-by = %q, want %q", p.Name, p.Annotations[v1alpha1.AdmittedByAnnotation], ns+"/team")
		}
		if _, err := time.Parse(time.RFC3339, p.Annotations[v1alpha1.AdmittedAtAnnotation]); err != nil {
			t.Errorf("pod %s admitted-at: %v", p.Name, err)
		}
	}
}

// With room for one pod at a time, pods are admitted by priority, then creation time.
func TestAdmissionOrderIsPriorityThenCreationTime(t *testing.T) {
	ns := newNamespace(t, true)
	w := watchAdmissions(t, ns, "1")
	mustCreate(t, budget(ns, "one", cpu("1"), ""))
	mk := func(name, class string) *batchv1.Job { return gatedJob(ns, name, "1", 1, "300ms", class) }
	mustCreate(t, mk("low-a", "qg-low"), mk("high-a", "qg-high"), mk("mid-a", "qg-mid"))
	testbed.Poll(t, time.Minute, "three Job pods", func(context.Context) (bool, error) { return len(podsOf(t, ns)) == 3, nil })
	// Creation timestamps have one-second resolution: the next ones are created later.
	time.Sleep(1100 * time.Millisecond)
	mustCreate(t, mk("high-b", "qg-high"), mk("low-b", "qg-low"))
	testbed.Poll(t, time.Minute, "five Job pods", func(context.Context) (bool, error) { return len(podsOf(t, ns)) == 5, nil })
	startManager(t, nil, false)
	testbed.Poll(t, 2*time.Minute, "all five admitted", func(context.Context) (bool, error) {
		_, ungated := countGated(t, ns)
		return ungated == 5, nil
	})
	w.waitForAdmissions(t, 5)
	var got []string
	for _, pod := range w.check(t) {
		got = append(got, pod[:strings.LastIndex(pod, "-")]) // the Job's name
	}
	want := []string{"high-a", "high-b", "mid-a", "low-a", "low-b"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("admission order (-want +got):\n%s", diff)
	}
}

// StrictFIFO: a head that does not fit blocks the pod behind it; BestEffortFIFO lets
// the smaller pod behind it through.
func TestStrictFIFOBlocksAndBestEffortOvertakes(t *testing.T) {
	for _, tc := range []struct {
		strategy      v1alpha1.QueueingStrategy
		smallAdmitted bool
	}{
		{v1alpha1.StrictFIFO, false},
		{v1alpha1.BestEffortFIFO, true},
	} {
		t.Run(string(tc.strategy), func(t *testing.T) {
			ns := newNamespace(t, true)
			mustCreate(t, budget(ns, "b", cpu("3"), tc.strategy))
			running := gatedPod(ns, "running", "2")
			startManager(t, nil, false)
			mustCreate(t, running)
			testbed.Poll(t, time.Minute, "the first pod admitted", func(context.Context) (bool, error) { return !isGated(t, ns, "running"), nil })
			head := gatedPod(ns, "head", "2")
			head.Spec.PriorityClassName = "qg-high" // ahead of small, whatever the timestamps
			small := gatedPod(ns, "small", "1")
			mustCreate(t, head, small)
			if tc.smallAdmitted {
				testbed.Poll(t, time.Minute, "small admitted past the head", func(context.Context) (bool, error) { return !isGated(t, ns, "small"), nil })
			} else {
				waitForWaitingEvent(t, ns, "small", "StrictFIFOOrder")
				if !isGated(t, ns, "small") {
					t.Errorf("small was admitted past a StrictFIFO head that does not fit")
				}
			}
			if !isGated(t, ns, "head") {
				t.Errorf("head (2 CPU) was admitted with 1 CPU free")
			}
			// Freeing the running pod admits the head (and then small, in StrictFIFO).
			if err := admin.Delete(t.Context(), running); err != nil {
				t.Fatal(err)
			}
			testbed.Poll(t, time.Minute, "head and small admitted", func(context.Context) (bool, error) {
				return !isGated(t, ns, "head") && !isGated(t, ns, "small"), nil
			})
		})
	}
}

// A pod that requests more than hard can never fit: it stays gated, with a Warning
// event and a condition on the budget; smaller pods are still admitted.
func TestPodOverWholeBudgetStaysGatedAndIsReported(t *testing.T) {
	ns := newNamespace(t, true)
	mustCreate(t, budget(ns, "b", cpu("2"), ""))
	startManager(t, nil, false)
	mustCreate(t, gatedPod(ns, "huge", "4"), gatedPod(ns, "fits", "1"))
	testbed.Poll(t, time.Minute, "the small pod admitted", func(context.Context) (bool, error) { return !isGated(t, ns, "fits"), nil })
	testbed.Poll(t, time.Minute, "the PodsNeverFit condition", func(context.Context) (bool, error) {
		b := &v1alpha1.Budget{}
		if err := admin.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "b"}, b); err != nil {
			return false, err
		}
		c := apimeta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionPodsNeverFit)
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "huge"), nil
	})
	ev := waitForWaitingEvent(t, ns, "huge", "RequestsExceedHard")
	if ev.Type != corev1.EventTypeWarning {
		t.Errorf("event type = %s, want Warning", ev.Type)
	}
	if !isGated(t, ns, "huge") {
		t.Errorf("a pod over the whole budget was admitted")
	}
}

// Raising hard admits the pods that now fit, at once.
func TestRaisingHardAdmitsMore(t *testing.T) {
	ns := newNamespace(t, true)
	b := budget(ns, "b", cpu("1"), "")
	mustCreate(t, b)
	startManager(t, nil, false)
	for i := range 3 {
		mustCreate(t, gatedPod(ns, podName(i), "1"))
	}
	testbed.Poll(t, time.Minute, "one admitted", func(context.Context) (bool, error) {
		g, u := countGated(t, ns)
		return g == 2 && u == 1, nil
	})
	patch := client.MergeFrom(b.DeepCopy())
	b.Spec.Hard = cpu("3")
	if err := admin.Patch(t.Context(), b, patch); err != nil {
		t.Fatal(err)
	}
	testbed.Poll(t, time.Minute, "all three admitted", func(context.Context) (bool, error) {
		g, u := countGated(t, ns)
		return g == 0 && u == 3, nil
	})
}

// Deleting the only budget releases its claim: the pods it held are uncovered, and with
// --hold-uncovered=false uncovered pods are admitted at once.
func TestDeletingBudgetReevaluatesItsPods(t *testing.T) {
	ns := newNamespace(t, true)
	b := budget(ns, "b", cpu("0"), "")
	mustCreate(t, b)
	startManager(t, func(o *controller.Options) { o.HoldUncovered = false }, false)
	for i := range 3 {
		mustCreate(t, gatedPod(ns, podName(i), "1"))
	}
	waitForWaitingEvent(t, ns, podName(0), "RequestsExceedHard") // 1 CPU can never fit in 0
	if g, _ := countGated(t, ns); g != 3 {
		t.Fatalf("%d pods gated under a zero budget, want 3", g)
	}
	if err := admin.Delete(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	testbed.Poll(t, time.Minute, "all pods admitted", func(context.Context) (bool, error) {
		g, _ := countGated(t, ns)
		return g == 0, nil
	})
}

// By default (--hold-uncovered), a pod no budget covers stays gated, and says why.
func TestHoldUncovered(t *testing.T) {
	ns := newNamespace(t, true)
	startManager(t, nil, false)
	mustCreate(t, gatedPod(ns, "lonely", "1"))
	waitForWaitingEvent(t, ns, "lonely", "Uncovered")
	if !isGated(t, ns, "lonely") {
		t.Errorf("an uncovered pod was admitted although uncovered pods are held")
	}
}

// Removing the opt-in label releases the namespace's gated pods.
func TestOptOutReleasesGatedPods(t *testing.T) {
	ns := newNamespace(t, true)
	mustCreate(t, budget(ns, "b", cpu("0"), ""))
	startManager(t, nil, false)
	for i := range 3 {
		mustCreate(t, gatedPod(ns, podName(i), "1"))
	}
	waitForWaitingEvent(t, ns, podName(2), "RequestsExceedHard")
	n := &corev1.Namespace{}
	if err := admin.Get(t.Context(), client.ObjectKey{Name: ns}, n); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(n.DeepCopy())
	delete(n.Labels, v1alpha1.EnabledLabel)
	if err := admin.Patch(t.Context(), n, patch); err != nil {
		t.Fatal(err)
	}
	testbed.Poll(t, time.Minute, "the gated pods released", func(context.Context) (bool, error) {
		g, _ := countGated(t, ns)
		return g == 0, nil
	})
}

// Deleting an admitted pod frees its share: the next pod is admitted.
func TestDeletingPodFreesCapacity(t *testing.T) {
	ns := newNamespace(t, true)
	mustCreate(t, budget(ns, "b", cpu("1"), ""))
	startManager(t, nil, false)
	first := gatedPod(ns, "first", "1")
	mustCreate(t, first)
	testbed.Poll(t, time.Minute, "first admitted", func(context.Context) (bool, error) { return !isGated(t, ns, "first"), nil })
	mustCreate(t, gatedPod(ns, "second", "1"))
	waitForWaitingEvent(t, ns, "second", "InsufficientQuota")
	if err := admin.Delete(t.Context(), first, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	testbed.Poll(t, time.Minute, "second admitted", func(context.Context) (bool, error) { return !isGated(t, ns, "second"), nil })
}

// A ClusterBudget limits the pods of every namespace its selector matches, together.
func TestClusterBudgetAcrossNamespaces(t *testing.T) {
	team := strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	nss := []string{newNamespace(t, true), newNamespace(t, true)}
	for _, ns := range nss {
		n := &corev1.Namespace{}
		if err := admin.Get(t.Context(), client.ObjectKey{Name: ns}, n); err != nil {
			t.Fatal(err)
		}
		n.Labels["team"] = team
		if err := admin.Update(t.Context(), n); err != nil {
			t.Fatal(err)
		}
	}
	cb := &v1alpha1.ClusterBudget{
		ObjectMeta: metav1.ObjectMeta{Name: team},
		Spec: v1alpha1.ClusterBudgetSpec{
			BudgetSpec:        v1alpha1.BudgetSpec{Hard: cpu("2")},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": team}},
		},
	}
	mustCreate(t, cb)
	t.Cleanup(func() { _ = admin.Delete(context.Background(), cb) })
	startManager(t, nil, false)
	for _, ns := range nss {
		for i := range 2 {
			mustCreate(t, gatedPod(ns, podName(i), "1"))
		}
	}
	testbed.Poll(t, time.Minute, "the ClusterBudget's status to show 2 admitted and 2 gated", func(context.Context) (bool, error) {
		got := &v1alpha1.ClusterBudget{}
		if err := admin.Get(t.Context(), client.ObjectKey{Name: team}, got); err != nil {
			return false, err
		}
		return got.Status.AdmittedPods == 2 && got.Status.GatedPods == 2, nil
	})
	total := 0
	for _, ns := range nss {
		_, u := countGated(t, ns)
		total += u
	}
	if total != 2 {
		t.Errorf("%d pods admitted across the two namespaces, want 2", total)
	}
}

// A manager restarted in the middle of a burst neither over-admits nor strands a pod:
// the new one waits for its caches, counts what the old one admitted, and drains the rest.
func TestManagerRestartMidRun(t *testing.T) {
	ns := newNamespace(t, true)
	w := watchAdmissions(t, ns, "3")
	mustCreate(t, budget(ns, "b", cpu("3"), ""))
	for i := range 12 {
		mustCreate(t, gatedJob(ns, "job-"+podName(i), "1", 1, "2s", ""))
	}
	first := startManager(t, nil, true)
	testbed.Poll(t, 2*time.Minute, "five pods admitted by the first manager", func(context.Context) (bool, error) {
		_, u := countGated(t, ns)
		return u >= 5, nil
	})
	first.stop(t)
	startManager(t, nil, true)
	testbed.Poll(t, 3*time.Minute, "every Job to complete", func(context.Context) (bool, error) {
		jobs := &batchv1.JobList{}
		if err := admin.List(t.Context(), jobs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		done := 0
		for _, j := range jobs.Items {
			if j.Status.Succeeded == 1 {
				done++
			}
		}
		return done == 12, nil
	})
	w.waitForAdmissions(t, 12)
	if order := w.check(t); len(order) != 12 {
		t.Errorf("admitted %d pods, want 12", len(order))
	}
}

// waitForWaitingEvent waits for the event that says why a pod waits, with the reason
// ("" for any pod of the namespace).
func waitForWaitingEvent(t *testing.T, ns, pod, reason string) corev1.Event {
	t.Helper()
	var found corev1.Event
	testbed.Poll(t, time.Minute, fmt.Sprintf("a %s event on pod %q", reason, pod), func(ctx context.Context) (bool, error) {
		evs, err := clientset.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		var seen []string
		for _, e := range evs.Items {
			seen = append(seen, e.InvolvedObject.Name+": "+e.Reason+": "+e.Message)
		}
		i := slices.IndexFunc(evs.Items, func(e corev1.Event) bool {
			return (pod == "" || e.InvolvedObject.Name == pod) && e.Reason == reason
		})
		if i < 0 {
			return false, testbed.NotYet(fmt.Errorf("events:\n%s", strings.Join(seen, "\n")))
		}
		found = evs.Items[i]
		return true, nil
	})
	return found
}
