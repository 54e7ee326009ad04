package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/quota/controller"
)

// Issue 46's eviction churn, live, with the tenant acting as the built-in edit role of
// its namespace. ClusterBudget shared (2 CPU over team A and team B) preempts lower
// priorities within it. Team B's Job runs 2 pods of 1 CPU at low priority, a third
// waiting (an evicted pod counts as failed, as it did in the issue: 2, 4, 6). The tenant in team A loops,
// as the issue did: it creates a pod of 1 CPU at high priority, and deletes it as soon
// as a pod of team B was evicted for it, or after holdFor when none was; six rounds.
//
// The manager's cooldown is 1s, doubling up to an hour: each preemptor that vanishes
// after its eviction doubles team A's cooldown (1s, 2s, 4s, then 8s, longer than the
// tenant holds its pod), so the churn evicts at most 3 of team B's pods in six rounds,
// never one a round. The counts are asserted, not the times: a slow machine evicts
// fewer. Every eviction names the ClusterBudget, on both pods; the tenant's pods wait
// with PreemptionPending, which says so too. Then a preemptor that stays is admitted
// once its longer cooldown ends: the backoff delays team A, it does not shut it out.
func TestEvictionChurnBacksOff(t *testing.T) {
	ctx := t.Context()
	const rounds, holdFor = 6, 6 * time.Second
	nsA, nsB := newNamespace(t, true), newNamespace(t, true)
	shared := fmt.Sprintf("shared-%d", nsCounter.Add(1))
	cb := clusterBudget(shared, "", cpu("2"))
	cb.Spec.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: []string{nsA, nsB},
	}}}
	cb.Spec.Preemption = &v1alpha1.Preemption{WithinBudget: v1alpha1.WithinBudgetLowerPriority}
	createClusterBudgets(t, cb)
	reg := prometheus.NewRegistry()
	startManager(t, func(o *controller.Options) {
		o.Registerer = reg
		o.PreemptionCooldown, o.PreemptionMaxBackoff = time.Second, time.Hour
	}, false)

	// Team B's Job: 2 pods running and a third waiting, which takes the place of one
	// that is evicted (the Job controller replaces a failed pod only after a backoff).
	job := gatedJob(nsB, "b", "1", 3, "1h", "qg-low")
	job.Spec.BackoffLimit = ptr.To[int32](100)
	job.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](2)
	mustCreate(t, job)
	teamBRuns := func(what string) {
		t.Helper()
		testbed.Poll(t, 2*time.Minute, what, func(context.Context) (bool, error) {
			return running(t, nsB) == 2, nil
		})
	}
	teamBRuns("team B's Job running its 2 pods")

	tenant := editTenant(t, nsA)
	preemptor := func(name string) *corev1.Pod {
		p := gatedPod(nsA, name, "1")
		p.Spec.PriorityClassName = "qg-high"
		return p
	}
	preempted := func(name string) bool {
		return len(eventNames(t, nsA, func(e corev1.Event) (string, bool) {
			return e.Message, e.Reason == "Preempting" && e.InvolvedObject.Name == name
		})) > 0
	}
	evicted := 0
	for round := range rounds {
		name := fmt.Sprintf("churn-%d", round)
		tenantCreate(t, tenant.CoreV1().Pods(nsA).Create, preemptor(name))
		// The tenant watches for its eviction, for holdFor at most.
		hit := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, holdFor, false, func(context.Context) (bool, error) {
			return preempted(name), nil
		}) == nil
		if err := tenant.CoreV1().Pods(nsA).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("the tenant deleting %s: %v", name, err)
		}
		t.Logf("round %d: %s deleted, a pod of team B evicted for it: %t", round, name, hit)
		if hit {
			evicted++
			teamBRuns(fmt.Sprintf("team B's Job back at 2 pods after round %d", round))
		}
	}
	if evicted < 1 || evicted > 3 {
		t.Errorf("the churn had team B's pods evicted in %d of %d rounds, want 1 to 3: the cooldown doubles for each preemptor that vanished", evicted, rounds)
	}
	if got := preemptionCounter(t, reg, "quotagate_preemptions_total", quota.PreemptWithinBudget); got != float64(evicted) {
		t.Errorf("quotagate_preemptions_total{reason=WithinBudget} = %v, want %d", got, evicted)
	}

	// The tenant's pods waited with PreemptionPending, naming the ClusterBudget.
	pending := eventNames(t, nsA, func(e corev1.Event) (string, bool) {
		return e.Message, e.Reason == string(quota.CodePreemptionPending)
	})
	if len(pending) == 0 {
		t.Errorf("no PreemptionPending event in team A")
	}
	for _, m := range pending {
		if !strings.Contains(m, "preemption pending: pods are evicted to make room for it in ClusterBudget "+shared) {
			t.Errorf("a PreemptionPending event does not say which budget preempts, and when: %q", m)
		}
	}

	// A preemptor that stays waits out team A's longer cooldown, and is admitted.
	tenantCreate(t, tenant.CoreV1().Pods(nsA).Create, preemptor("patient"))
	testbed.Poll(t, 2*time.Minute, "the patient preemptor admitted", func(context.Context) (bool, error) {
		return !isGated(t, nsA, "patient"), nil
	})
	evicted++

	// Every eviction names the ClusterBudget that preempted, on the victim and on the
	// preemptor.
	for ns, reason := range map[string]string{nsB: "Preempted", nsA: "Preempting"} {
		msgs := eventNames(t, ns, func(e corev1.Event) (string, bool) { return e.Message, e.Reason == reason })
		if len(msgs) == 0 {
			t.Errorf("no %s event in %s", reason, ns)
		}
		for _, m := range msgs {
			if !strings.Contains(m, "by ClusterBudget "+shared) {
				t.Errorf("a %s event does not name ClusterBudget %s: %q", reason, shared, m)
			}
		}
	}
	// Team B's Job counts each evicted pod as failed: as many as evictions, not one a
	// round.
	testbed.Poll(t, time.Minute, fmt.Sprintf("team B's Job counting %d failed pods", evicted), func(ctx context.Context) (bool, error) {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
			return false, err
		}
		return job.Status.Failed == int32(evicted), testbed.NotYet(fmt.Errorf("failed %d", job.Status.Failed))
	})
}
