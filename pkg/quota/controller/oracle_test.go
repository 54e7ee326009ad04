package controller_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/test/localcluster"
)

// kube-controller-manager's own ResourceQuota controller is the oracle of what a Budget
// charges (docs/budgets.md, "What a budget counts, checked against ResourceQuota"). The
// same generated pods go into a namespace with a Budget and one with a ResourceQuota of
// the same hard; after every step (created, finished, terminating, resized, deleted)
// the Budget's status.used must equal the ResourceQuota's under every name, but for the
// deliberate oracleDifferences.
func TestResourceQuotaOracle(t *testing.T) {
	began := time.Now()
	advertiseOracleResources(t)
	hard := oracleHard()
	for _, c := range oracleClaimCases {
		maps.Copy(hard, c.hard)
		for _, obj := range c.clusterObjects() {
			mustCreate(t, obj)
			t.Cleanup(func() { _ = admin.Delete(context.Background(), obj) })
		}
	}
	o := newOraclePair(t, hard)

	corpus := oracleCorpus(*oracleSeed, oracleCorpusSize)
	r := rand.New(rand.NewPCG(*oracleSeed, 0x30))
	// Two more pods to delete while they run; a finalizer keeps them stored.
	graceful := oraclePod{name: "t-graceful", shape: "terminating", spec: oracleShapes[0].spec(r), hold: true}
	pastGrace := oraclePod{name: "t-past-grace", shape: "terminating", spec: oracleShapes[1].spec(r), hold: true}
	corpus = append(corpus, graceful, pastGrace)
	for _, c := range oracleClaimCases {
		o.both(func(ns string) { mustCreate(t, c.objects(ns)...) })
		corpus = append(corpus, c.pods()...)
	}
	t.Cleanup(func() { o.release(t, graceful.name); o.release(t, pastGrace.name) })
	shapes := map[string]int{}
	for _, p := range corpus {
		shapes[p.shape]++
	}
	t.Logf("Corpus of seed %d: %d pods, by shape %v", *oracleSeed, len(corpus), shapes)
	o.create(t, corpus...)
	o.compare(t, "creating the corpus")
	if len(oracleClaimCases) > 0 {
		// The devices rows are not compared as zeros: the shared claim of 4 once, All's
		// 32 and the template's 2.
		wantUsed(t, o.budgetNS, oracleName, map[corev1.ResourceName]string{
			oracleDeviceClass + ".deviceclass.resource.k8s.io/devices": "38",
		})
	}

	// Finished pods: a Job's pods succeed, and one pod fails as a kubelet reports it.
	// Terminating pods: one deleted with an hour's grace (charged until it ends), one
	// with none, which its finalizer keeps stored past its grace (charged no more).
	failed := corpus[1].name
	o.both(func(ns string) {
		mustCreate(t, oracleJob(o, ns))
		waitForPhase(t, ns, failed, corev1.PodRunning)
		setPodStatus(t, ns, failed, func(st *corev1.PodStatus) { st.Phase = corev1.PodFailed })
		waitForPhase(t, ns, graceful.name, corev1.PodRunning)
		deletePod(t, ns, graceful.name, 3600)
		deletePod(t, ns, pastGrace.name, 0)
	})
	o.both(func(ns string) { waitForJob(t, ns) })
	o.compare(t, "finished and terminating pods")

	// An in-place resize down (pods/resize), first as the kubelet has accepted but not
	// applied it (allocated lowered, actual resources still the old ones: Kubernetes
	// charges the larger), then applied. The test is the kubelet: kwok reports no
	// container resources, and the API server resizes only pods whose kubelet does.
	resized := corpus[0]
	o.both(func(ns string) {
		waitForPhase(t, ns, resized.name, corev1.PodRunning)
		setPodStatus(t, ns, resized.name, func(st *corev1.PodStatus) { reportResources(st, resized.spec.Containers, resized.spec.Containers) })
		before, after := resizeDown(t, ns, resized.name)
		setPodStatus(t, ns, resized.name, func(st *corev1.PodStatus) { reportResources(st, after, before) })
	})
	o.compare(t, "an in-place resize down that the kubelet has not applied yet")
	o.both(func(ns string) {
		pod, err := clientset.CoreV1().Pods(ns).Get(t.Context(), resized.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		setPodStatus(t, ns, resized.name, func(st *corev1.PodStatus) { reportResources(st, pod.Spec.Containers, pod.Spec.Containers) })
	})
	o.compare(t, "the resize applied")

	// Deleted pods: every third of the corpus, and both terminating pods for good.
	o.both(func(ns string) {
		for i := 2; i < oracleCorpusSize; i += 3 {
			deletePod(t, ns, corpus[i].name, 0)
		}
	})
	o.release(t, graceful.name)
	o.release(t, pastGrace.name)
	o.both(func(ns string) { deletePod(t, ns, graceful.name, 0) })
	o.compare(t, "deleting pods")
	t.Logf("The oracle compared %d steps in %s", o.markers, time.Since(began).Round(time.Millisecond))
}

// A ResourceQuota that tracks cpu and memory refuses pods that leave them unset; a
// Budget must never charge such a pod: refused at create, or held behind its gate while
// pods created after it are admitted, its used equal to the ResourceQuota's.
func TestResourceQuotaOracleConstraints(t *testing.T) {
	o := newOraclePair(t, oracleHard())
	o.create(t, oracleCorpus(*oracleSeed, 3)...)
	var created []string
	for _, c := range oracleConstraintCases {
		p := oraclePod{name: "x-" + c.name, shape: c.name, spec: c.spec}
		_, err := clientset.CoreV1().Pods(o.quotaNS).Create(t.Context(), o.podIn(o.quotaNS, p), metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(fmt.Sprint(err), c.refusal) {
			t.Errorf("%s: the ResourceQuota's namespace answered %v, want forbidden: %s", c.name, err, c.refusal)
		}
		if _, err := clientset.CoreV1().Pods(o.budgetNS).Create(t.Context(), o.podIn(o.budgetNS, p), metav1.CreateOptions{}); err != nil {
			t.Errorf("%s: creating it in the Budget's namespace: %v", c.name, err)
			continue
		}
		created = append(created, p.name)
	}
	// diffs waits until both sides count a marker pod created after these: the Budget
	// has decided them by then.
	if diffs := o.diffs(t, "creating pods that leave tracked resources unset"); len(diffs) > 0 {
		t.Errorf("The Budget charged pods the ResourceQuota refuses:\n%s", strings.Join(diffs, "\n"))
	}
	for _, name := range created {
		if !isGated(t, o.budgetNS, name) {
			t.Errorf("%s was admitted; it leaves a tracked resource unset", name)
		}
	}
}

// advertiseOracleResources creates the RuntimeClass with overhead and makes every kwok
// node advertise oracleExtended, oracleHugePages and ephemeral storage until the test
// ends, so that the corpus's pods run.
func advertiseOracleResources(t *testing.T) {
	t.Helper()
	rc := &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: oracleRuntimeClass},
		Handler:    "runc",
		Overhead: &nodev1.Overhead{PodFixed: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("120m"), corev1.ResourceMemory: resource.MustParse("40Mi"),
		}},
	}
	if err := admin.Create(t.Context(), rc); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating RuntimeClass: %v", err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), rc) })
	nodes, err := clientset.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{LabelSelector: localcluster.NodeTypeLabel + "=kwok"})
	if err != nil {
		t.Fatal(err)
	}
	// The kwok nodes advertise no ephemeral storage either.
	advertised := []corev1.ResourceName{oracleExtended, oracleHugePages, corev1.ResourceEphemeralStorage}
	set := func(name string, values ...string) error {
		var entries []string
		for i, r := range advertised {
			entries = append(entries, fmt.Sprintf("%q:%s", r, values[i]))
		}
		list := "{" + strings.Join(entries, ",") + "}"
		patch := `{"status":{"capacity":` + list + `,"allocatable":` + list + `}}`
		_, err := clientset.CoreV1().Nodes().Patch(context.Background(), name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
		return err
	}
	for _, n := range nodes.Items {
		if err := set(n.Name, `"64"`, `"1Gi"`, `"1Ti"`); err != nil {
			t.Fatalf("advertising resources on node %s: %v", n.Name, err)
		}
		t.Cleanup(func() { _ = set(n.Name, "null", "null", "null") })
	}
}

