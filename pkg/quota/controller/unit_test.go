package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/gates"
	"github.com/quotagate/quotagate/pkg/quota"
)

// TestCompactPodKeepsWhatTheManagerReads: the pod cache keeps the core's view of a
// pod (usage as Kubernetes counts it, group, order) and what an ungate patch needs,
// nothing else.
func TestCompactPodKeepsWhatTheManagerReads(t *testing.T) {
	full := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", Namespace: "ns", UID: "u1", ResourceVersion: "7",
			CreationTimestamp: metav1.Unix(1_700_000_000, 0),
			Labels:            map[string]string{v1alpha1.GroupLabel: "g"},
			Annotations: map[string]string{v1alpha1.GroupSizeAnnotation: "2", v1alpha1.AdmittedByAnnotation: "ns/b,org",
				"big": "x", "kubectl.kubernetes.io/last-applied-configuration": "{...}"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		},
		Spec: corev1.PodSpec{
			Priority:        ptr.To[int32](7),
			SchedulingGates: []corev1.PodSchedulingGate{{Name: "example.com/hold"}, {Name: v1alpha1.SchedulingGate}},
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
	obj, err := CompactPod(full)
	if err != nil {
		t.Fatal(err)
	}
	cached := obj.(*cachedPod)
	now := time.Unix(1_700_000_100, 0)
	if diff := cmp.Diff(quota.NewPod(full, v1alpha1.SchedulingGate, now), cached.at(now, v1alpha1.SchedulingGate)); diff != "" {
		t.Errorf("the core's view changed by caching (-full +cached):\n%s", diff)
	}
	if diff := cmp.Diff(estimate.FactsOf(full), cached.factsOf()); diff != "" {
		t.Errorf("the estimator's facts changed by caching (-full +cached):\n%s", diff)
	}
	if cached.at(now, "example.com/other").Gated {
		t.Errorf("gated for a gate the pod does not carry")
	}
	// The patch built from the cache is the one built from the full pod.
	ann := map[string]string{v1alpha1.AdmittedByAnnotation: "ns/b"}
	want, _ := gates.UngatePatch(full, v1alpha1.SchedulingGate, ann)
	got, _ := gates.UngatePatch(cached.patchTarget(), v1alpha1.SchedulingGate, ann)
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("ungate patch (-full +cached):\n%s", diff)
	}
	bare := full.DeepCopy()
	bare.Annotations = nil
	want, _ = gates.UngatePatch(bare, v1alpha1.SchedulingGate, ann)
	got, _ = gates.UngatePatch(compactPod(bare).patchTarget(), v1alpha1.SchedulingGate, ann)
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("ungate patch of a pod without annotations (-full +cached):\n%s", diff)
	}
	if again, _ := CompactPod(cached); again != cached {
		t.Errorf("the transform is not idempotent")
	}
	if key, err := toolscache.MetaNamespaceKeyFunc(cached); err != nil || key != "ns/p" {
		t.Errorf("store key = %q, %v; want ns/p", key, err)
	}
}

// A terminating pod's cached view turns terminal once its grace period is over,
// whenever it is read.
func TestCompactPodPastItsGracePeriod(t *testing.T) {
	deleted := metav1.Unix(1_700_000_000, 0)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "p", Namespace: "ns", UID: "u1",
		DeletionTimestamp: &deleted, DeletionGracePeriodSeconds: ptr.To[int64](30),
	}}
	cached := compactPod(pod)
	for _, now := range []time.Time{deleted.Add(10 * time.Second), deleted.Add(31 * time.Second)} {
		if diff := cmp.Diff(quota.NewPod(pod, v1alpha1.SchedulingGate, now), cached.at(now, v1alpha1.SchedulingGate)); diff != "" {
			t.Errorf("at %s (-full +cached):\n%s", now.Sub(deleted.Time), diff)
		}
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
		"annotations: keys are added one by one": {
			pod: &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{ResourceVersion: "5", Annotations: map[string]string{"example.com/team": "a"}},
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
