package peers

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// schedTestConfig has the shape of Kueue's baseline generator.yaml, smaller: 2 cohorts
// of 3 queues, three workload sets per queue, one of them of groups of 2 pods.
const schedTestConfig = `
cohorts:
  - className: cohort
    count: 2
    queuesSets:
    - className: cq
      count: 3
      nominalQuota: 20
      borrowingLimit: 100
      reclaimWithinCohort: Any
      withinClusterQueue: LowerPriority
      workloadsSets:
      - count: 35
        creationIntervalMs: 100
        workloads:
        - className: small
          runtimeMs: 200
          priority: 50
          request: 1
      - count: 10
        creationIntervalMs: 500
        workloads:
        - className: medium
          runtimeMs: 500
          priority: 100
          request: 5
      - count: 5
        creationIntervalMs: 1200
        workloads:
        - className: large
          runtimeMs: 1000
          priority: 200
          request: "20"
          podCount: 2
`

func TestSchedPlanFollowsTheGenerator(t *testing.T) {
	c, err := parseSchedConfig([]byte(schedTestConfig))
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		scale     int
		perQueue  map[string]int
		workloads int
	}{
		"full size":         {scale: 1, perQueue: map[string]int{"small": 35, "medium": 10, "large": 5}, workloads: 6 * 50},
		"scaled, rounds up": {scale: 10, perQueue: map[string]int{"small": 4, "medium": 1, "large": 1}, workloads: 6 * 6},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p, err := c.plan(tc.scale)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Queues) != 6 || p.Sets != 18 || len(p.Workloads) != tc.workloads {
				t.Fatalf("%d queues, %d sets, %d workloads; want 6, 18, %d", len(p.Queues), p.Sets, len(p.Workloads), tc.workloads)
			}
			if diff := cmp.Diff(map[string]int64{"cohort-0": 60000, "cohort-1": 60000}, p.cohortMilli()); diff != "" {
				t.Errorf("cohort quotas (-want +got):\n%s", diff)
			}
			q := p.Queues[4]
			if want := (schedQueue{Name: "cq-0-1-cohort-1", Cohort: "cohort-1", Class: "cq", NominalMilli: 20000, BorrowMilli: 100000, Reclaim: "Any", Within: "LowerPriority"}); q != want {
				t.Errorf("queue 4 = %+v, want %+v", q, want)
			}
			got := map[string]map[string]int{}
			for _, w := range p.Workloads {
				if got[w.Queue] == nil {
					got[w.Queue] = map[string]int{}
				}
				got[w.Queue][w.Class]++
			}
			for _, q := range p.Queues {
				if diff := cmp.Diff(tc.perQueue, got[q.Name]); diff != "" {
					t.Errorf("workloads of %s by class (-want +got):\n%s", q.Name, diff)
				}
			}
			if diff := cmp.Diff([]string{"small", "medium", "large"}, p.classes()); diff != "" {
				t.Errorf("classes (-want +got):\n%s", diff)
			}
		})
	}
	p, _ := c.plan(1)
	// The generator waits an interval before each create: the third small workload of
	// the first queue is created at 300 ms; the first large is a group of 2 pods of 20
	// cpu, created after 1.2 s.
	if w := p.Workloads[2]; w.Name != "small-0-2-0" || w.At != 300*time.Millisecond || w.CPUMilli != 1000 || w.Priority != 50 || w.Runtime != 200*time.Millisecond || w.Pods != 1 {
		t.Errorf("workload 2 = %+v", w)
	}
	if w := p.Workloads[45]; w.Name != "large-2-0-0" || w.At != 1200*time.Millisecond || w.CPUMilli != 20000 || w.Pods != 2 || w.Set != 2 {
		t.Errorf("workload 45 = %+v", w)
	}
	if _, err := c.plan(0); err == nil {
		t.Error("scale 0: no error")
	}
	if _, err := parseSchedConfig([]byte("cohorts: []")); err == nil {
		t.Error("no cohorts: no error")
	}
}