// oracleJob is a Job of two pods that succeed at once on kwok.
func oracleJob(o *oraclePair, ns string) *batchv1.Job {
	pod := o.podIn(ns, oraclePod{name: "job", shape: "job", spec: oracleShapes[0].spec(rand.New(rand.NewPCG(*oracleSeed, 0x31)))})
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "finished"},
		Spec: batchv1.JobSpec{
			Completions: ptr.To[int32](2), Parallelism: ptr.To[int32](2), BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"shape": "job"}, Annotations: kwokRunFor("100ms")}, Spec: pod.Spec},
		},
	}
}

// waitForJob waits until oracleJob's pods have succeeded and the Job controller has
// let go of them (its finalizer removed).
func waitForJob(t *testing.T, ns string) {
	t.Helper()
	testbed.Poll(t, time.Minute, "the Job in "+ns+" to complete", func(context.Context) (bool, error) {
		job := &batchv1.Job{}
		if err := admin.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "finished"}, job); err != nil {
			return false, testbed.NotYet(err)
		}
		if job.Status.Succeeded != 2 || job.Status.UncountedTerminatedPods != nil && len(job.Status.UncountedTerminatedPods.Succeeded) > 0 {
			return false, testbed.NotYet(fmt.Errorf("%d succeeded", job.Status.Succeeded))
		}
		return true, nil
	})
}

