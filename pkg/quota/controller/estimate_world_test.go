package controller

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/quota"
)

// The world charges a pod for its ResourceClaims as the core does, and building it
// records nothing in the claims' index: a pod the store still lists after its delete
// is not brought back as a claim user.
func TestEstimateWorldChargesClaims(t *testing.T) {
	f := newEstimateFixture(t)
	f.c.claims = newClaimIndex()
	f.c.connectSimulations()
	f.c.onClaimObject(&resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "gpus"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "r", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 2},
		}}}}}, false)
	pod := estimatePod("team-a", "trainer", 60, "1").Gated().Obj()
	pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("gpus")}}
	f.add(t, pod)
	w, err := f.c.estimates.World(t.Context(), estimateT0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Waiting) != 1 {
		t.Fatalf("%d waiting pods, want the trainer", len(w.Waiting))
	}
	if q := w.Waiting[0].Pod.Usage["gpu.deviceclass.resource.k8s.io/devices"]; q.Value() != 2 {
		t.Errorf("the trainer is charged %s devices, want 2 (its claim's)", q.String())
	}
	if n := len(f.c.claims.podsOf("")); n != 0 {
		t.Errorf("building the world recorded %d claim users, want none", n)
	}
}

// The estimate world sees a pod as the core does: resolved against what it waits for
// and its PodGroup, and records nothing.
func TestEstimateWorldResolvesDependenciesAndPodGroups(t *testing.T) {
	f := newEstimateFixture(t)
	f.c.dependencies = newDependencyIndex()
	f.c.connectSimulations()
	f.c.onDependencyObject(&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "prepare"},
		Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}}}, false)
	f.c.onDependencyObject(&schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "gang"},
		Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
			Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 2}}}}, false)
	f.add(t, estimatePod("team-a", "ready", 60, "1").Gated().Annotation(v1alpha1.WaitForAnnotation, "job/prepare").Obj())
	f.add(t, estimatePod("team-a", "unready", 50, "1").Gated().Annotation(v1alpha1.WaitForAnnotation, "job/other").Obj())
	f.add(t, estimatePod("team-a", "member", 40, "1").Gated().PodGroup("gang").Obj())
	w, err := f.c.estimates.World(t.Context(), estimateT0, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]quota.Pod{}
	for _, p := range w.Waiting {
		got[p.Pod.Name] = p.Pod
	}
	if d := got["ready"].Dependencies; d.Holds() {
		t.Errorf("ready, whose Job completed, is held: %+v", d)
	}
	if d := got["unready"].Dependencies; !d.Holds() || d.Message != "waiting for Job other, which does not exist yet" {
		t.Errorf("unready: %+v", d)
	}
	if m := got["member"]; m.Group != quota.PodGroupPrefix+"gang" || m.GroupSize != 2 {
		t.Errorf("member is in group %q of %d, want its PodGroup's gang of 2", m.Group, m.GroupSize)
	}
	if n := len(f.c.dependencies.waits); n != 0 {
		t.Errorf("building the world recorded %d pods that wait, want none", n)
	}
}

