package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
)

func pod(name, cpu string, gated bool, phase corev1.PodPhase) *corev1.Pod {
	b := podtest.New(name).Container("c", "").Req("cpu=" + cpu).Phase(phase)
	if gated {
		b.Gated()
	}
	return b.Obj()
}

func TestTracker(t *testing.T) {
	now := time.Date(2026, 1, 2, 12, 1, 2, 0, time.UTC)
	tr := newTracker()
	var lines []string
	for _, p := range []*corev1.Pod{
		pod("job-00", "1", true, corev1.PodPending),
		pod("job-01", "2", true, corev1.PodPending),
		pod("job-00", "1", true, corev1.PodPending), // no change: no line
		pod("job-00", "1", false, corev1.PodPending),
		pod("job-01", "2", false, corev1.PodRunning),
		pod("job-00", "1", false, corev1.PodSucceeded),
		pod("job-01", "2", false, corev1.PodFailed),
	} {
		if l := tr.observe(p, now); l != "" {
			lines = append(lines, l)
		}
	}
	want := []string{
		"12:01:02  job-00         created, SchedulingGated",
		"12:01:02  job-01         created, SchedulingGated",
		"12:01:02  job-00         SchedulingGated -> Pending",
		"12:01:02  job-01         SchedulingGated -> Running",
		"12:01:02  job-00         Pending -> Succeeded",
		"12:01:02  job-01         Running -> Failed",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	if tr.peak != 3000 || tr.done != 1 || !cmp.Equal(tr.failed, []string{"job-01"}) {
		t.Errorf("peak %dm, done %d, failed %v; want 3000m, 1, [job-01]", tr.peak, tr.done, tr.failed)
	}
}

func TestBudgetLine(t *testing.T) {
	b := &v1alpha1.Budget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "demo"},
		Status: v1alpha1.BudgetStatus{
			State:        v1alpha1.StateOpen,
			Hard:         corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("6")},
			Used:         corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("3")},
			AdmittedPods: 3, GatedPods: 20,
		},
	}
	got := budgetLine(time.Date(2026, 1, 2, 12, 1, 2, 0, time.UTC), b, 7, 30)
	want := "12:01:02  budget demo/demo Open   [######......] cpu 3/6  admitted 3  gated 20  done 7/30"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("budgetLine (-want +got):\n%s", diff)
	}
}
