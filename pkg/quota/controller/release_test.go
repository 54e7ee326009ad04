package controller_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/gates"
	"github.com/quotagate/quotagate/pkg/quota/controller"
)

const (
	releaseGate = "quotagate.io/budget"
	otherGate   = "example.com/other"
)

var podsResource = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

func gatedPodIn(namespace, name string, gateNames ...string) *corev1.Pod {
	return podtest.New(name).NS(namespace).UID("uid-"+namespace+"-"+name).Container("c", "busybox").Gates(gateNames...).Obj()
}

// gatedNames lists the pods that still carry the quotagate gate, as namespace/name.
func gatedNames(t *testing.T, cs kubernetes.Interface) []string {
	t.Helper()
	list, err := cs.CoreV1().Pods("").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range list.Items {
		if gates.HasGate(&p, releaseGate) {
			out = append(out, p.Namespace+"/"+p.Name)
		}
	}
	slices.Sort(out)
	return out
}

func releaseOptions(mutate func(*controller.ReleaseOptions)) controller.ReleaseOptions {
	o := controller.ReleaseOptions{Gate: releaseGate, PageSize: 4, WebhookConfiguration: "quotagate-webhook"}
	if mutate != nil {
		mutate(&o)
	}
	return o
}

// ReleaseAll takes the webhook out before its first list, walks every namespace a page
// at a time, releases exactly the pods with the quotagate gate (other gates stay), and
// a second run finds nothing left to do.
func TestReleaseAllPaginates(t *testing.T) {
	var objs []runtime.Object
	wantReleased := 0
	for n := range 23 {
		ns := "ns-" + strconv.Itoa(n%3)
		var pod *corev1.Pod
		switch n % 4 {
		case 0:
			pod = gatedPodIn(ns, fmt.Sprintf("p%02d", n))
		case 1:
			pod = gatedPodIn(ns, fmt.Sprintf("p%02d", n), otherGate)
		case 2:
			pod = gatedPodIn(ns, fmt.Sprintf("p%02d", n), otherGate, releaseGate)
			wantReleased++
		default:
			pod = gatedPodIn(ns, fmt.Sprintf("p%02d", n), releaseGate)
			wantReleased++
		}
		objs = append(objs, pod)
	}
	objs = append(objs, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "quotagate-webhook"}},
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses"}})
	cs := newPagedClientset(objs...)

	n, err := controller.ReleaseAll(t.Context(), cs, releaseOptions(nil))
	if err != nil {
		t.Fatalf("ReleaseAll: %v", err)
	}
	if n != wantReleased {
		t.Errorf("ReleaseAll released %d pods, want %d", n, wantReleased)
	}
	// Every List ReleaseAll made asked for a page, and no page was larger: memory holds 4 pods.
	cs.mu.Lock()
	limits, maxPage, lists := cs.limits, cs.maxPage, cs.lists
	cs.mu.Unlock()
	for _, l := range limits {
		if l != 4 {
			t.Errorf("a List asked for %d pods, want pages of 4", l)
		}
	}
	if maxPage != 4 || lists < 2*6 {
		t.Errorf("largest page %d and %d Lists for 23 pods in two passes, want 4 and at least 12", maxPage, lists)
	}

	if left := gatedNames(t, cs); len(left) != 0 {
		t.Errorf("pods still gated: %v", left)
	}
	// Other gates are left alone.
	pod, err := cs.CoreV1().Pods("ns-2").Get(t.Context(), "p02", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := gocmp.Diff([]corev1.PodSchedulingGate{{Name: otherGate}}, pod.Spec.SchedulingGates); diff != "" {
		t.Errorf("gates of a pod with two gates (-want +got):\n%s", diff)
	}
	// The webhook went first, and only quotagate's.
	var first k8stesting.Action
	for _, a := range cs.Actions() {
		if a.GetVerb() == "delete" || a.GetVerb() == "list" {
			first = a
			break
		}
	}
	if first == nil || first.GetVerb() != "delete" || first.GetResource().Resource != "mutatingwebhookconfigurations" {
		t.Errorf("first action = %v, want the webhook configuration's deletion", first)
	}
	hooks, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(hooks.Items) != 1 || hooks.Items[0].Name != "someone-elses" {
		t.Errorf("webhook configurations left: %v, want only someone-elses", hooks.Items)
	}
	// Idempotent: a re-run (the hook Job's retry) finds nothing and succeeds.
	n, err = controller.ReleaseAll(t.Context(), cs, releaseOptions(nil))
	if err != nil || n != 0 {
		t.Errorf("second ReleaseAll = %d, %v; want 0, nil", n, err)
	}
}