// The estimator's world has each budget as its windows make it now, and what they will
// make of it at each edge ahead: a window open now raises team-a/a's hard; one ahead
// with endPolicy Reclaim is a change at its start and one, naming it, at its end.
func TestEstimateWorldHasWindows(t *testing.T) {
	f := newEstimateFixture(t)
	open, openEnd := estimateT0.Add(-time.Hour), estimateT0.Add(time.Hour)
	later, laterEnd := estimateT0.Add(10*time.Hour), estimateT0.Add(12*time.Hour)
	window := func(name string, start, end time.Time, add string, policy v1alpha1.WindowEndPolicy) *v1alpha1.BudgetWindow {
		s, e := metav1.NewTime(start), metav1.NewTime(end)
		return &v1alpha1.BudgetWindow{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name},
			Spec: v1alpha1.BudgetWindowSpec{BudgetName: "a", Start: &s, End: &e, Add: podtest.ParseList(add), EndPolicy: policy}}
	}
	var a v1alpha1.Budget
	if err := f.c.reader.Get(t.Context(), client.ObjectKey{Namespace: "team-a", Name: "a"}, &a); err != nil {
		t.Fatal(err)
	}
	f.c.onBudget(&a)
	f.c.onWindow(window("now", open, openEnd, "cpu=2", v1alpha1.WindowEndHold))
	f.c.onWindow(window("night", later, laterEnd, "cpu=8", v1alpha1.WindowEndReclaim))
	w, err := f.c.estimates.World(t.Context(), estimateT0, nil)
	if err != nil {
		t.Fatal(err)
	}
	hardOf := func(b quota.Budget) string { q := b.Hard["cpu"]; return q.String() }
	for _, b := range w.Budgets {
		if b.Key == (quota.BudgetKey{Namespace: "team-a", Name: "a"}) && hardOf(b) != "6" {
			t.Errorf("team-a/a in the world has hard %s, want 6 (4 written, 2 added by the open window)", hardOf(b))
		}
	}
	type change struct {
		At           time.Duration
		Hard         string
		ReclaimAfter string
	}
	var got []change
	for _, c := range w.Changes {
		got = append(got, change{c.At.Sub(estimateT0), hardOf(c.Budget), c.Budget.ReclaimAfter})
	}
	want := []change{{time.Hour, "4", ""}, {10 * time.Hour, "12", ""}, {12 * time.Hour, "4", "night"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes ahead (-want +got):\n%s", diff)
	}
}

// The estimator's world carries each budget's usageLimits and status.usage from the API
// into its simulation, with the pods' maximum runtimes and admission times: a running
// pod reserves hours from its admission, the hours it used since status.usage's asOf
// are counted on the simulated clock, and a pod whose hours do not fit starts when the
// pod ahead gives back the rest of its reservation, or when the Day ends, at midnight
// in the budget's time zone. A what-if says the same of a pod added behind next: it
// waits with UsageExhausted, and starts once the hours hold it too.
func TestEstimateWorldHasHours(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	midnight := time.Date(2026, 1, 2, 0, 0, 0, 0, berlin) // estimateT0 is 13:00 on the 1st there
	// r was admitted an hour before estimateT0 at 2 cpu for at most 4h, and ends 30m
	// after it: the status's 2 used are its hour, it reserves 6 more, and uses 3 in all.
	// next, and the what-if's pod, may each use 1 cpu × 2h.
	for limit, want := range map[string]struct{ next, whatIf time.Time }{
		// next: 2 + 6 + 2 ≤ 10; the what-if's: 2 + 6 + 2 + 2 > 10 until r ends.
		"10": {estimateT0, estimateT0.Add(30 * time.Minute)},
		// until r ends, 2 + 6 + 2 > 9; then 3 + 2 + 2 ≤ 9.
		"9": {estimateT0.Add(30 * time.Minute), estimateT0.Add(30 * time.Minute)},
		// 3 + 2 > 4.5 once r ended; a new Day: 2 + 2 ≤ 4.5.
		"4.5": {midnight, midnight},
	} {
		t.Run("limit "+limit, func(t *testing.T) {
			f := newEstimateFixture(t)
			var a v1alpha1.Budget
			if err := f.c.reader.Get(t.Context(), client.ObjectKey{Namespace: "team-a", Name: "a"}, &a); err != nil {
				t.Fatal(err)
			}
			a.Spec.UsageLimits = &v1alpha1.UsageLimits{Hours: podtest.ParseList("cpu=" + limit), Period: v1alpha1.PeriodDay, TimeZone: "Europe/Berlin"}
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, berlin)
			a.Status.Usage = &v1alpha1.UsageStatus{Period: "2026-01-01", PeriodStart: &metav1.Time{Time: start}, ResetAt: &metav1.Time{Time: midnight},
				AsOf: metav1.NewMicroTime(estimateT0), Used: podtest.ParseList("cpu=2")}
			if err := f.c.reader.(client.Client).Update(t.Context(), &a); err != nil {
				t.Fatal(err)
			}
			f.add(t, runningFor(estimatePod("team-a", "r", 7200, "2").Annotation(v1alpha1.MaxRuntimeAnnotation, "4h"), "team-a/a", estimateT0.Add(-time.Hour), "90m"))
			f.add(t, estimatePod("team-a", "next", 60, "1").Annotation(v1alpha1.MaxRuntimeAnnotation, "2h").Gated().Obj())
			w, err := f.c.estimates.World(t.Context(), estimateT0, nil)
			if err != nil {
				t.Fatal(err)
			}
			starts := estimate.Simulate(w, estimate.Options{Core: f.c.opts.coreOptions()})
			if s := starts[0]; !s.Known || !s.Median.Equal(want.next) {
				t.Errorf("next starts %+v, want at %s", s, want.next.In(berlin))
			}
			pods := podtest.New("").Container("c", "registry.invalid/app").Req("cpu=1").Annotation(v1alpha1.MaxRuntimeAnnotation, "2h").Priority(0).Obj()
			whatIf, err := f.c.SimulatePods(t.Context(), "team-a", &corev1.PodTemplateSpec{ObjectMeta: pods.ObjectMeta, Spec: pods.Spec}, 1)
			if err != nil {
				t.Fatal(err)
			}
			if r := whatIf.Placements[0].Reason; r.Code != quota.CodeHoursExhausted {
				t.Errorf("the what-if's pod is placed with %+v, want UsageExhausted", r)
			}
			if s := whatIf.Starts[0]; !s.Known || !s.Median.Equal(want.whatIf) {
				t.Errorf("the what-if's pod starts %+v, want at %s", s, want.whatIf.In(berlin))
			}
		})
	}
}

