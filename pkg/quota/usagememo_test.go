package quota

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
)

// SharedPodUsage remembers usage by its inputs: it must give what PodUsage gives for
// every pod, whichever pods it saw before. Pods that differ in one input (a sidecar's
// place, a restart policy, pod-level resources, overhead, a limit, what the status says
// a resize allocated or applied, an Infeasible resize) must not share an entry: each
// case below differs from some other in one of them.
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
		return podtest.New("").Spec(corev1.PodSpec{InitContainers: init, Containers: ctrs}).Obj()
	}
	app := ctr("app", req("cpu", "1", "memory", "1Gi"))
	// withStatus is the plain pod with a status for container name.
	withStatus := func(name string, allocated corev1.ResourceList, applied *corev1.ResourceRequirements) *corev1.Pod {
		p := pod([]corev1.Container{ctr("init", req("cpu", "2"))}, app)
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: name, AllocatedResources: allocated, Resources: applied}}
		return p
	}
	resized := withStatus("app", list("cpu", "3", "memory", "3Gi"), &corev1.ResourceRequirements{Requests: list("cpu", "3", "memory", "3Gi")})
	resized.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue}}
	infeasible := withStatus("app", list("cpu", "1", "memory", "1Gi"), &corev1.ResourceRequirements{Requests: list("cpu", "1", "memory", "1Gi")})
	infeasible.Spec.Containers = []corev1.Container{ctr("app", req("cpu", "4", "memory", "1Gi"))}
	feasible := infeasible.DeepCopy()
	infeasible.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible}}
	initResized := withStatus("init", nil, nil)
	initResized.Status.ContainerStatuses = nil
	initResized.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", AllocatedResources: list("cpu", "5")}}
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
		{"allocated only", withStatus("app", list("cpu", "3", "memory", "3Gi"), nil)},
		{"applied only", withStatus("app", nil, &corev1.ResourceRequirements{Requests: list("cpu", "3", "memory", "3Gi")})},
		{"applied, empty requests", withStatus("app", list("cpu", "3", "memory", "3Gi"), &corev1.ResourceRequirements{Requests: corev1.ResourceList{}})},
		{"applied, no requests", withStatus("app", list("cpu", "3", "memory", "3Gi"), &corev1.ResourceRequirements{})},
		{"applied limits", withStatus("app", nil, &corev1.ResourceRequirements{Limits: list("cpu", "3")})},
		{"the init container resized", withStatus("init", list("cpu", "5"), nil)},
		{"the init container resized, in the init statuses", initResized},
		{"a status of no container", withStatus("gone", list("cpu", "9"), nil)},
		{"a resize pending", feasible},
		{"the same resize, infeasible", infeasible},
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
	// Cases of different usage never share a key, whichever order they come in.
	for i, a := range cases {
		for _, b := range cases[i+1:] {
			if string(usageKey(nil, a.pod)) == string(usageKey(nil, b.pod)) && !amount.EqualQuantities(PodUsage(a.pod), PodUsage(b.pod)) {
				t.Errorf("%q and %q share a key but not their usage: an input of PodUsage is missing from usageKey", a.name, b.name)
			}
		}
	}
	if diff := listDiff(parseList("requests.cpu=3,requests.memory=3Gi,pods=1,count/pods=1"), SharedPodUsage(resized)); diff != "" {
		t.Errorf("a pod resized down is charged what the kubelet still runs (-want +got):\n%s", diff)
	}
}
