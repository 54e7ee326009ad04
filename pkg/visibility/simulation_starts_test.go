package visibility

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/quotagate/quotagate/api/v1alpha1"
	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/quota"
)

// trainWorld is a Budget of 8 CPUs full of 8 pods of Job train, admitted 30 s apart
// and running for elapsed and more, with 32 runs of train learned: 1 to 6 minutes.
func trainWorld(now time.Time, elapsed time.Duration) func() *estimate.WorldBuilder {
	return func() *estimate.WorldBuilder {
		l := estimate.NewLearner(0)
		keys := estimate.KeysOf(trainPod(now, "train-old", 0), nil)
		for i := range estimate.Window {
			l.Record(keys, time.Duration(60+(i*47)%300)*time.Second)
		}
		b := estimate.NewWorldBuilder(now, l, map[string]map[string]string{"team-a": {v1alpha1.EnabledLabel: "true"}},
			[]quota.Budget{{Key: quota.BudgetKey{Namespace: "team-a", Name: "quota"}, Hard: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}}}, nil)
		for i := range 8 {
			held := now.Add(-elapsed - time.Duration(i)*30*time.Second)
			p := trainPod(now, fmt.Sprintf("train-run-%d", i), i)
			p.Status.StartTime = ptr.To(metav1.NewTime(held))
			p.Annotations = map[string]string{v1alpha1.AdmittedAtAnnotation: held.Format(time.RFC3339)}
			view, facts := quota.NewPod(p, v1alpha1.SchedulingGate, now), estimate.FactsOf(p)
			b.Add(view, &facts)
		}
		return b
	}
}

// trainPod is a pod of Job train in team-a asking for 1 CPU.
func trainPod(now time.Time, name string, i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, UID: types.UID(name), CreationTimestamp: metav1.NewTime(now.Add(-time.Hour + time.Duration(i)*time.Second)),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "train", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
	}
}

// TestPodSimulationGivesEachPositionItsOwnStart: 11 pods of Job train simulated
// behind 8 running ones, through the visibility handler, each get their own estimated
// start, later the further back they wait: the first eight as the running pods end
// one by one, the last three as the first simulated ones end. Both while the running
// pods are within what train's runs took, and once they have run longer than any
// (those pods used to be expected to end at once, all together, and the first eight
// positions to start at once).
func TestPodSimulationGivesEachPositionItsOwnStart(t *testing.T) {
	now := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	const body = `{"apiVersion":"visibility.quotagate.io/v1alpha1","kind":"PodSimulation","spec":{"count":11,"template":{
		"metadata":{"generateName":"train-","ownerReferences":[{"apiVersion":"batch/v1","kind":"Job","name":"train","uid":"train","controller":true}]},
		"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"1"}}}]}}}}`
	for name, elapsed := range map[string]time.Duration{
		"running pods within their runs":     time.Minute,
		"running pods longer than every run": 10 * time.Minute,
	} {
		t.Run(name, func(t *testing.T) {
			h := NewHandler(fakeQueues{}, clocktesting.NewFakePassiveClock(now), WithSimulator(worldSimulator{now: now, world: trainWorld(now, elapsed)}))
			r := httptest.NewRequest(http.MethodPost, PodSimulationsPath("team-a"), strings.NewReader(body))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			var sim visv1.PodSimulation
			if err := json.Unmarshal(rec.Body.Bytes(), &sim); err != nil || rec.Code != http.StatusCreated {
				t.Fatalf("POST: %d %v\n%s", rec.Code, err, rec.Body)
			}
			if len(sim.Status.Pods) != 11 {
				t.Fatalf("%d pods simulated, want 11", len(sim.Status.Pods))
			}
			var starts []string
			var last time.Time
			for i, p := range sim.Status.Pods {
				e := p.EstimatedStart
				if e == nil || e.Median == nil {
					t.Fatalf("position %d: no estimated start: %+v", i+1, e)
				}
				starts = append(starts, e.Median.Sub(now).Round(time.Second).String())
				if i > 0 && !e.Median.After(last) {
					t.Errorf("position %d starts at %s, not after position %d (%s)", i+1, e.Median.Time, i, last)
				}
				if !e.Low.Before(e.High) {
					t.Errorf("position %d: range %s to %s, want one", i+1, e.Low.Time, e.High.Time)
				}
				last = e.Median.Time
			}
			t.Logf("medians after now, by position: %s", strings.Join(starts, " "))
		})
	}
}

// TestPodSimulationFitsNowAtItsOwnMoment: a simulation run 0.6 s into a second, with
// room in the Budget for its pod, answers a start equal to the simulation's
// creationTimestamp, which clients read as "now" (kubectl quotagate simulate prints
// the ETA against it). Both are rounded to the nearest second; a creationTimestamp
// cut to the second put such a pod "1s" away.
func TestPodSimulationFitsNowAtItsOwnMoment(t *testing.T) {
	now := time.Date(2026, 12, 5, 9, 0, 0, 600_000_000, time.UTC)
	world := func() *estimate.WorldBuilder {
		return estimate.NewWorldBuilder(now, estimate.NewLearner(0), map[string]map[string]string{"team-a": {v1alpha1.EnabledLabel: "true"}},
			[]quota.Budget{{Key: quota.BudgetKey{Namespace: "team-a", Name: "quota"}, Hard: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}}}, nil)
	}
	const body = `{"apiVersion":"visibility.quotagate.io/v1alpha1","kind":"PodSimulation","spec":{"count":1,"template":{
		"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"1"}}}]}}}}`
	h := NewHandler(fakeQueues{}, clocktesting.NewFakePassiveClock(now), WithSimulator(worldSimulator{now: now, world: world}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, PodSimulationsPath("team-a"), strings.NewReader(body)))
	var sim visv1.PodSimulation
	if err := json.Unmarshal(rec.Body.Bytes(), &sim); err != nil || rec.Code != http.StatusCreated || len(sim.Status.Pods) != 1 {
		t.Fatalf("POST: %d %v\n%s", rec.Code, err, rec.Body)
	}
	p := sim.Status.Pods[0]
	if e := p.EstimatedStart; !p.Admitted || e == nil || e.Median == nil || !e.Median.Equal(&sim.CreationTimestamp) {
		t.Errorf("a pod that fits: admitted %t, estimated start %+v, want the simulation's creationTimestamp %s", p.Admitted, e, sim.CreationTimestamp.Time)
	}
}
