package controller_test

import (
	"fmt"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/gates"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/quota/controller"
)

// The flavor of the patch tests: node labels whose keys need escaping in a JSON pointer,
// and the toleration of its nodes' taint.
var (
	flavorLabels     = map[string]string{"node.example.com/pool": "spot", "topology.kubernetes.io/zone": "zone-a"}
	flavorToleration = corev1.Toleration{Key: "node.example.com/spot", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	otherToleration  = corev1.Toleration{Key: "example.com/dedicated", Operator: corev1.TolerationOpEqual, Value: "ml", Effect: corev1.TaintEffectNoSchedule}
)

// flavorPod is a gated pod with a nodeSelector and tolerations, created in ns as admin.
func flavorPod(t *testing.T, ns, name string, selector map[string]string, tolerations ...corev1.Toleration) *corev1.Pod {
	t.Helper()
	pod := podtest.New(name).NS(ns).Gated().Obj()
	pod.Spec.NodeSelector, pod.Spec.Tolerations = selector, tolerations
	created, err := clientset.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
	return created
}

// asManager is a clientset with the manager's identity: its ClusterRole is what lets it
// patch pods.
func asManager(t *testing.T) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(managerSA)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// countToleration counts the tolerations of pod equal to want.
func countToleration(pod *corev1.Pod, want corev1.Toleration) int {
	n := 0
	for _, t := range pod.Spec.Tolerations {
		if gocmp.Equal(t, want) {
			n++
		}
	}
	return n
}

// On the real API server, as the manager: the ungate patch on a flavor removes the gate
// and puts the pod on the flavor's nodes in one write, whatever nodeSelector and
// tolerations the pod had, adding each label and toleration once. (The API server's
// DefaultTolerationSeconds plugin gives every pod two tolerations at create, so the
// flavor's are always appended here.)
func TestFlavorPatchOnAPIServer(t *testing.T) {
	ns := newNamespace(t, false)
	manager := asManager(t)
	tests := map[string]struct {
		selector     map[string]string
		tolerations  []corev1.Toleration
		wantSelector map[string]string
	}{
		"no nodeSelector, no tolerations": {wantSelector: flavorLabels},
		"an unrelated nodeSelector key and a toleration": {
			selector:     map[string]string{"disk": "ssd"},
			tolerations:  []corev1.Toleration{otherToleration},
			wantSelector: map[string]string{"disk": "ssd", "node.example.com/pool": "spot", "topology.kubernetes.io/zone": "zone-a"},
		},
		"the flavor's label and toleration already": {
			selector:     map[string]string{"topology.kubernetes.io/zone": "zone-a"},
			tolerations:  []corev1.Toleration{flavorToleration},
			wantSelector: flavorLabels,
		},
	}
	i := 0
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			i++
			created := flavorPod(t, ns, fmt.Sprintf("flavor-%d", i), tc.selector, tc.tolerations...)
			patch, ok, err := gates.UngatePatchOnFlavor(created, v1alpha1.SchedulingGate,
				map[string]string{v1alpha1.AdmittedByAnnotation: ns + "/b"}, flavorLabels, []corev1.Toleration{flavorToleration})
			if !ok || err != nil {
				t.Fatalf("UngatePatchOnFlavor() = %v, %v for a gated pod", ok, err)
			}
			got, err := manager.CoreV1().Pods(ns).Patch(t.Context(), created.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
			if err != nil {
				t.Fatalf("patching %s: %v", patch, err)
			}
			if gates.HasGate(got, v1alpha1.SchedulingGate) {
				t.Errorf("the pod is still gated")
			}
			if diff := gocmp.Diff(tc.wantSelector, got.Spec.NodeSelector); diff != "" {
				t.Errorf("nodeSelector (-want +got):\n%s", diff)
			}
			if n := countToleration(got, flavorToleration); n != 1 {
				t.Errorf("the pod has the flavor's toleration %d times, want once: %v", n, got.Spec.Tolerations)
			}
			// Every toleration the pod had (its own and the API server's defaults) stays.
			for _, had := range created.Spec.Tolerations {
				if countToleration(got, had) != 1 {
					t.Errorf("toleration %v lost or doubled: %v", had, got.Spec.Tolerations)
				}
			}
			if want := len(created.Spec.Tolerations) + 1 - countToleration(created, flavorToleration); len(got.Spec.Tolerations) != want {
				t.Errorf("%d tolerations, want %d: %v", len(got.Spec.Tolerations), want, got.Spec.Tolerations)
			}
		})
	}
}

