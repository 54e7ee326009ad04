package peers

import (
	"container/heap"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// coreReplayResult is one replay: each workload's admission, as an offset from the
// start, and how many events (arrivals and ends) the core took.
type coreReplayResult struct {
	admitted []time.Duration
	events   int
}

// replayOnCore runs the plan through a fresh quotagate admission core on a simulated
// clock, with lendHold: quotagate's own order with no delay at all. Each workload's pods
// arrive gated at their creation time, in the Budgets and ClusterBudgets the bench
// creates (quotagateSched); after every arrival, end or timer, Admit runs and each
// admission is confirmed at once; a workload ends its runtime after its last pod's
// admission. Unlike idealReplay, it has quotagate's fair sharing between the members
// of a cohort and its lend holds.
func replayOnCore(p schedPlan, lendHold time.Duration) (coreReplayResult, error) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	q := quota.NewAdmissionQueue(quota.WithClock(clk), quota.WithLendHold(lendHold))
	cohorts := p.cohortMilli()
	for cohort, milli := range cohorts {
		q.UpsertBudget(quota.ClusterBudgetFromAPI(&v1alpha1.ClusterBudget{ObjectMeta: metav1.ObjectMeta{Name: "sched-" + cohort},
			Spec: v1alpha1.ClusterBudgetSpec{BudgetSpec: v1alpha1.BudgetSpec{Hard: cpuList(milli)}}}))
	}
	for _, sq := range p.Queues {
		q.SetNamespace(sq.Name, map[string]string{v1alpha1.EnabledLabel: "true"})
		borrow := sq.BorrowMilli
		if borrow < 0 {
			borrow = cohorts[sq.Cohort]
		}
		q.UpsertBudget(quota.BudgetFromAPI(&v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: sq.Name, Name: "budget"},
			Spec: v1alpha1.BudgetSpec{Hard: cpuList(sq.NominalMilli), Parent: "sched-" + sq.Cohort, BorrowingLimit: cpuList(borrow),
				Preemption: &v1alpha1.Preemption{Reclaim: v1alpha1.ReclaimNever, WithinBudget: v1alpha1.WithinBudgetNever}}}))
	}
	pod := func(w int, i int, gated bool) *corev1.Pod {
		wl := p.Workloads[w]
		pd := schedPod(wl, wl.Queue, i)
		pd.UID = types.UID(pd.Namespace + "/" + pd.Name)
		pd.CreationTimestamp = metav1.NewTime(t0.Add(wl.At))
		pd.Spec.Priority = &wl.Priority
		pd.Spec.SchedulingGates = nil
		if gated {
			pd.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: v1alpha1.SchedulingGate}}
		}
		if wl.Pods > 1 {
			pd.Labels[v1alpha1.GroupLabel] = wl.Name
			pd.Annotations = map[string]string{v1alpha1.GroupSizeAnnotation: strconv.Itoa(wl.Pods)}
		}
		return pd
	}
	workloadOf := map[types.UID]int{}
	podIndex := map[types.UID]int{}
	arrivals := p.arrivalOrder()
	r := coreReplayResult{admitted: make([]time.Duration, len(p.Workloads))}
	waiting := make([]int, len(p.Workloads)) // pods of each workload not yet admitted
	var ends endHeap
	next := 0
	for next < len(arrivals) || ends.Len() > 0 {
		now := p.nextEvent(arrivals, next, ends)
		if wake, ok := q.NextWakeup(); ok && wake.Sub(t0) < now {
			now = max(wake.Sub(t0), clk.Now().Sub(t0))
		}
		clk.SetTime(t0.Add(now))
		for ends.Len() > 0 && ends[0].at <= now {
			e := heap.Pop(&ends).(idealEnd)
			for i := range p.Workloads[e.w].Pods {
				q.DeletePod(pod(e.w, i, false).UID)
				r.events++
			}
		}
		for next < len(arrivals) && p.Workloads[arrivals[next]].At <= now {
			w := arrivals[next]
			next++
			waiting[w] = p.Workloads[w].Pods
			for i := range p.Workloads[w].Pods {
				pd := pod(w, i, true)
				workloadOf[pd.UID], podIndex[pd.UID] = w, i
				q.UpsertPod(quota.NewPod(pd, v1alpha1.SchedulingGate, clk.Now()))
				r.events++
			}
		}
		for _, a := range q.Admit() {
			q.Done(a.Pod.UID, quota.Ungated, "")
			w := workloadOf[a.Pod.UID]
			q.UpsertPod(quota.NewPod(pod(w, podIndex[a.Pod.UID], false), v1alpha1.SchedulingGate, clk.Now()))
			if waiting[w]--; waiting[w] == 0 {
				r.admitted[w] = now
				heap.Push(&ends, idealEnd{at: now + p.Workloads[w].Runtime, w: w})
			}
		}
	}
	for w, n := range waiting {
		if n != 0 {
			reason, _ := q.Reader().WaitReason(pod(w, 0, true).UID)
			return r, fmt.Errorf("replaying on quotagate's core: workload %s: %d pods never admitted (%s: %s)", p.Workloads[w].Name, n, reason.Code, reason.Message)
		}
	}
	return r, nil
}

// policyResult is quotagate's own policy with no delay (replayOnCore, with the manager's
// default lend hold) as a schedResult.
func policyResult(p schedPlan) (schedResult, error) {
	r, err := replayOnCore(p, quota.DefaultLendHold)
	if err != nil {
		return schedResult{}, err
	}
	secs := make([]float64, len(p.Workloads))
	var wall time.Duration
	for i, w := range p.Workloads {
		secs[i] = (r.admitted[i] - w.At).Seconds()
		wall = max(wall, r.admitted[i]+w.Runtime)
	}
	return schedResult{WallSeconds: wall.Seconds(), Classes: classesOf(p, secs)}, nil
}

// meanSeconds is the mean time from creation to admission over the plan's workloads.
func meanSeconds(p schedPlan, admitted []time.Duration) float64 {
	var sum time.Duration
	for i, w := range p.Workloads {
		sum += admitted[i] - w.At
	}
	return sum.Seconds() / float64(len(p.Workloads))
}