// A pod gated after the first pass listed its page (the API server called the webhook
// just before it saw the configuration gone) is released by the final pass.
func TestReleaseAllFinalPassCatchesLateGatedPods(t *testing.T) {
	var objs []runtime.Object
	for n := range 10 {
		objs = append(objs, gatedPodIn("team", fmt.Sprintf("p%02d", n), releaseGate))
	}
	cs := newPagedClientset(objs...)
	cs.beforeList = func(call int, _ string) error {
		if call == 2 { // the first pass is past the first page: p00 sorts before it
			// The tracker directly: the fake clientset's lock is held while reacting.
			return cs.Tracker().Create(podsResource, gatedPodIn("team", "a-late", releaseGate), "team")
		}
		return nil
	}
	n, err := controller.ReleaseAll(t.Context(), cs, releaseOptions(nil))
	if err != nil {
		t.Fatalf("ReleaseAll: %v", err)
	}
	if n != 11 {
		t.Errorf("released %d pods, want 11", n)
	}
	if left := gatedNames(t, cs); len(left) != 0 {
		t.Errorf("pods still gated: %v", left)
	}
}

// An expired continue token (etcd compacted past the list's revision) starts the list
// over instead of failing the uninstall.
func TestReleaseAllRelistsOnExpiredContinue(t *testing.T) {
	var objs []runtime.Object
	for n := range 10 {
		objs = append(objs, gatedPodIn("team", fmt.Sprintf("p%02d", n), releaseGate))
	}
	cs := newPagedClientset(objs...)
	expired := 0
	cs.beforeList = func(_ int, cont string) error {
		if cont != "" && expired < 2 {
			expired++
			return apierrors.NewResourceExpired("the provided continue parameter is too old")
		}
		return nil
	}
	n, err := controller.ReleaseAll(t.Context(), cs, releaseOptions(func(o *controller.ReleaseOptions) { o.WebhookConfiguration = "" }))
	if err != nil {
		t.Fatalf("ReleaseAll: %v", err)
	}
	if n != 10 || expired != 2 {
		t.Errorf("released %d pods after %d expired tokens, want 10 after 2", n, expired)
	}
	if left := gatedNames(t, cs); len(left) != 0 {
		t.Errorf("pods still gated: %v", left)
	}
}

// A pod that changes between the list and the patch (the patch's test op fails) is read
// again and released; a pod the API server refuses to release is named in the error,
// and every other pod is still released.
func TestReleaseAllRetriesChangedPodsAndReportsFailures(t *testing.T) {
	cs := newPagedClientset(
		gatedPodIn("team", "changes", releaseGate),
		gatedPodIn("team", "denied", releaseGate),
		gatedPodIn("team", "flaky", releaseGate),
		gatedPodIn("team", "plain", releaseGate),
	)
	var mu sync.Mutex
	calls := map[string]int{}
	cs.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		name := a.(k8stesting.PatchActionImpl).GetName()
		mu.Lock()
		calls[name]++
		n := calls[name]
		mu.Unlock()
		switch {
		case name == "changes" && n == 1:
			// Another controller adds its gate in front of ours: the gate moves.
			obj, err := cs.Tracker().Get(podsResource, "team", name)
			if err != nil {
				return true, nil, err
			}
			pod := obj.(*corev1.Pod)
			pod.Spec.SchedulingGates = append([]corev1.PodSchedulingGate{{Name: otherGate}}, pod.Spec.SchedulingGates...)
			if err := cs.Tracker().Update(podsResource, pod, "team"); err != nil {
				return true, nil, err
			}
			return true, nil, apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Pod").GroupKind(), name, nil)
		case name == "flaky" && n <= 2:
			return true, nil, apierrors.NewServiceUnavailable("etcd leader changed")
		case name == "denied":
			return true, nil, apierrors.NewForbidden(podsResource.GroupResource(), name, fmt.Errorf("the gate guard denies it"))
		}
		return false, nil, nil
	})
	n, err := controller.ReleaseAll(t.Context(), cs, releaseOptions(func(o *controller.ReleaseOptions) { o.WebhookConfiguration = "" }))
	if err == nil || !strings.Contains(err.Error(), "team/denied") || !strings.Contains(err.Error(), "gate guard") {
		t.Errorf("ReleaseAll error = %v, want one naming team/denied and why", err)
	}
	if n != 3 {
		t.Errorf("released %d pods, want 3", n)
	}
	if diff := gocmp.Diff([]string{"team/denied"}, gatedNames(t, cs)); diff != "" {
		t.Errorf("gated pods (-want +got):\n%s", diff)
	}
	pod, err := cs.CoreV1().Pods("team").Get(t.Context(), "changes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := gocmp.Diff([]corev1.PodSchedulingGate{{Name: otherGate}}, pod.Spec.SchedulingGates); diff != "" {
		t.Errorf("gates of the pod that changed (-want +got):\n%s", diff)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls["denied"] != 1 {
		t.Errorf("a denied patch was sent %d times, want once (a denial does not change on retry)", calls["denied"])
	}
}

