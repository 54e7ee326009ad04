package controller

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// memoryPods is how many gated pods BenchmarkGatedPodMemory holds.
const memoryPods = 20000

// apiPodJSON returns pod i as the API server sends it to the manager's informer: the
// bench's gated pod (bench/figures/env.go) with the defaults the API server adds.
func apiPodJSON(i int) []byte {
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "memory-1", Name: fmt.Sprintf("p-%05d", i),
			UID:               types.UID(fmt.Sprintf("8a2c7c1e-3f4b-4d1a-9e7c-%012d", i)),
			ResourceVersion:   fmt.Sprint(1000 + i),
			CreationTimestamp: metav1.Unix(1_700_000_000+int64(i/100), 0),
			Labels:            map[string]string{"bench.quotagate.io/pod": "p"},
			ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "bench", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1"}},
		},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			SchedulingGates:               []corev1.PodSchedulingGate{{Name: v1alpha1.SchedulingGate}},
			Containers: []corev1.Container{{
				Name: "c", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("10m"),
					corev1.ResourceMemory: resource.MustParse("1Mi"),
				}},
				TerminationMessagePath: "/dev/termination-log", ImagePullPolicy: corev1.PullIfNotPresent,
				VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
			}},
			RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst,
			ServiceAccountName: "default", SchedulerName: "default-scheduler",
			Priority: ptr.To[int32](0), PreemptionPolicy: ptr.To(corev1.PreemptLowerPriority),
			EnableServiceLinks: ptr.To(true),
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
			},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "SchedulingGated",
			Message: "Scheduling is blocked due to non-empty scheduling gates",
		}}},
	}
	raw, err := json.Marshal(pod)
	if err != nil {
		panic(err)
	}
	return raw
}

// heapInUse collects garbage and returns the bytes of live heap objects.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkGatedPodMemory holds memoryPods gated pods behind a budget they never fit in,
// through the manager's own path (decoded as the informer decodes them, the cache's
// transform, the informer's store, the pod handler, one admission round), and reports
// the live heap each part keeps per pod. QUOTAGATE_HEAP_PROFILE=file writes the heap
// profile with every pod held. It is a measurement, run with -run '^$' -bench
// GatedPodMemory -benchtime 1x; the bench's figure 4 is the end-to-end one.
func BenchmarkGatedPodMemory(b *testing.B) {
	for range b.N {
		measureGatedPods(b)
	}
}

func measureGatedPods(b *testing.B) {
	raws := make([][]byte, memoryPods)
	for i := range raws {
		raws[i] = apiPodJSON(i)
	}
	c, err := New(DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	c.core.SetNamespace("memory-1", map[string]string{v1alpha1.EnabledLabel: "true"})
	c.onBudget(&v1alpha1.Budget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "memory-1", Name: "b"},
		Spec:       v1alpha1.BudgetSpec{Hard: corev1.ResourceList{"requests.cpu": resource.MustParse("0")}},
	})
	store := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc,
		toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	objs := make([]*cachedPod, memoryPods)

	base := heapInUse()
	for i, raw := range raws {
		pod := &corev1.Pod{}
		if err := json.Unmarshal(raw, pod); err != nil {
			b.Fatal(err)
		}
		obj, err := CompactPod(pod)
		if err != nil {
			b.Fatal(err)
		}
		if err := store.Add(obj); err != nil {
			b.Fatal(err)
		}
		objs[i] = obj.(*cachedPod)
	}
	cached := heapInUse()
	now := c.opts.Clock.Now()
	for _, pod := range objs {
		c.core.UpsertPod(pod.at(now, c.opts.Gate))
	}
	c.core.Admit()
	core := heapInUse()
	for _, pod := range objs {
		c.waits.noteGated(pod.view.PodRef, false)
	}
	waiting := heapInUse()
	if path := os.Getenv("QUOTAGATE_HEAP_PROFILE"); path != "" {
		if err := writeHeap(path); err != nil {
			b.Fatal(err)
		}
	}
	perPod := func(from, to uint64) float64 { return (float64(to) - float64(from)) / memoryPods }
	b.ReportMetric(perPod(base, cached), "cache-B/pod")
	b.ReportMetric(perPod(cached, core), "core-B/pod")
	b.ReportMetric(perPod(core, waiting), "waiting-B/pod")
	b.ReportMetric(perPod(base, waiting), "total-B/pod")
	runtime.KeepAlive(raws)
	runtime.KeepAlive(store)
	runtime.KeepAlive(c)
}

func writeHeap(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	return pprof.Lookup("heap").WriteTo(f, 0)
}
