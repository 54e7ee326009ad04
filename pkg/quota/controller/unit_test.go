package controller

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/gates"
	"github.com/quotagate/quotagate/pkg/quota"
)

func TestStripPodKeepsWhatAccountingReads(t *testing.T) {
	full := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", Namespace: "ns", UID: "u1", ResourceVersion: "7",
			Labels:        map[string]string{v1alpha1.GroupLabel: "g"},
			Annotations:   map[string]string{v1alpha1.GroupSizeAnnotation: "2", "big": "x", "kubectl.kubernetes.io/last-applied-configuration": "{...}"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		},
		Spec: corev1.PodSpec{
			SchedulingGates: []corev1.PodSchedulingGate{{Name: v1alpha1.SchedulingGate}},
			InitContainers: []corev1.Container{{
				Name: "sidecar", Image: "i", Command: []string{"sh"}, RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}},
			}},
			Containers: []corev1.Container{{
				Name: "c", Image: "i", Env: []corev1.EnvVar{{Name: "A", Value: "b"}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			}},
			Overhead: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			Volumes:  []corev1.Volume{{Name: "v"}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled}}},
	}
	got, err := StripPod(full)
	if err != nil {
		t.Fatal(err)
	}
	stripped := got.(*corev1.Pod)
	if diff := cmp.Diff(quota.PodUsage(full), quota.PodUsage(stripped)); diff != "" {
		t.Errorf("usage changed by stripping (-full +stripped):\n%s", diff)
	}
	if stripped.ManagedFields != nil || stripped.Spec.Volumes != nil || stripped.Spec.Containers[0].Env != nil || stripped.Status.Conditions != nil {
		t.Errorf("stripped pod still has fields accounting does not read: %+v", stripped)
	}
	wantAnn := map[string]string{v1alpha1.GroupSizeAnnotation: "2", hasOtherAnnotations: "true"}
	if diff := cmp.Diff(wantAnn, stripped.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
}

func TestUngatePatch(t *testing.T) {
	ann := map[string]string{v1alpha1.AdmittedByAnnotation: "ns/b"}
	tests := map[string]struct {
		pod  *corev1.Pod
		want string
		ok   bool
	}{
		"no annotations: the map is added, guarded by the resourceVersion": {
			pod: &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{ResourceVersion: "5"},
				Spec:       corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: "other"}, {Name: v1alpha1.SchedulingGate}}},
			},
			want: `[{"op":"test","path":"/metadata/resourceVersion","value":"5"},{"op":"test","path":"/spec/schedulingGates/1/name","value":"quotagate.io/budget"},{"op":"remove","path":"/spec/schedulingGates/1"},{"op":"add","path":"/metadata/annotations","value":{"quotagate.io/admitted-by":"ns/b"}}]`,
			ok:   true,
		},
		"stripped annotations: keys are added one by one": {
			pod: &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{ResourceVersion: "5", Annotations: map[string]string{hasOtherAnnotations: "true"}},
				Spec:       corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: v1alpha1.SchedulingGate}}},
			},
			want: `[{"op":"test","path":"/metadata/resourceVersion","value":"5"},{"op":"test","path":"/spec/schedulingGates/0/name","value":"quotagate.io/budget"},{"op":"remove","path":"/spec/schedulingGates/0"},{"op":"add","path":"/metadata/annotations/quotagate.io~1admitted-by","value":"ns/b"}]`,
			ok:   true,
		},
		"no gate: no patch": {pod: &corev1.Pod{}, ok: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := gates.UngatePatch(tc.pod, v1alpha1.SchedulingGate, ann)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	tests := map[string]struct {
		err    error
		reason string
	}{
		"ok":        {nil, ""},
		"404":       {apierrors.NewNotFound(gr, "p"), "not_found"},
		"409":       {apierrors.NewConflict(gr, "p", errors.New("x")), "conflict"},
		"422":       {apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", nil), "test_failed"},
		"429":       {apierrors.NewTooManyRequests("slow down", 1), "too_many_requests"},
		"500":       {apierrors.NewInternalError(errors.New("boom")), "server_error"},
		"503":       {apierrors.NewServiceUnavailable("later"), "server_error"},
		"timeout":   {context.DeadlineExceeded, "timeout"},
		"forbidden": {apierrors.NewForbidden(gr, "p", errors.New("guard")), "forbidden"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := classify(tc.err); got != tc.reason {
				t.Errorf("classify = %q, want %q", got, tc.reason)
			}
		})
	}
}