// The ideal replay on a hand-made plan: borrowing, lent quota back to its lender first,
// priority within a queue.
func TestIdealReplayOrder(t *testing.T) {
	s := time.Second
	p := schedPlan{
		Queues: []schedQueue{
			{Name: "a", Cohort: "c", NominalMilli: 2000, BorrowMilli: 3000},
			{Name: "b", Cohort: "c", NominalMilli: 2000, BorrowMilli: 0},
			// Lends 1 cpu it never uses: the cohort has 5.
			{Name: "l", Cohort: "c", NominalMilli: 1000, BorrowMilli: 0},
			{Name: "solo", Cohort: "d", NominalMilli: 1000, BorrowMilli: -1},
		},
		Workloads: []schedWorkload{
			// a's own quota.
			{Name: "a0", Queue: "a", CPUMilli: 2000, Pods: 1, At: 1 * s, Runtime: 10 * s},
			// Borrowed from b, which waits for nothing yet.
			{Name: "a1", Queue: "a", CPUMilli: 2000, Pods: 1, At: 2 * s, Runtime: 10 * s},
			// b's own quota is lent out: it gets it back when a0 ends at 11 s.
			{Name: "b0", Queue: "b", CPUMilli: 2000, Pods: 1, At: 3 * s, Runtime: 10 * s},
			// Fits by borrowing the cohort's last cpu, but b waits for its own quota:
			// not before b0 is admitted at 11 s.
			{Name: "a2", Queue: "a", CPUMilli: 1000, Pods: 1, At: 4 * s, Runtime: 1 * s, Priority: 5},
			// One at a time in solo: the higher priority goes first.
			{Name: "s0", Queue: "solo", CPUMilli: 1000, Pods: 1, At: 1 * s, Runtime: 5 * s},
			{Name: "s1", Queue: "solo", CPUMilli: 1000, Pods: 1, At: 2 * s, Runtime: 5 * s},
			{Name: "s2", Queue: "solo", CPUMilli: 1000, Pods: 1, At: 3 * s, Runtime: 5 * s, Priority: 10},
		},
	}
	admitted, wall := idealReplay(p)
	want := []time.Duration{1 * s, 2 * s, 11 * s, 11 * s, 1 * s, 11 * s, 6 * s}
	if diff := cmp.Diff(want, admitted); diff != "" {
		t.Errorf("admission times (-want +got):\n%s", diff)
	}
	if wall != 21*s {
		t.Errorf("wall = %v, want 21s (b0's end)", wall)
	}
	r := idealResult(p)
	if c := r.Classes[""]; c.N != 7 || c.Max != 9 {
		t.Errorf("time to admission = %+v, want 7 workloads, at most 9 s (s1)", c)
	}

	// quotagate's core, with no delay and no lend hold, decides this plan as the ideal
	// does: the same borrowing, lent quota back to b first, priority in solo.
	core, err := replayOnCore(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, core.admitted); diff != "" {
		t.Errorf("quotagate's core: admission times (-ideal +core):\n%s", diff)
	}
	if core.events != 2*len(p.Workloads) {
		t.Errorf("quotagate's core took %d events, want an arrival and an end per workload (%d)", core.events, 2*len(p.Workloads))
	}

	// Replayed at a run's own arrivals: b0 was seen 10 s late (at 13 s, after a0 ended),
	// a1 never (it keeps its planned 2 s), the rest on time. a2 no longer waits for b0's
	// claim: it borrows the cohort's last cpu at once.
	start := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	seen := make([]time.Time, len(p.Workloads))
	for i, w := range p.Workloads {
		seen[i] = start.Add(w.At)
	}
	seen[1], seen[2] = time.Time{}, start.Add(13*s)
	arrived := p.asArrived(seen, start)
	if got := []time.Duration{arrived.Workloads[1].At, arrived.Workloads[2].At}; !slices.Equal(got, []time.Duration{2 * s, 13 * s}) {
		t.Errorf("a1 and b0 arrive at %v, want 2s (planned: never seen) and 13s (seen)", got)
	}
	if p.Workloads[2].At != 3*s {
		t.Errorf("asArrived changed the plan itself: b0 at %v", p.Workloads[2].At)
	}
	replays, err := replayAsArrived(p, seen, start)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(idealResult(arrived), replays.Ideal); diff != "" {
		t.Errorf("the ideal at the run's arrivals (-replay of the moved plan +replayAsArrived):\n%s", diff)
	}
	if got, want := replays.Ideal.Classes[""].Mean, r.Classes[""].Mean; got >= want {
		t.Errorf("mean time to admission at the run's arrivals %.2f s, want less than the plan's %.2f s (b0 arrives once its quota is back, a2 borrows at once)", got, want)
	}
}

func schedTestPod(name, w string, cpu string, gated bool, phase corev1.PodPhase) *corev1.Pod {
	pod := schedPod(schedWorkload{Name: name, CPUMilli: 0}, "ns", 0)
	pod.Name = name
	pod.Labels[schedWorkloadLabel] = w
	pod.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
	if gated {
		pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: v1alpha1.SchedulingGate})
	}
	pod.Status.Phase = phase
	return pod
}

