package quota

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// SharedPodUsage remembers usage by its inputs: it must give what PodUsage gives for
// every pod, whichever pods it saw before. Pods that differ in one input (a sidecar's
// place, a restart policy, pod-level resources, overhead, a limit, what a container's
// status reports of an in-place resize) must not share an entry, and pods equal in
// their inputs but not in the rest of their status must.
func TestSharedPodUsage(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	list := func(kv ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	req := func(kv ...string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: list(kv...)}
	}
	ctr := func(name string, r corev1.ResourceRequirements) corev1.Container {
		return corev1.Container{Name: name, Resources: r}
	}
	sidecar := func(name string, r corev1.ResourceRequirements) corev1.Container {
		c := ctr(name, r)
		c.RestartPolicy = &always
		return c
	}
	pod := func(init []corev1.Container, ctrs ...corev1.Container) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{InitContainers: init, Containers: ctrs}}
	}
	app := ctr("app", req("cpu", "1", "memory", "1Gi"))
	resized := pod(nil, app)
	resized.Status.Resize = "InProgress"
	resized.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app",
		AllocatedResources: list("cpu", "3", "memory", "3Gi"),
		Resources:          &corev1.ResourceRequirements{Requests: list("cpu", "3", "memory", "3Gi")}}}
	resized.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue}}
	// The same spec, resized: allocated only, actual only, actual requests without
	// limits, an init container's status, an infeasible resize (spec is ignored then).
	allocatedOnly := pod(nil, app)
	allocatedOnly.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", AllocatedResources: list("cpu", "3")}}
	actualOnly := pod(nil, app)
	actualOnly.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Resources: &corev1.ResourceRequirements{Requests: list("cpu", "3"), Limits: list("cpu", "4")}}}
	actualRequests := pod(nil, app)
	actualRequests.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Resources: &corev1.ResourceRequirements{Requests: list("cpu", "3")}}}
	initResized := pod([]corev1.Container{sidecar("proxy", req("cpu", "1"))}, app)
	initResized.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "proxy", AllocatedResources: list("cpu", "2")}}
	infeasible := pod(nil, app)
	infeasible.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", AllocatedResources: list("cpu", "500m", "memory", "1Gi")}}
	infeasible.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible}}
	// Equal inputs, a different status otherwise: they share plain's entry.
	running := pod(nil, app)
	running.Status.Phase = corev1.PodRunning
	running.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true}}
	withOverhead := pod(nil, app)
	withOverhead.Spec.Overhead = list("cpu", "250m")
	podLevel := pod(nil, app)
	podLevel.Spec.Resources = &corev1.ResourceRequirements{Requests: list("cpu", "4"), Limits: list("cpu", "4")}
	limited := pod(nil, ctr("app", corev1.ResourceRequirements{Requests: list("cpu", "1", "memory", "1Gi"), Limits: list("cpu", "2")}))

	cases := []struct {
		name string
		pod  *corev1.Pod
	}{
		{"plain", pod(nil, app)},
		{"the same spec, resized in its status", resized},
		{"resized: allocated only", allocatedOnly},
		{"resized: actual only", actualOnly},
		{"resized: actual requests only", actualRequests},
		{"resized: a sidecar", initResized},
		{"resized: infeasible", infeasible},
		{"running", running},
		{"1000m for 1", pod(nil, ctr("app", req("cpu", "1000m", "memory", "1Gi")))},
		{"memory in decimal", pod(nil, ctr("app", req("cpu", "1", "memory", "1073741824")))},
		{"an init container before", pod([]corev1.Container{ctr("init", req("cpu", "2"))}, app)},
		{"the same as a sidecar", pod([]corev1.Container{sidecar("init", req("cpu", "2"))}, app)},
		{"sidecar then init", pod([]corev1.Container{sidecar("proxy", req("cpu", "1")), ctr("init", req("cpu", "3"))}, app)},
		{"init then sidecar", pod([]corev1.Container{ctr("init", req("cpu", "3")), sidecar("proxy", req("cpu", "1"))}, app)},
		{"overhead", withOverhead},
		{"pod-level resources", podLevel},
		{"a limit", limited},
		{"two containers", pod(nil, app, ctr("log", req("cpu", "10m")))},
		{"a GPU", pod(nil, ctr("train", req("cpu", "1", "nvidia.com/gpu", "2")))},
		{"no requests", pod(nil, ctr("app", corev1.ResourceRequirements{}))},
		{"a zero request", pod(nil, ctr("app", req("cpu", "0", "memory", "1Gi")))},
	}
	// Random pods as well, from a few values, so that many share their inputs.
	r := rand.New(rand.NewPCG(1, 2))
	values := []string{"100m", "250m", "1", "2", "128Mi", "1Gi"}
	for i := range 200 {
		var ctrs []corev1.Container
		for range 1 + r.IntN(3) {
			ctrs = append(ctrs, ctr("c", req("cpu", values[r.IntN(4)], "memory", values[4+r.IntN(2)])))
		}
		var init []corev1.Container
		if r.IntN(2) == 0 {
			init = append(init, sidecar("s", req("cpu", values[r.IntN(4)])))
		}
		cases = append(cases, struct {
			name string
			pod  *corev1.Pod
		}{fmt.Sprintf("random %d", i), pod(init, ctrs...)})
	}
	equal := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
	for round := range 2 { // the second round finds every entry remembered
		for _, c := range cases {
			if diff := cmp.Diff(PodUsage(c.pod), SharedPodUsage(c.pod), equal); diff != "" {
				t.Errorf("round %d, %s: SharedPodUsage differs from PodUsage (-want +got):\n%s", round, c.name, diff)
			}
		}
	}
	if a, b := usageKey(nil, cases[0].pod), usageKey(nil, running); string(a) != string(b) {
		t.Errorf("a running pod has a key of its own, not its spec's: only a resize in its status is an input of PodUsage")
	}
	for _, c := range []*corev1.Pod{resized, allocatedOnly, actualOnly, actualRequests, infeasible} {
		if string(usageKey(nil, cases[0].pod)) == string(usageKey(nil, c)) {
			t.Errorf("a pod resized in its status (%+v) shares the key of its spec", c.Status.ContainerStatuses)
		}
	}
}
