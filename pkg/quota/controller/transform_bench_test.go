package controller

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkCompactPod is the informer transform's cost for one pod event: every event
// of every pod in the cluster goes through it, in the informer's one goroutine, before
// the manager's handler sees it. The pods are the bench's gated pods as the API server
// sends them (apiPodJSON), decoded beforehand.
func BenchmarkCompactPod(b *testing.B) {
	pods := make([]*corev1.Pod, 1000)
	for i := range pods {
		pods[i] = &corev1.Pod{}
		if err := json.Unmarshal(apiPodJSON(i), pods[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := CompactPod(pods[i%len(pods)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompactPodOfManyContainers is the informer transform's cost for one event of
// a pod of 9000 BestEffort containers, which a tenant with edit may create: it grows
// with the containers, not with their square.
func BenchmarkCompactPodOfManyContainers(b *testing.B) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: manyContainers(9000)}}
	b.ReportAllocs()
	for b.Loop() {
		_ = compactPod(pod)
	}
}

// BenchmarkSimulatedViews is what SimulatePods spends on the simulated pods' views
// before it simulates: the template read once, then a view per pod. The first case is
// one pod of 9000 containers, the second the largest what-if by default (1000 pods of
// 10 containers).
func BenchmarkSimulatedViews(b *testing.B) {
	for _, tc := range []struct{ containers, count int }{{9000, 1}, {10, 1000}} {
		tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: manyContainers(tc.containers)}}
		now := time.Now()
		b.Run(fmt.Sprintf("containers=%d/count=%d", tc.containers, tc.count), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cp := compactSimulated(simulatedPod(tmpl, now))
				for i := range tc.count {
					p := *cp
					p.view.Name = "simulated-" + strconv.Itoa(i)
					_ = p.factsOf()
				}
			}
		})
	}
}

// simulatedPod is the first pod a what-if makes of tmpl at now, as
// estimator.WhatIfs.SimulatePods hands it to the caches (worldSource.AddPods).
func simulatedPod(tmpl *corev1.PodTemplateSpec, now time.Time) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
	pod.Namespace, pod.Name = "team-a", "simulated-0"
	pod.CreationTimestamp = metav1.NewTime(now)
	pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: "quotagate.io/budget"})
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending}
	return pod
}

// manyContainers are n containers that request 10m of CPU each and set nothing else.
func manyContainers(n int) []corev1.Container {
	out := make([]corev1.Container, n)
	for i := range out {
		out[i] = corev1.Container{Name: fmt.Sprintf("c%d", i), Image: "registry.invalid/app",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}}}
	}
	return out
}
