package controller_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/pkg/gates"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/quota/controller"
)

// Two teams under a parent ClusterBudget of 4 CPU, each with a hard of 2, as a user sets
// them up. Team B may borrow 2 and runs 4 pods while team A is idle, 2 of them beyond
// its hard; a PodDisruptionBudget keeps 3 of B's pods available. Team A then asks for
// its share: quotagate evicts B's two borrowing pods through the Eviction API, the
// first at once, the second refused by the PDB (an event on both pods, the metric),
// retried, never forced, and evicted once the PDB allows it. A's pods are admitted as
// the victims go; B's pods within its hard are never touched. Watchers check at every
// event that the parent, A and B stay within 4, 2 and 4 CPU.
func TestReclaimEvictsBorrowedPods(t *testing.T) {
	ctx := t.Context()
	parent, nsA, nsB, family := twoTeams(t)
	watchA, watchB := watchAdmissions(t, nsA, "2"), watchAdmissions(t, nsB, "4")
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: nsB},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: new(intstr.FromInt32(3)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "b"}},
		},
	}
	mustCreate(t, pdb)
	reg := prometheus.NewRegistry()
	startManager(t, func(o *controller.Options) { o.Registerer = reg }, false)
	start := time.Now()
	at := func(what string, args ...any) {
		t.Logf("timeline %5.1fs: %s", time.Since(start).Seconds(), fmt.Sprintf(what, args...))
	}

	pod := func(ns, name, app string) *corev1.Pod { return familyPod(ns, name, app, parent) }
	// One at a time, so that the order of admission is known: b2 and b3 borrow.
	admitInTurn(t, nsB, parent, "b", 4)
	for _, name := range []string{"b2", "b3"} {
		var p corev1.Pod
		if err := admin.Get(ctx, client.ObjectKey{Namespace: nsB, Name: name}, &p); err != nil {
			t.Fatal(err)
		}
		if got := p.Annotations[v1alpha1.BorrowingAnnotation]; got != nsB+"/b" {
			t.Errorf("%s carries %s=%q, want %s/b", name, v1alpha1.BorrowingAnnotation, got, nsB)
		}
	}
	at("team B runs b0..b3 (b2 and b3 borrowed)")
	waitPDB(t, pdb, 4, 1)

	at("the PDB allows 1 disruption; team A creates a0 and a1")
	mustCreate(t, pod(nsA, "a0", "a"), pod(nsA, "a1", "a"))
	blocked := waitForWaitingEvent(t, nsB, "", "PreemptionBlocked")
	at("%s: %s: %s", blocked.InvolvedObject.Name, blocked.Reason, blocked.Message)
	waitForWaitingEvent(t, nsA, "", "PreemptionBlocked")
	preempted := waitForWaitingEvent(t, nsB, "", "Preempted")
	at("%s: %s: %s", preempted.InvolvedObject.Name, preempted.Reason, preempted.Message)
	waitForWaitingEvent(t, nsA, "", "Preempting")
	victims := []string{blocked.InvolvedObject.Name, preempted.InvolvedObject.Name}
	slices.Sort(victims)
	if !slices.Equal(victims, []string{"b2", "b3"}) {
		t.Fatalf("the victims are %v, want B's borrowing pods b2 and b3", victims)
	}
	testbed.Poll(t, time.Minute, "one of A's pods admitted in the room the first eviction made", func(context.Context) (bool, error) {
		_, ungated := countGated(t, nsA)
		return ungated == 1, nil
	})
	at("one of team A's pods admitted")
	// Blocked, it is tried again, and never forced: the second victim still runs.
	time.Sleep(3 * time.Second)
	if _, ungated := countGated(t, nsA); ungated != 1 {
		t.Errorf("%d of A's pods admitted while the PDB refuses the second eviction, want 1", ungated)
	}
	var still corev1.Pod
	if err := admin.Get(ctx, client.ObjectKey{Namespace: nsB, Name: blocked.InvolvedObject.Name}, &still); err != nil || still.DeletionTimestamp != nil {
		t.Errorf("the victim the PDB protects was removed anyway (err %v)", err)
	}
	evicted, refused := reclaimCounter(t, reg, "quotagate_preemptions_total"), reclaimCounter(t, reg, "quotagate_preemption_attempts_failed_total")
	if evicted != 1 || refused < 1 {
		t.Errorf("%v preemptions and %v refused attempts counted, want 1 and at least 1", evicted, refused)
	}

	// The PDB allows one more disruption: the retry evicts it, and A gets its share.
	// A merge patch, not an update: the disruption controller writes the PDB's status
	// all along, and an update from an older read would be refused as a conflict.
	relaxed := pdb.DeepCopy()
	relaxed.Spec.MinAvailable = new(intstr.FromInt32(2))
	if err := admin.Patch(ctx, relaxed, client.MergeFrom(pdb)); err != nil {
		t.Fatal(err)
	}
	at("the PDB is relaxed to minAvailable 2")
	testbed.Poll(t, 2*time.Minute, "both of A's pods admitted", func(context.Context) (bool, error) {
		_, ungated := countGated(t, nsA)
		return ungated == 2, nil
	})
	at("both of team A's pods admitted")
	var left []string
	for _, p := range podsOf(t, nsB) {
		if p.DeletionTimestamp == nil {
			left = append(left, p.Name)
		}
	}
	slices.Sort(left)
	if !slices.Equal(left, []string{"b0", "b1"}) {
		t.Errorf("team B runs %v after the reclaim, want its pods within hard, b0 and b1", left)
	}
	if got := reclaimCounter(t, reg, "quotagate_preemptions_total"); got != 2 {
		t.Errorf("quotagate_preemptions_total{reason=Reclaim} = %v, want 2", got)
	}
	// Team A learns that pods of another namespace made room, never which:
	// no event in A names B's namespace, its pods or its
	// PodDisruptionBudget, or relates to a pod of B; nor does any event in B
	// name A's pods (docs/guarantees.md, "Tenants see only their own").
	testbed.Poll(t, time.Minute, "a Preempting event in A", func(context.Context) (bool, error) {
		return len(eventNames(t, nsA, func(e corev1.Event) (string, bool) { return e.Name, e.Reason == "Preempting" })) > 0, nil
	})
	for ns, other := range map[string]string{nsA: nsB, nsB: nsA} {
		leaks := eventNames(t, ns, func(e corev1.Event) (string, bool) {
			return e.Reason + ": " + e.Message, strings.Contains(e.Message, other) || (e.Related != nil && e.Related.Namespace == other)
		})
		if len(leaks) > 0 {
			t.Errorf("events in %s name or relate to %s: %q", ns, other, leaks)
		}
	}
	watchA.waitForAdmissions(t, 2)
	watchA.check(t)
	watchB.check(t)
	if r := family.Report(); len(r.Violations) > 0 {
		t.Errorf("the family exceeded the parent's 4 CPU: %v", r.Violations)
	}
}

