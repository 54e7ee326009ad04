package quota

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
)

func TestPodUsage(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	tests := map[string]struct {
		pod  *corev1.Pod
		want string
	}{
		"requests and limits": {
			pod: func() *corev1.Pod {
				p := makePod("p").Req("cpu=500m,memory=1Gi,ephemeral-storage=1Gi").Obj()
				p.Spec.Containers[0].Resources.Limits = parseList("cpu=1,memory=2Gi")
				return p
			}(),
			want: "requests.cpu=500m,requests.memory=1Gi,requests.ephemeral-storage=1Gi,limits.cpu=1,limits.memory=2Gi,pods=1,count/pods=1",
		},
		"no resources still counts the pod": {
			pod:  makePod("p").Obj(),
			want: "pods=1,count/pods=1",
		},
		"extended resources and hugepages count as requests only": {
			pod: func() *corev1.Pod {
				p := makePod("p").Req("nvidia.com/gpu=2,hugepages-2Mi=4Mi").Obj()
				p.Spec.Containers[0].Resources.Limits = parseList("nvidia.com/gpu=2,hugepages-2Mi=4Mi")
				return p
			}(),
			want: "requests.nvidia.com/gpu=2,requests.hugepages-2Mi=4Mi,pods=1,count/pods=1",
		},
		"init container larger than the app containers wins": {
			pod: func() *corev1.Pod {
				p := makePod("p").Req("cpu=1").Obj()
				p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: parseList("cpu=3")}}}
				return p
			}(),
			want: "requests.cpu=3,pods=1,count/pods=1",
		},
		"sidecar adds to the app containers": {
			pod: func() *corev1.Pod {
				p := makePod("p").Req("cpu=1").Obj()
				p.Spec.InitContainers = []corev1.Container{{Name: "sidecar", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: parseList("cpu=500m")}}}
				return p
			}(),
			want: "requests.cpu=1500m,pods=1,count/pods=1",
		},
		"overhead counts": {
			pod: func() *corev1.Pod {
				p := makePod("p").Req("cpu=1").Obj()
				p.Spec.Overhead = parseList("cpu=250m")
				return p
			}(),
			want: "requests.cpu=1250m,pods=1,count/pods=1",
		},
		"a resize down that the kubelet has not applied charges the larger": {
			pod: func() *corev1.Pod {
				p := makePod("p").Req("cpu=1").Obj()
				p.Spec.Containers[0].Resources.Limits = parseList("cpu=1")
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{
					Name:               p.Spec.Containers[0].Name,
					AllocatedResources: parseList("cpu=1"),
					Resources:          &corev1.ResourceRequirements{Requests: parseList("cpu=3"), Limits: parseList("cpu=4")},
				}}
				return p
			}(),
			want: "requests.cpu=3,limits.cpu=4,pods=1,count/pods=1",
		},
		"an applied resize charges the spec": {
			pod: func() *corev1.Pod {
				p := makePod("p").Req("cpu=1").Obj()
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{
					Name:               p.Spec.Containers[0].Name,
					AllocatedResources: parseList("cpu=1"),
					Resources:          &corev1.ResourceRequirements{Requests: parseList("cpu=1")},
				}}
				return p
			}(),
			want: "requests.cpu=1,pods=1,count/pods=1",
		},
		"pod-level resources override the containers": {
			pod: func() *corev1.Pod {
				p := makePod("p").Req("cpu=1").Obj()
				p.Spec.Resources = &corev1.ResourceRequirements{Requests: parseList("cpu=4"), Limits: parseList("cpu=4")}
				return p
			}(),
			want: "requests.cpu=4,limits.cpu=4,pods=1,count/pods=1",
		},
	}
	// resized is a running pod whose spec says spec, with what the kubelet allocated
	// and applied (reports in its status) after an in-place resize.
	resized := func(spec, specLimits, allocated, applied, appliedLimits string) *corev1.Pod {
		p := makePod("p").Ungated().Req(spec).Obj()
		p.Spec.Containers[0].Resources.Limits = parseList(specLimits)
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main",
			AllocatedResources: parseList(allocated),
			Resources:          &corev1.ResourceRequirements{Requests: parseList(applied), Limits: parseList(appliedLimits)}}}
		return p
	}
	infeasible := resized("cpu=4,memory=1Gi", "", "cpu=1,memory=1Gi", "cpu=1,memory=1Gi", "")
	infeasible.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible}}
	for name, pod := range map[string]*corev1.Pod{
		"a resize down the kubelet has not allocated yet is charged what runs": resized("cpu=1,memory=1Gi", "", "cpu=3,memory=1Gi", "cpu=3,memory=1Gi", ""),
		"a resize down allocated but not applied yet is charged what runs":     resized("cpu=1,memory=1Gi", "", "cpu=1,memory=1Gi", "cpu=3,memory=1Gi", ""),
		"a resize up the kubelet has not applied yet is charged the spec":      resized("cpu=3,memory=1Gi", "", "cpu=1,memory=1Gi", "cpu=1,memory=1Gi", ""),
	} {
		tests[name] = struct {
			pod  *corev1.Pod
			want string
		}{pod, "requests.cpu=3,requests.memory=1Gi,pods=1,count/pods=1"}
	}
	tests["a resize down applied frees the difference"] = struct {
		pod  *corev1.Pod
		want string
	}{resized("cpu=1,memory=1Gi", "", "cpu=1,memory=1Gi", "cpu=1,memory=1Gi", ""), "requests.cpu=1,requests.memory=1Gi,pods=1,count/pods=1"}
	tests["a limit lowered but not applied yet counts at the applied value"] = struct {
		pod  *corev1.Pod
		want string
	}{resized("cpu=1", "cpu=1", "cpu=1", "cpu=1", "cpu=2"), "requests.cpu=1,limits.cpu=2,pods=1,count/pods=1"}
	tests["a resize the kubelet finds infeasible is charged what runs, not the spec"] = struct {
		pod  *corev1.Pod
		want string
	}{infeasible, "requests.cpu=1,requests.memory=1Gi,pods=1,count/pods=1"}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := listDiff(parseList(tc.want), PodUsage(tc.pod)); diff != "" {
				t.Errorf("PodUsage (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNormalizeHard(t *testing.T) {
	tests := map[string]struct {
		hard    string
		want    string
		wantErr string
	}{
		"bare names mean requests": {
			hard: "cpu=8,memory=32Gi,ephemeral-storage=10Gi,nvidia.com/gpu=4,hugepages-2Mi=1Gi",
			want: "requests.cpu=8,requests.memory=32Gi,requests.ephemeral-storage=10Gi,requests.nvidia.com/gpu=4,requests.hugepages-2Mi=1Gi",
		},
		"quota names pass through": {
			hard: "requests.cpu=8,limits.memory=64Gi,requests.nvidia.com/gpu=4,pods=20,count/pods=30,limits.ephemeral-storage=1Gi",
			want: "requests.cpu=8,limits.memory=64Gi,requests.nvidia.com/gpu=4,pods=20,count/pods=30,limits.ephemeral-storage=1Gi",
		},
		"the smaller of two spellings wins": {
			hard: "cpu=4,requests.cpu=8",
			want: "requests.cpu=4",
		},
		"names that do not limit pods are named in the error": {
			hard:    "cpu=1,services=3,limits.nvidia.com/gpu=1,requests.storage=1Gi,kubernetes.io/foo=1",
			want:    "requests.cpu=1",
			wantErr: "unsupported resource names in hard: kubernetes.io/foo, limits.nvidia.com/gpu, requests.storage, services (supported: cpu, memory, ephemeral-storage, their requests.* and limits.* forms, requests.hugepages-*, extended resources as requests.<name>, <class>.deviceclass.resource.k8s.io/devices, requests.deviceclass.resource.kubernetes.io/<class>, pods, count/pods)",
		},
		"negative quantities are named": {
			hard:    "cpu=-1,pods=2",
			want:    "pods=2",
			wantErr: "negative quantities in hard: cpu",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := NormalizeHard(parseList(tc.hard))
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, gotErr); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if diff := listDiff(parseList(tc.want), got); diff != "" {
				t.Errorf("NormalizeHard (-want +got):\n%s", diff)
			}
		})
	}
}

// equalLists compares as equality.Semantic does: by value, nil and empty alike.
func TestEqualLists(t *testing.T) {
	for _, c := range []struct {
		a, b corev1.ResourceList
		want bool
	}{
		{nil, corev1.ResourceList{}, true},
		{parseList("requests.cpu=1"), parseList("requests.cpu=1000m"), true},
		{parseList("requests.cpu=1"), parseList("requests.cpu=2"), false},
		{parseList("requests.cpu=1"), parseList("requests.memory=1"), false},
		{parseList("requests.cpu=1"), parseList("requests.cpu=1,pods=1"), false},
		{nil, parseList("pods=1"), false},
	} {
		if got := amount.EqualQuantities(c.a, c.b); got != c.want {
			t.Errorf("amount.EqualQuantities(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := amount.EqualQuantities(c.b, c.a); got != c.want {
			t.Errorf("amount.EqualQuantities(%v, %v) = %v, want %v", c.b, c.a, got, c.want)
		}
	}
}
