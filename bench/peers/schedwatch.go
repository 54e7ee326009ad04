package peers

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/quotagate/quotagate/pkg/gates"
)

// schedWorkloadLabel holds a scenario pod's workload: its index in the plan.
const schedWorkloadLabel = "bench.quotagate.io/sched-workload"

// schedWatch follows every pod of one system's run of the scenario, from one watch of
// all namespaces, in the API server's order of events: a workload is admitted when the
// last of its pods has lost the system's gate, and ends when each has turned terminal
// (or is gone). It is also the quota watcher: at every event it checks each queue's use
// (pods without the gate that have not ended) against its nominal quota plus its
// borrowing limit, and each cohort's against the sum of its queues' nominal quotas.
type schedWatch struct {
	plan    schedPlan
	gate    string
	limits  map[string]int64  // a queue's nominal + borrowing limit, by queue
	cohorts map[string]int64  // a cohort's quota
	cohort  map[string]string // a queue's cohort
	// onAdmit is called, with the lock held, when workload w is admitted.
	onAdmit func(w int)

	mu         sync.Mutex
	pods       map[string]*schedPodState // by namespace/name
	ungated    []int                     // pods of each workload that lost the gate
	ended      []int                     // pods of each workload that ended
	admittedAt []time.Time
	// seenAt is when the first event of each workload's pods arrived: its creation, as
	// Kueue's recorder takes it (the first event of the Workload).
	seenAt    []time.Time
	lastEnd   time.Time
	finished  int
	queueUse  map[string]int64
	cohortUse map[string]int64
	// violations counts the events after which some queue or cohort used more than its
	// quota; over is the largest excess seen, in millicores.
	violations int
	over       int64
	// lost counts pods deleted before they ended (preempted or removed by someone else).
	lost int
	done chan struct{}
}

type schedPodState struct {
	w          int
	milli      int64
	charged    bool
	ended      bool
	everUngate bool
}

func newSchedWatch(p schedPlan, gate string, onAdmit func(int)) *schedWatch {
	sw := &schedWatch{plan: p, gate: gate, onAdmit: onAdmit, limits: map[string]int64{}, cohorts: p.cohortMilli(), cohort: map[string]string{},
		pods: map[string]*schedPodState{}, ungated: make([]int, len(p.Workloads)), ended: make([]int, len(p.Workloads)),
		admittedAt: make([]time.Time, len(p.Workloads)), seenAt: make([]time.Time, len(p.Workloads)), queueUse: map[string]int64{}, cohortUse: map[string]int64{},
		done: make(chan struct{})}
	for _, q := range p.Queues {
		limit := q.NominalMilli
		if q.BorrowMilli < 0 {
			limit = sw.cohorts[q.Cohort]
		} else {
			limit += q.BorrowMilli
		}
		sw.limits[q.Name] = limit
		sw.cohort[q.Name] = q.Cohort
	}
	if len(p.Workloads) == 0 {
		close(sw.done)
	}
	return sw
}

// observe takes one event of the watch, read at at.
func (sw *schedWatch) observe(typ watch.EventType, pod *corev1.Pod, at time.Time) error {
	w, err := strconv.Atoi(pod.Labels[schedWorkloadLabel])
	if err != nil || w < 0 || w >= len(sw.plan.Workloads) {
		return fmt.Errorf("pod %s/%s: label %s = %q is no workload of the plan", pod.Namespace, pod.Name, schedWorkloadLabel, pod.Labels[schedWorkloadLabel])
	}
	sw.mu.Lock()
	defer sw.mu.Unlock()
	key := pod.Namespace + "/" + pod.Name
	st := sw.pods[key]
	if st == nil {
		st = &schedPodState{w: w, milli: podCPUMilli(pod)}
		sw.pods[key] = st
	}
	if sw.seenAt[w].IsZero() {
		sw.seenAt[w] = at
	}
	if st.ended {
		return nil
	}
	wl := sw.plan.Workloads[w]
	terminal := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	if typ != watch.Deleted && !st.everUngate && !gates.HasGate(pod, sw.gate) {
		st.everUngate, st.charged = true, !terminal
		if st.charged {
			sw.charge(wl.Queue, st.milli)
		}
		if sw.ungated[w]++; sw.ungated[w] == wl.Pods {
			sw.admittedAt[w] = at
			sw.onAdmit(w)
		}
	}
	if typ == watch.Deleted || terminal {
		if typ == watch.Deleted && !terminal {
			sw.lost++
		}
		st.ended = true
		if st.charged {
			sw.charge(wl.Queue, -st.milli)
			st.charged = false
		}
		sw.lastEnd = at
		if sw.ended[w]++; sw.ended[w] == wl.Pods {
			if sw.finished++; sw.finished == len(sw.plan.Workloads) {
				close(sw.done)
			}
		}
	}
	return nil
}

// charge adds milli to the use of queue and its cohort, and checks both limits.
func (sw *schedWatch) charge(queue string, milli int64) {
	cohort := sw.cohort[queue]
	sw.queueUse[queue] += milli
	sw.cohortUse[cohort] += milli
	over := max(sw.queueUse[queue]-sw.limits[queue], sw.cohortUse[cohort]-sw.cohorts[cohort])
	if over > 0 {
		sw.violations++
		sw.over = max(sw.over, over)
	}
}

// podCPUMilli is the pod's requests.cpu, as its containers give it.
func podCPUMilli(pod *corev1.Pod) int64 {
	var sum resource.Quantity
	for _, c := range pod.Spec.Containers {
		sum.Add(c.Resources.Requests[corev1.ResourceCPU])
	}
	return sum.MilliValue()
}