// The watch admits a workload when its last pod loses the gate, ends it when each pod
// has ended, and counts an event after which a queue is over its quota.
func TestSchedWatchChecksQuota(t *testing.T) {
	p := schedPlan{
		Queues: []schedQueue{{Name: "q", Cohort: "c", NominalMilli: 2000, BorrowMilli: 0}},
		Workloads: []schedWorkload{
			{Name: "g", Queue: "q", CPUMilli: 1000, Pods: 2},
			{Name: "x", Queue: "q", CPUMilli: 1000, Pods: 1},
		},
	}
	var admitted []int
	sw := newSchedWatch(p, v1alpha1.SchedulingGate, func(w int) { admitted = append(admitted, w) })
	at := time.Unix(100, 0)
	steps := []struct {
		typ watch.EventType
		pod *corev1.Pod
	}{
		{watch.Added, schedTestPod("g0", "0", "1", true, "")},
		{watch.Added, schedTestPod("g1", "0", "1", true, "")},
		{watch.Added, schedTestPod("x0", "1", "1", true, "")},
		{watch.Modified, schedTestPod("g0", "0", "1", false, "")},
		{watch.Modified, schedTestPod("g1", "0", "1", false, "")},
		// Over the queue's 2 cpu: one violation of 1000m.
		{watch.Modified, schedTestPod("x0", "1", "1", false, "")},
		{watch.Modified, schedTestPod("g0", "0", "1", false, corev1.PodSucceeded)},
		{watch.Deleted, schedTestPod("g1", "0", "1", false, "")},
		{watch.Modified, schedTestPod("x0", "1", "1", false, corev1.PodSucceeded)},
	}
	for i, st := range steps {
		if err := sw.observe(st.typ, st.pod, at.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]int{0, 1}, admitted); diff != "" {
		t.Errorf("admitted (-want +got):\n%s", diff)
	}
	if !sw.seenAt[0].Equal(at) || !sw.seenAt[1].Equal(at.Add(2*time.Second)) || !sw.admittedAt[0].Equal(at.Add(4*time.Second)) || !sw.lastEnd.Equal(at.Add(8*time.Second)) {
		t.Errorf("workload 0 seen at %v, admitted at %v; workload 1 seen at %v; last end %v", sw.seenAt[0], sw.admittedAt[0], sw.seenAt[1], sw.lastEnd)
	}
	if sw.violations != 1 || sw.over != 1000 || sw.lost != 1 || sw.queueUse["q"] != 0 {
		t.Errorf("violations %d over %d lost %d use %d; want 1, 1000, 1, 0", sw.violations, sw.over, sw.lost, sw.queueUse["q"])
	}
	select {
	case <-sw.done:
	default:
		t.Error("every pod ended, the watch is not done")
	}
	if err := sw.observe(watch.Added, schedTestPod("y", "7", "1", true, ""), at); err == nil {
		t.Error("a pod of no workload of the plan: no error")
	}
}

func TestParseAPIWrites(t *testing.T) {
	raw := `# HELP apiserver_request_total x
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 10
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 4
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="PATCH",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 99
apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 50
apiserver_request_total{code="201",component="apiserver",dry_run="",group="kueue.x-k8s.io",resource="workloads",scope="resource",subresource="",verb="POST",version="v1beta2"} 2.5e+01
`
	want := map[string]float64{"pods": 13, "pods/status": 4, "workloads": 25}
	if diff := cmp.Diff(want, parseAPIWrites([]byte(raw))); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
}

func TestSchedReportJudgesOverhead(t *testing.T) {
	s := schedReport{Classes: []string{"small"}, Scale: 20, Workloads: 10,
		Ideal:     schedResult{WallSeconds: 10, Classes: map[string]schedClass{"small": {N: 10, Mean: 1}}},
		Quotagate: schedResult{WallSeconds: 10.5, Classes: map[string]schedClass{"small": {N: 10, Mean: 3}}, AdmittedPods: 10, Writes: map[string]float64{"pods": 20}},
		Kueue:     schedResult{WallSeconds: 20, Classes: map[string]schedClass{"small": {N: 10, Mean: 11}}, AdmittedPods: 10, Writes: map[string]float64{"pods": 30, "workloads": 30}},
		Policy:    schedResult{WallSeconds: 10, Classes: map[string]schedClass{"small": {N: 10, Mean: 2.5}}},
	}
	s.Quotagate.CreateLagMillis, s.Kueue.CreateLagMillis = 1500, 4000
	s.Quotagate.AsArrived = &arrivedReplays{
		Ideal:  schedResult{WallSeconds: 10.2, Classes: map[string]schedClass{"small": {N: 10, Mean: 1.5}}},
		Policy: schedResult{WallSeconds: 10.3, Classes: map[string]schedClass{"small": {N: 10, Mean: 2.75}}},
	}
	s.Kueue.AsArrived = &arrivedReplays{Ideal: schedResult{WallSeconds: 12, Classes: map[string]schedClass{"small": {N: 10, Mean: 4}}}}
	md := s.markdown("")
	for _, want := range []string{
		// At each run's own arrivals: quotagate's delay is 0.25 s, Kueue's 7 s.
		"(quotagate's by 1.5 s at the latest, Kueue's by 4.0 s)",
		"| small: mean time to admission (s) | 1.50 | 2.75 | 3.00 | +0.25 | 4.00 | 11.00 | +7.00 |",
		// 0.5 s over against 10: met.
		"| Wall time (s) | 10.00 | 10.50 | 20.00 | +0.50 | +10.00 | 0.05× | yes |",
		// 2 s over against 10: missed.
		"| small (10): mean time to admission (s) | 1.00 | 3.00 | 11.00 | +2.00 | +10.00 | 0.20× | **no** |",
		"quotagate 2.0, Kueue 6.0 (3.0× quotagate's)",
		// Of quotagate's 2 s above the ideal, its policy decides 1.5 and its delay adds 0.5.
		"| small: mean time to admission (s) | 1.00 | 2.50 | 3.00 | +1.50 | +0.50 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("%q not in:\n%s", want, md)
		}
	}
}