// reclaimCounter is the value of the named counter's reason="Reclaim" series.
func reclaimCounter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	return preemptionCounter(t, reg, name, quota.PreemptReclaim)
}

// preemptionCounter is the value of the named counter's series for reason.
func preemptionCounter(t *testing.T, reg *prometheus.Registry, name string, reason quota.PreemptionReason) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == string(reason) {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// twoTeams sets up two opted-in namespaces under a new ClusterBudget of 4 CPU, with
// Budget a (hard 2) in nsA and Budget b (hard 2, may borrow 2) in nsB, and a watcher of
// the pods labelled family=<parent> that checks the parent's 4 CPU at every event.
func twoTeams(t *testing.T) (parent, nsA, nsB string, family *testbed.UsageWatcher) {
	t.Helper()
	parent = fmt.Sprintf("org-%d", nsCounter.Add(1))
	createClusterBudgets(t, clusterBudget(parent, "", cpu("4")))
	nsA, nsB = newNamespace(t, true), newNamespace(t, true)
	family, err := testbed.WatchUsageSelected(t.Context(), clientset, "", "family="+parent,
		corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("4")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(family.Stop)
	a := budget(nsA, "a", cpu("2"), "")
	a.Spec.Parent = parent
	b := budget(nsB, "b", cpu("2"), "")
	b.Spec.Parent, b.Spec.BorrowingLimit = parent, cpu("2")
	mustCreate(t, a, b)
	return parent, nsA, nsB, family
}

// soakDuration is how long TestSteadyTwoTeamsDoNotThrash runs its steady workload:
// QUOTAGATE_SOAK (a Go duration; `make soak` sets minutes), 40 s by default.
func soakDuration(t *testing.T) time.Duration {
	d := 40 * time.Second
	if v := os.Getenv("QUOTAGATE_SOAK"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatalf("QUOTAGATE_SOAK=%q: %v", v, err)
		}
	}
	return d
}

// Two teams run steady Job workloads under one parent: team B (hard 2, may borrow 2)
// keeps 4 pods of 3 s each going, alone at first and borrowing team A's idle share; then
// team A (hard 2) starts its own Job of 2 pods at a time. A takes its share back once,
// by evicting B's 2 borrowed pods; after that, each of A's pods that ends is followed by
// the next one of A's Job within the lend hold, so the quota is not lent to B in between
// and taken back again: the evictions stay at those 2 however long it runs. Watchers
// check at every event that the family never uses more than its parent's 4 CPU.
// QUOTAGATE_SOAK_LEND_HOLD sets the manager's lend hold (0s: none, for comparison).
func TestSteadyTwoTeamsDoNotThrash(t *testing.T) {
	soak := soakDuration(t)
	parent, nsA, nsB, family := twoTeams(t)
	reg := prometheus.NewRegistry()
	startManager(t, func(o *controller.Options) {
		o.Registerer = reg
		if v := os.Getenv("QUOTAGATE_SOAK_LEND_HOLD"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Fatalf("QUOTAGATE_SOAK_LEND_HOLD=%q: %v", v, err)
			}
			o.LendHold = d
		}
	}, false)

	steadyJob := func(ns, name string, parallel int32) *batchv1.Job {
		j := gatedJob(ns, name, "1", 100000, "3s", "")
		j.Spec.Parallelism = ptr.To(parallel)
		j.Spec.Template.Labels = map[string]string{"family": parent}
		// An evicted pod is re-created, not counted as a failure of the Job.
		j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
			Action:          batchv1.PodFailurePolicyActionIgnore,
			OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
		}}}
		return j
	}
	mustCreate(t, steadyJob(nsB, "b", 4))
	testbed.Poll(t, time.Minute, "team B running 4 pods, 2 of them borrowed", func(context.Context) (bool, error) {
		return len(family.Report().Admitted) >= 4 && running(t, nsB) == 4, nil
	})
	mustCreate(t, steadyJob(nsA, "a", 2))
	testbed.Poll(t, 2*time.Minute, "team A running its 2 pods", func(context.Context) (bool, error) {
		return running(t, nsA) == 2, nil
	})
	reclaimed := reclaimCounter(t, reg, "quotagate_preemptions_total")
	t.Logf("team A got its share back with %v evictions; now %s of steady work", reclaimed, soak)
	admittedBefore := admittedIn(family.Report(), nsA, nsB)
	time.Sleep(soak)

	evictions := reclaimCounter(t, reg, "quotagate_preemptions_total")
	after := admittedIn(family.Report(), nsA, nsB)
	t.Logf("during %s: team A admitted %d pods, team B %d; evictions %v in all", soak,
		after[nsA]-admittedBefore[nsA], after[nsB]-admittedBefore[nsB], evictions)
	if reclaimed < 1 || reclaimed > 2 {
		t.Errorf("team A took its share back with %v evictions, want 1 or 2 (B borrowed 2)", reclaimed)
	}
	if evictions != reclaimed {
		t.Errorf("%v more evictions during the steady run: quota was lent and taken back in a loop", evictions-reclaimed)
	}
	if got := after[nsA] - admittedBefore[nsA]; got < 2 {
		t.Errorf("team A admitted %d pods during the steady run: it did not keep its share", got)
	}
	if r := family.Report(); len(r.Violations) > 0 {
		t.Errorf("the family exceeded the parent's 4 CPU: %v", r.Violations)
	}
}

