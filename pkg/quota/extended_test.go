package quota

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// fakeClasses back extended resources: gpu backs example.com/gpu, nic has no explicit
// name.
type fakeClasses map[corev1.ResourceName]string

func (f fakeClasses) BackingClass(name corev1.ResourceName) string { return f[name] }
func (f fakeClasses) ExtendedResourceName(class string) string {
	if class == "gpu" {
		return "example.com/gpu"
	}
	return ""
}

var testClasses = fakeClasses{
	"example.com/gpu":                        "gpu",
	"deviceclass.resource.kubernetes.io/gpu": "gpu",
	"deviceclass.resource.kubernetes.io/nic": "nic",
}

// TestWithExtendedDevices: a container's DRA-backed extended resource is charged as the
// devices it is, under the names ResourceQuota charges once the scheduler's claim exists.
func TestWithExtendedDevices(t *testing.T) {
	tests := map[string]struct {
		pod  *corev1.Pod
		want string
	}{
		"no extended resources: unchanged": {
			pod:  makePod("p").Req("cpu=1").Obj(),
			want: "requests.cpu=1,pods=1,count/pods=1",
		},
		"a backed extended resource: its devices, under every name of its class": {
			pod: makePod("p").Req("cpu=1,example.com/gpu=8").Obj(),
			want: "requests.cpu=1,pods=1,count/pods=1,requests.example.com/gpu=8," +
				"gpu.deviceclass.resource.k8s.io/devices=8,requests.deviceclass.resource.kubernetes.io/gpu=8",
		},
		"the implicit name: the class's explicit name too": {
			pod: makePod("p").Req("cpu=1,deviceclass.resource.kubernetes.io/gpu=2").Obj(),
			want: "requests.cpu=1,pods=1,count/pods=1,requests.deviceclass.resource.kubernetes.io/gpu=2," +
				"gpu.deviceclass.resource.k8s.io/devices=2,requests.example.com/gpu=2",
		},
		"both names of one class add up, each name charged the class's devices": {
			pod: makePod("p").Req("example.com/gpu=2,deviceclass.resource.kubernetes.io/gpu=3").Obj(),
			want: "pods=1,count/pods=1,requests.example.com/gpu=5,requests.deviceclass.resource.kubernetes.io/gpu=5," +
				"gpu.deviceclass.resource.k8s.io/devices=5",
		},
		"a class without an explicit name": {
			pod:  makePod("p").Req("deviceclass.resource.kubernetes.io/nic=1").Obj(),
			want: "pods=1,count/pods=1,requests.deviceclass.resource.kubernetes.io/nic=1,nic.deviceclass.resource.k8s.io/devices=1",
		},
		"an implicit name no class backs: charged as the pod evaluator charges it, no devices": {
			pod:  makePod("p").Req("deviceclass.resource.kubernetes.io/fpga=1").Obj(),
			want: "pods=1,count/pods=1,requests.deviceclass.resource.kubernetes.io/fpga=1",
		},
		"an extended resource no class backs (a device plugin's): as before": {
			pod:  makePod("p").Req("example.com/fpga=1").Obj(),
			want: "pods=1,count/pods=1,requests.example.com/fpga=1",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := NewPod(tc.pod, "", t0)
			got := WithExtendedDevices(before, ExtendedRequests(tc.pod), testClasses)
			if diff := listDiff(parseList(tc.want), got.Usage); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
			if diff := listDiff(PodUsage(tc.pod), before.Usage); diff != "" {
				t.Errorf("WithExtendedDevices changed the usage it was given (-want +got):\n%s", diff)
			}
		})
	}
}

// ExtendedRequests sums containers as kube-scheduler does: regular containers and
// sidecars add up, a plain init container's request counts when it is larger.
func TestExtendedRequests(t *testing.T) {
	pod := makePod("p").Req("cpu=1,example.com/gpu=2").Obj()
	pod.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{
		Requests: parseList("example.com/gpu=4,deviceclass.resource.kubernetes.io/nic=1"),
	}}}
	want := parseList("example.com/gpu=4,deviceclass.resource.kubernetes.io/nic=1")
	if diff := listDiff(want, ExtendedRequests(pod)); diff != "" {
		t.Errorf("ExtendedRequests (-want +got):\n%s", diff)
	}
	if got := ExtendedRequests(makePod("p").Req("cpu=1,memory=1Gi").Obj()); got != nil {
		t.Errorf("ExtendedRequests of a pod without any = %v, want nil", got)
	}
}

// TestBackingClasses: which class backs a name, as extendedresourcecache decides it.
func TestBackingClasses(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	got := BackingClasses([]DeviceClassInfo{
		{Name: "old-gpu", ExtendedResourceName: "example.com/gpu", Created: at(1)},
		{Name: "new-gpu", ExtendedResourceName: "example.com/gpu", Created: at(2)},
		{Name: "b-fpga", ExtendedResourceName: "example.com/fpga", Created: at(3)},
		{Name: "a-fpga", ExtendedResourceName: "example.com/fpga", Created: at(3)},
		{Name: "nic", Created: at(4)},
	})
	want := map[corev1.ResourceName]string{
		"example.com/gpu":  "new-gpu", // the newest
		"example.com/fpga": "a-fpga",  // created together: the first by name
		"deviceclass.resource.kubernetes.io/old-gpu": "old-gpu",
		"deviceclass.resource.kubernetes.io/new-gpu": "new-gpu",
		"deviceclass.resource.kubernetes.io/a-fpga":  "a-fpga",
		"deviceclass.resource.kubernetes.io/b-fpga":  "b-fpga",
		"deviceclass.resource.kubernetes.io/nic":     "nic",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("BackingClasses (-want +got):\n%s", diff)
	}
}