// On the real API server, as the manager's ServiceAccount (the identity the hook runs
// as): more gated pods than a page, in a namespace that was opted in and no longer is,
// are all released, pages of 4 at a time, and other gates stay.
func TestReleaseAllOnAPIServer(t *testing.T) {
	ns := newNamespace(t, false)
	const pods = 13
	for n := range pods {
		gateNames := []string{releaseGate}
		if n%3 == 0 {
			gateNames = []string{otherGate, releaseGate}
		}
		if _, err := clientset.CoreV1().Pods(ns).Create(t.Context(), gatedPodIn(ns, fmt.Sprintf("p%02d", n), gateNames...), metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating pod: %v", err)
		}
	}
	asManager, err := kubernetes.NewForConfig(managerSA)
	if err != nil {
		t.Fatal(err)
	}
	var lists []int64
	counting := &countingLists{Interface: asManager, onList: func(o metav1.ListOptions) { lists = append(lists, o.Limit) }}
	n, err := controller.ReleaseAll(t.Context(), counting, controller.ReleaseOptions{Namespace: ns, Gate: releaseGate, PageSize: 4})
	if err != nil {
		t.Fatalf("ReleaseAll: %v", err)
	}
	if n != pods {
		t.Errorf("released %d pods, want %d", n, pods)
	}
	if diff := gocmp.Diff([]int64{4, 4, 4, 4}, lists); diff != "" {
		t.Errorf("Lists' limits: 13 pods in pages of 4 (-want +got):\n%s", diff)
	}
	list, err := clientset.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		want := []corev1.PodSchedulingGate(nil)
		if mustAtoi(t, strings.TrimPrefix(p.Name, "p"))%3 == 0 {
			want = []corev1.PodSchedulingGate{{Name: otherGate}}
		}
		if diff := gocmp.Diff(want, p.Spec.SchedulingGates); diff != "" {
			t.Errorf("pod %s gates (-want +got):\n%s", p.Name, diff)
		}
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// At uninstall (UnpinClaims), once the pods are released, the manager's finalizer goes
// from every ResourceClaim that carries it, other finalizers stay, and a claim deleted
// while pinned is let go; a second run finds nothing to do.
func TestReleaseAllUnpinsClaims(t *testing.T) {
	claim := func(ns, name string, finalizers ...string) *resourceapi.ResourceClaim {
		return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			UID: types.UID("uid-" + ns + "-" + name), Finalizers: finalizers}}
	}
	deleted := claim("ns-1", "deleted", v1alpha1.ChargedFinalizer)
	deleted.DeletionTimestamp = ptr.To(metav1.Now())
	cs := newPagedClientset(
		gatedPodIn("ns-0", "p", releaseGate),
		claim("ns-0", "pinned", v1alpha1.ChargedFinalizer),
		claim("ns-0", "shared", "example.com/keep", v1alpha1.ChargedFinalizer),
		claim("ns-1", "plain"),
		deleted,
	)
	n, err := controller.ReleaseAll(t.Context(), cs, releaseOptions(func(o *controller.ReleaseOptions) { o.UnpinClaims = true }))
	if err != nil || n != 1 {
		t.Fatalf("ReleaseAll = %d, %v; want 1 pod released", n, err)
	}
	want := map[string][]string{"ns-0/pinned": nil, "ns-0/shared": {"example.com/keep"}, "ns-1/plain": nil, "ns-1/deleted": nil}
	list, err := cs.ResourceV1().ResourceClaims("").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, c := range list.Items {
		got[c.Namespace+"/"+c.Name] = c.Finalizers
	}
	if _, kept := got["ns-1/deleted"]; !kept {
		got["ns-1/deleted"] = nil // let go: the tracker deleted it, or left it without finalizers
	}
	if diff := gocmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("claims' finalizers after the uninstall (-want +got):\n%s", diff)
	}
	if _, err := controller.ReleaseAll(t.Context(), cs, releaseOptions(func(o *controller.ReleaseOptions) { o.UnpinClaims = true })); err != nil {
		t.Errorf("a second run: %v", err)
	}
	if _, err := controller.ReleaseAll(t.Context(), cs, releaseOptions(func(o *controller.ReleaseOptions) {
		o.UnpinClaims, o.Namespace = true, "ns-0"
	})); err == nil {
		t.Error("unpinning the claims of one namespace only was accepted")
	}
}
