package main

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

const (
	demoNamespace = "demo"
	budgetName    = "demo"
)

// burstJob is the n-th Job of the burst: one CPU, every fifth one high priority, and
// a run time of 1 to 6 seconds that kwok plays out (its pod-complete stage reads it from
// the annotations; delay and jitter are equal so the time is exact). Without the
// pod-create and pod-ready annotations kwok would take 1 to 6 s each to start a pod.
func burstJob(n int) *batchv1.Job {
	priority := "batch-low"
	if n%5 == 4 {
		priority = "batch-high"
	}
	return job(fmt.Sprintf("job-%02d", n), priority, time.Duration(1+(n*7)%6)*time.Second)
}

// job is a Job of one pod of one CPU, of priority class priority, whose pod runs for
// runFor, and declares no duration.
func job(name, priority string, runFor time.Duration) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: demoNamespace, Name: name},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels: map[string]string{"app": "demo-burst"},
					Annotations: map[string]string{
						"pod-create.stage.kwok.x-k8s.io/delay":          "100ms",
						"pod-create.stage.kwok.x-k8s.io/jitter-delay":   "100ms",
						"pod-ready.stage.kwok.x-k8s.io/delay":           "200ms",
						"pod-ready.stage.kwok.x-k8s.io/jitter-delay":    "200ms",
						"pod-complete.stage.kwok.x-k8s.io/delay":        runFor.String(),
						"pod-complete.stage.kwok.x-k8s.io/jitter-delay": runFor.String(),
					},
				},
				Spec: corev1.PodSpec{
					RestartPolicy:     corev1.RestartPolicyNever,
					PriorityClassName: priority,
					Containers: []corev1.Container{{
						Name:  "work",
						Image: "registry.example/batch-work:1.0",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU:    resource.MustParse("1"),
							corev1.ResourceMemory: resource.MustParse("256Mi"),
						}},
					}},
				},
			},
		},
	}
}

func priorityClasses() []*schedulingv1.PriorityClass {
	return []*schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "batch-high"}, Value: 1000, Description: "demo: urgent batch work"},
		{ObjectMeta: metav1.ObjectMeta{Name: "batch-low"}, Value: 10, Description: "demo: background batch work"},
	}
}

func demoBudget(cpu string, pods int64) *v1alpha1.Budget {
	return &v1alpha1.Budget{
		ObjectMeta: metav1.ObjectMeta{Namespace: demoNamespace, Name: budgetName},
		Spec: v1alpha1.BudgetSpec{Hard: corev1.ResourceList{
			corev1.ResourceRequestsCPU: resource.MustParse(cpu),
			corev1.ResourcePods:        *resource.NewQuantity(pods, resource.DecimalSI),
		}},
	}
}

func demoNamespaceObject() *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: demoNamespace, Labels: map[string]string{v1alpha1.EnabledLabel: "true"},
	}}
}
