//go:build e2e

package e2e

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

// jobSpec describes one Job of a burst: its CPU request, priority class and how long
// kwok lets its pod run.
type jobSpec struct {
	name     string
	cpu      string
	priority string
	runFor   time.Duration
}

// kwok's stage annotations: a bound pod is initialised after readyAfter, reaches
// Running readyAfter later and Succeeded runFor after that. Delay and jitter are both set: kwok's jitter is an upper bound that
// would otherwise win.
const readyAfter = 300 * time.Millisecond

// job builds a Job of one pod with no scheduling gate: the webhook adds it.
func job(namespace string, s jobSpec) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: s.name},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels: map[string]string{"app": "burst", "priority": s.priority},
					Annotations: map[string]string{
						"pod-create.stage.kwok.x-k8s.io/delay":          readyAfter.String(),
						"pod-create.stage.kwok.x-k8s.io/jitter-delay":   readyAfter.String(),
						"pod-ready.stage.kwok.x-k8s.io/delay":           readyAfter.String(),
						"pod-ready.stage.kwok.x-k8s.io/jitter-delay":    readyAfter.String(),
						"pod-complete.stage.kwok.x-k8s.io/delay":        s.runFor.String(),
						"pod-complete.stage.kwok.x-k8s.io/jitter-delay": s.runFor.String(),
					},
				},
				Spec: corev1.PodSpec{
					RestartPolicy:     corev1.RestartPolicyNever,
					PriorityClassName: s.priority,
					Containers: []corev1.Container{{
						Name:    "work",
						Image:   "registry.example/batch-work:1.0",
						Command: []string{"/work", "--for=" + s.runFor.String()},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU:    resource.MustParse(s.cpu),
							corev1.ResourceMemory: resource.MustParse("64Mi"),
						}},
					}},
				},
			},
		},
	}
}

// burst is the journey's workload: 8 low-priority Jobs created first, then 4
// high-priority ones, with mixed sizes and run times.
func burst() []jobSpec {
	var specs []jobSpec
	for n := range 8 {
		cpu := "1"
		if n%3 == 2 {
			cpu = "2"
		}
		specs = append(specs, jobSpec{
			name: fmt.Sprintf("low-%02d", n), cpu: cpu, priority: "low",
			runFor: time.Duration(1+n%4) * time.Second,
		})
	}
	for n := range 4 {
		specs = append(specs, jobSpec{
			name: fmt.Sprintf("high-%02d", n), cpu: "1", priority: "high",
			runFor: time.Duration(2+n%2) * time.Second,
		})
	}
	return specs
}

func priorityClass(name string, value int32) *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
}

func budget(namespace, name string, state v1alpha1.BudgetState, hard corev1.ResourceList) *v1alpha1.Budget {
	return &v1alpha1.Budget{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       v1alpha1.BudgetSpec{Hard: hard, State: state},
	}
}

func enabledNamespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: name, Labels: map[string]string{v1alpha1.EnabledLabel: "true"},
	}}
}
