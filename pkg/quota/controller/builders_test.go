package controller_test

import (
	"fmt"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/gates"
)

// kwokRunFor makes kwok complete a Job's pod after d (kwok's general pod stages
// complete only Job-owned pods; without the jitter annotation they add up to 5 s).
func kwokRunFor(d string) map[string]string {
	return map[string]string{
		"pod-complete.stage.kwok.x-k8s.io/delay":        d,
		"pod-complete.stage.kwok.x-k8s.io/jitter-delay": d,
	}
}

// gatedPod is a pod as the webhook would have admitted it: carrying the quotagate gate.
func gatedPod(ns, name string, cpu string) *corev1.Pod {
	return podtest.New(name).NS(ns).Gated().Container("c", "registry.invalid/app").Req("cpu=" + cpu).
		// kwok nodes carry this taint; real pods would run on real nodes.
		Toleration(corev1.Toleration{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}).
		Obj()
}

// gatedJob is a Job whose pods carry the gate and run for runFor on kwok.
func gatedJob(ns, name, cpu string, completions int32, runFor string, priorityClass string) *batchv1.Job {
	pod := gatedPod(ns, "", cpu)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{
			Completions:  ptr.To(completions),
			Parallelism:  ptr.To(completions),
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: kwokRunFor(runFor)},
				Spec: func() corev1.PodSpec {
					s := pod.Spec
					s.RestartPolicy = corev1.RestartPolicyNever
					s.PriorityClassName = priorityClass
					return s
				}(),
			},
		},
	}
}

func budget(ns, name string, hard corev1.ResourceList, strategy v1alpha1.QueueingStrategy) *v1alpha1.Budget {
	return &v1alpha1.Budget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1alpha1.BudgetSpec{Hard: hard, QueueingStrategy: strategy},
	}
}

func cpu(v string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceName("requests.cpu"): resource.MustParse(v)}
}

func mustCreate(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := admin.Create(t.Context(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// podsOf lists a namespace's pods.
func podsOf(t *testing.T, ns string) []corev1.Pod {
	t.Helper()
	list, err := clientset.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing pods: %v", err)
	}
	return list.Items
}

// countGated returns how many pods of ns carry the gate, and how many do not.
func countGated(t *testing.T, ns string) (gated, ungated int) {
	for _, p := range podsOf(t, ns) {
		if gates.HasGate(&p, v1alpha1.SchedulingGate) {
			gated++
		} else {
			ungated++
		}
	}
	return gated, ungated
}

func isGated(t *testing.T, ns, name string) bool {
	t.Helper()
	p, err := clientset.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting pod %s: %v", name, err)
	}
	return gates.HasGate(p, v1alpha1.SchedulingGate)
}

func podName(i int) string { return fmt.Sprintf("p%02d", i) }