// The world has the streams of pods still to come: a workload's pods that went through
// the gate are one stream at their priority, with their learned runs; pods that never
// carried the gate are none.
func TestEstimateWorldHasArrivals(t *testing.T) {
	f := newEstimateFixture(t)
	for i := range 5 {
		created := 100 - 20*i
		b := estimatePod("team-a", fmt.Sprintf("etl-%d-x7k2p", i), created, "1").Owner("batch/v1", "Job", fmt.Sprintf("etl-%d", i), true).Priority(1000)
		started := estimateT0.Add(-time.Duration(created-1) * time.Second)
		f.add(t, ended(runningFor(b, "team-a/a", started, ""), started.Add(15*time.Second)))
	}
	for i := range 5 {
		f.add(t, estimatePod("team-b", fmt.Sprintf("loose-%d", i), 100-20*i, "1").Obj()) // never gated, never admitted
	}
	w, err := f.c.estimates.World(t.Context(), estimateT0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Arrivals) != 1 {
		t.Fatalf("%d streams, want the etl one: %+v", len(w.Arrivals), w.Arrivals)
	}
	st := w.Arrivals[0]
	want := estimate.ArrivalKey{Namespace: "team-a", OwnerKind: "Job", Owner: "etl", Priority: 1000}
	if st.Key != want || st.Gaps != 4 || st.Gap != 25*time.Second {
		t.Errorf("stream %+v, %d gaps of %v: want %+v, 4 gaps of 25s", st.Key, st.Gaps, st.Gap, want)
	}
	if st.Expect.Source != estimate.SourceLearned || st.Expect.Samples != 5 || st.Expect.Median != 15*time.Second {
		t.Errorf("its pods are expected %+v, want the 5 learned runs of 15s", st.Expect)
	}
	if st.Template.Namespace != "team-a" || st.Template.Priority != 1000 || !st.Template.Gated {
		t.Errorf("template %+v: want a gated pod of team-a at priority 1000", st.Template)
	}
}
