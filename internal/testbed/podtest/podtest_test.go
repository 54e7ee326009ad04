package podtest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

func TestBuilder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	controller := true
	got := New("p").NS("team-a").UID("u").At(t0).Created(3).Gated().Gates("x.io/y").
		Req("cpu=2").Req("memory=1Gi").Lim("cpu=3").Priority(7).Group("g", 2).AdmittedBy("team-a/q").
		Owner("batch/v1", "Job", "j", true).RV(5).Phase(corev1.PodPending).Obj()
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", Namespace: "team-a", UID: "u", ResourceVersion: "5",
			CreationTimestamp: metav1.NewTime(t0.Add(3 * time.Second)),
			Labels:            map[string]string{v1alpha1.GroupLabel: "g"},
			Annotations:       map[string]string{v1alpha1.GroupSizeAnnotation: "2", v1alpha1.AdmittedByAnnotation: "team-a/q"},
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "uid-j", Controller: &controller}},
		},
		Spec: corev1.PodSpec{
			SchedulingGates: []corev1.PodSchedulingGate{{Name: v1alpha1.SchedulingGate}, {Name: "x.io/y"}},
			Containers: []corev1.Container{{Name: "c", Image: Image, Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")},
			}}},
			Priority: new(int32(7)),
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("built pod (-want +got):\n%s", diff)
	}
	if got := New("p").Gated().Ungated().Obj().Spec.SchedulingGates; got != nil {
		t.Errorf("Ungated left gates %v", got)
	}
}