// A flavor patch built from an older version of the pod is refused by the API server and
// changes nothing: the pod stays gated, no label or toleration is added.
func TestFlavorPatchFencedOnAPIServer(t *testing.T) {
	ns := newNamespace(t, false)
	seen := flavorPod(t, ns, "fenced", nil)
	patch, ok, err := gates.UngatePatchOnFlavor(seen, v1alpha1.SchedulingGate, nil, flavorLabels, []corev1.Toleration{flavorToleration})
	if !ok || err != nil {
		t.Fatalf("UngatePatchOnFlavor() = %v, %v for a gated pod", ok, err)
	}
	// Someone relabels the pod: a newer version, the gate where it was.
	relabelled := seen.DeepCopy()
	relabelled.Labels = map[string]string{"touched": "yes"}
	now, err := clientset.CoreV1().Pods(ns).Update(t.Context(), relabelled, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := asManager(t).CoreV1().Pods(ns).Patch(t.Context(), seen.Name, types.JSONPatchType, patch, metav1.PatchOptions{}); err == nil {
		t.Fatalf("a patch built from version %s applied to version %s", seen.ResourceVersion, now.ResourceVersion)
	}
	after, err := clientset.CoreV1().Pods(ns).Get(t.Context(), seen.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != now.ResourceVersion || !gates.HasGate(after, v1alpha1.SchedulingGate) ||
		len(after.Spec.NodeSelector) != 0 || countToleration(after, flavorToleration) != 0 {
		t.Errorf("the refused patch changed the pod: version %s (was %s), gates %v, nodeSelector %v, tolerations %v",
			after.ResourceVersion, now.ResourceVersion, after.Spec.SchedulingGates, after.Spec.NodeSelector, after.Spec.Tolerations)
	}
}

// KEP-3838 on this Kubernetes: a pod's nodeSelector may grow only while the pod is
// gated. The API server refuses to add one to a pod without gates, and accepts the same
// addition in the patch that removes the last gate (the old pod is gated): so the gate's
// removal and the flavor's labels must be one patch, as UngatePatchOnFlavor makes it.
func TestNodeSelectorGrowsOnlyWhileGated(t *testing.T) {
	ns := newNamespace(t, false)
	ungated := podtest.New("ungated").NS(ns).Obj()
	if _, err := clientset.CoreV1().Pods(ns).Create(t.Context(), ungated, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	add := []byte(`[{"op":"add","path":"/spec/nodeSelector","value":{"topology.kubernetes.io/zone":"zone-a"}}]`)
	_, err := asManager(t).CoreV1().Pods(ns).Patch(t.Context(), ungated.Name, types.JSONPatchType, add, metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec: Forbidden: pod updates may not change fields") {
		t.Fatalf("adding a nodeSelector to a pod that is not gated: %v, want 422 spec: Forbidden", err)
	}
	// After the gate's removal, in its own patch, the same addition is refused too.
	gated := flavorPod(t, ns, "gated-then-ungated", nil)
	patch, _ := gates.UngatePatch(gated, v1alpha1.SchedulingGate, nil)
	if _, err := asManager(t).CoreV1().Pods(ns).Patch(t.Context(), gated.Name, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = asManager(t).CoreV1().Pods(ns).Patch(t.Context(), gated.Name, types.JSONPatchType, add, metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("adding a nodeSelector once the gate is gone: %v, want 422", err)
	}
	got, err := clientset.CoreV1().Pods(ns).Get(t.Context(), gated.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.NodeSelector) != 0 {
		t.Errorf("the refused patch changed the pod: nodeSelector %v", got.Spec.NodeSelector)
	}
}

// The controller's ungate, against the real API server as the manager, with the pod read
// through the informer's transform: an admission on a flavor leaves the pod ungated on
// the flavor's nodes and says so in its event; a pod whose nodeSelector contradicts the
// flavor is left as it is.
func TestUngateOnFlavorOnAPIServer(t *testing.T) {
	ns := newNamespace(t, false)
	api, err := client.New(managerSA, client.Options{Scheme: admin.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	flavor := &quota.Flavor{Name: "spot", NodeLabels: flavorLabels, Tolerations: []corev1.Toleration{flavorToleration}}
	tests := map[string]struct {
		selector     map[string]string
		wantGated    bool
		wantSelector map[string]string
		wantEvent    string
	}{
		"an unrelated nodeSelector key": {
			selector:     map[string]string{"disk": "ssd"},
			wantSelector: map[string]string{"disk": "ssd", "node.example.com/pool": "spot", "topology.kubernetes.io/zone": "zone-a"},
			wantEvent:    "Normal Admitted Admitted on flavor spot after ",
		},
		"a nodeSelector that contradicts the flavor": {
			selector:     map[string]string{"topology.kubernetes.io/zone": "zone-b"},
			wantGated:    true,
			wantSelector: map[string]string{"topology.kubernetes.io/zone": "zone-b"},
		},
	}
	i := 0
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			i++
			pod := podtest.New(fmt.Sprintf("ungate-%d", i)).NS(ns).Gated().Container("c", podtest.Image).Req("cpu=1").Obj()
			pod.Spec.NodeSelector, pod.Spec.Tolerations = tc.selector, []corev1.Toleration{otherToleration}
			created, err := clientset.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			events := controller.UngateOnFlavor(t, api, created, flavor)

			got, err := clientset.CoreV1().Pods(ns).Get(t.Context(), created.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if gated := gates.HasGate(got, v1alpha1.SchedulingGate); gated != tc.wantGated {
				t.Errorf("gated = %v, want %v", gated, tc.wantGated)
			}
			if diff := gocmp.Diff(tc.wantSelector, got.Spec.NodeSelector); diff != "" {
				t.Errorf("nodeSelector (-want +got):\n%s", diff)
			}
			wantTolerations := 1
			if tc.wantGated {
				wantTolerations = 0
			}
			if n := countToleration(got, flavorToleration); n != wantTolerations {
				t.Errorf("the flavor's toleration %d times, want %d: %v", n, wantTolerations, got.Spec.Tolerations)
			}
			if want := ns + "/b"; !tc.wantGated && got.Annotations[v1alpha1.AdmittedByAnnotation] != want {
				t.Errorf("admitted-by = %q, want %q", got.Annotations[v1alpha1.AdmittedByAnnotation], want)
			}
			if want := flavor.Name; !tc.wantGated && got.Annotations[v1alpha1.FlavorAnnotation] != want {
				t.Errorf("flavor annotation = %q, want %q", got.Annotations[v1alpha1.FlavorAnnotation], want)
			}
			if tc.wantEvent == "" && len(events) > 0 || tc.wantEvent != "" && (len(events) != 1 || !strings.HasPrefix(events[0], tc.wantEvent)) {
				t.Errorf("events %q, want one starting with %q", events, tc.wantEvent)
			}
		})
	}
}