// running counts the ungated, non-terminal pods of a namespace.
func running(t *testing.T, ns string) int {
	n := 0
	for _, p := range podsOf(t, ns) {
		if !gates.HasGate(&p, v1alpha1.SchedulingGate) && p.DeletionTimestamp == nil &&
			p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			n++
		}
	}
	return n
}

// admittedIn counts a report's admissions per namespace.
func admittedIn(r testbed.UsageReport, namespaces ...string) map[string]int {
	out := map[string]int{}
	for _, a := range r.Admitted {
		for _, ns := range namespaces {
			if a.Namespace == ns {
				out[ns]++
			}
		}
	}
	return out
}

// familyPod is a gated pod of 1 CPU of a team (app) in the family under parent.
func familyPod(ns, name, app, parent string) *corev1.Pod {
	p := gatedPod(ns, name, "1")
	p.Labels = map[string]string{"app": app, "family": parent}
	return p
}

// admitInTurn creates n pods of app (app0, app1, ...) in ns, each once the one before it
// is admitted, so that the order of admission is known.
func admitInTurn(t *testing.T, ns, parent, app string, n int) {
	t.Helper()
	for i := range n {
		name := fmt.Sprintf("%s%d", app, i)
		mustCreate(t, familyPod(ns, name, app, parent))
		testbed.Poll(t, time.Minute, name+" admitted", func(context.Context) (bool, error) { return !isGated(t, ns, name), nil })
	}
}

// waitPDB waits until the PDB has observed its spec, counts healthy pods and allows
// allowed disruptions: a pod not yet running may be evicted whatever its PDB says.
func waitPDB(t *testing.T, pdb *policyv1.PodDisruptionBudget, healthy, allowed int32) {
	t.Helper()
	what := fmt.Sprintf("PDB %s: %d pods healthy, %d disruptions allowed", pdb.Name, healthy, allowed)
	testbed.Poll(t, time.Minute, what, func(context.Context) (bool, error) {
		var got policyv1.PodDisruptionBudget
		if err := admin.Get(t.Context(), client.ObjectKeyFromObject(pdb), &got); err != nil {
			return false, err
		}
		s := got.Status
		return s.CurrentHealthy == healthy && s.DisruptionsAllowed == allowed && s.ObservedGeneration == got.Generation, nil
	})
}