// waitForPhase waits until a pod reaches phase.
func waitForPhase(t *testing.T, ns, name string, phase corev1.PodPhase) {
	t.Helper()
	testbed.Poll(t, time.Minute, fmt.Sprintf("%s/%s to be %s", ns, name, phase), func(context.Context) (bool, error) {
		pod, err := clientset.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, testbed.NotYet(err)
		}
		if pod.Status.Phase != phase {
			return false, testbed.NotYet(fmt.Errorf("it is %s on node %q, conditions %v", pod.Status.Phase, pod.Spec.NodeName, pod.Status.Conditions))
		}
		return true, nil
	})
}

// setPodStatus changes a pod's status as its kubelet would.
func setPodStatus(t *testing.T, ns, name string, change func(*corev1.PodStatus)) {
	t.Helper()
	pods := clientset.CoreV1().Pods(ns)
	for {
		pod, err := pods.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		change(&pod.Status)
		if _, err = pods.UpdateStatus(t.Context(), pod, metav1.UpdateOptions{}); err == nil {
			return
		} else if !apierrors.IsConflict(err) {
			t.Fatalf("updating the status of %s/%s: %v", ns, name, err)
		}
	}
}

// deletePod deletes a pod with a grace period in seconds.
func deletePod(t *testing.T, ns, name string, grace int64) {
	t.Helper()
	err := clientset.CoreV1().Pods(ns).Delete(t.Context(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(grace)})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting %s/%s: %v", ns, name, err)
	}
}

// resizeDown halves the cpu request of a pod's first container through pods/resize,
// lowering its cpu limit as much, and returns its containers before and after.
func resizeDown(t *testing.T, ns, name string) (before, after []corev1.Container) {
	t.Helper()
	pod, err := clientset.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before = make([]corev1.Container, len(pod.Spec.Containers))
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].DeepCopyInto(&before[i])
	}
	res := &pod.Spec.Containers[0].Resources
	cut := res.Requests.Cpu().MilliValue() / 2
	res.Requests[corev1.ResourceCPU] = *resource.NewMilliQuantity(res.Requests.Cpu().MilliValue()-cut, resource.DecimalSI)
	res.Limits[corev1.ResourceCPU] = *resource.NewMilliQuantity(res.Limits.Cpu().MilliValue()-cut, resource.DecimalSI)
	got, err := clientset.CoreV1().Pods(ns).UpdateResize(t.Context(), name, pod, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("resizing %s/%s: %v", ns, name, err)
	}
	return before, got.Spec.Containers
}

// reportResources writes what a kubelet reports of a pod's containers: allocated
// (status.containerStatuses[].allocatedResources, the requests it admitted) and
// actual (.resources, what the containers run with).
func reportResources(st *corev1.PodStatus, allocated, actual []corev1.Container) {
	for i := range allocated {
		var cs *corev1.ContainerStatus
		for j := range st.ContainerStatuses {
			if st.ContainerStatuses[j].Name == allocated[i].Name {
				cs = &st.ContainerStatuses[j]
			}
		}
		if cs == nil {
			st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{Name: allocated[i].Name, Image: allocated[i].Image})
			cs = &st.ContainerStatuses[len(st.ContainerStatuses)-1]
		}
		cs.AllocatedResources = allocated[i].Resources.Requests.DeepCopy()
		cs.Resources = actual[i].Resources.DeepCopy()
	}
}
