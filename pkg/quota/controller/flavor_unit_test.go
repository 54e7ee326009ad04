package controller

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/gates"
	"github.com/quotagate/quotagate/pkg/quota"
)

var (
	spotFlavor = &quota.Flavor{
		Name:       "spot",
		NodeLabels: map[string]string{"pool.example.com/kind": "spot", "zone": "a"},
		Tolerations: []corev1.Toleration{{
			Key: "pool.example.com/spot", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
		}},
	}
	// defaultTolerations are what the API server's DefaultTolerationSeconds plugin gives
	// nearly every pod.
	defaultTolerations = []corev1.Toleration{
		{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
		{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
	}
)

// placedPod is a gated pod with a nodeSelector and tolerations.
func placedPod(name string, selector map[string]string, tolerations ...corev1.Toleration) *corev1.Pod {
	pod := podtest.New(name).NS("ns").UID("uid-"+name).RV(5).At(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)).
		Gated().Container("c", "").Req("cpu=1").Obj()
	pod.Spec.NodeSelector, pod.Spec.Tolerations = selector, tolerations
	return pod
}

// The flavor patch built from the cache is the one built from the full pod, whatever
// nodeSelector and tolerations it has; pods with equal ones share them, and a pod with
// neither keeps nothing.
func TestCompactPodKeepsThePlacement(t *testing.T) {
	ann := map[string]string{v1alpha1.AdmittedByAnnotation: "ns/b"}
	pods := map[string]*corev1.Pod{
		"neither":                  placedPod("p1", nil),
		"the default tolerations":  placedPod("p2", nil, defaultTolerations...),
		"an unrelated selector":    placedPod("p3", map[string]string{"disk": "ssd"}),
		"the flavor's label":       placedPod("p4", map[string]string{"zone": "a"}, spotFlavor.Tolerations...),
		"a contradicting selector": placedPod("p5", map[string]string{"zone": "b"}, defaultTolerations...),
		"seconds differ": placedPod("p6", nil, corev1.Toleration{
			Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30),
		}),
	}
	for name, full := range pods {
		t.Run(name, func(t *testing.T) {
			want, wantOK, wantErr := gates.UngatePatchOnFlavor(full, v1alpha1.SchedulingGate, ann, spotFlavor.NodeLabels, spotFlavor.Tolerations)
			cached := compactPod(full)
			got, ok, err := gates.UngatePatchOnFlavor(cached.patchTarget(), v1alpha1.SchedulingGate, ann, spotFlavor.NodeLabels, spotFlavor.Tolerations)
			if diff := cmp.Diff(string(want), string(got)); diff != "" || ok != wantOK || (err == nil) != (wantErr == nil) {
				t.Errorf("flavor patch from the cache: ok %v, error %v (full pod: %v, %v); (-full +cached):\n%s", ok, err, wantOK, wantErr, diff)
			}
			if (cached.placement == nil) != (len(full.Spec.NodeSelector) == 0 && len(full.Spec.Tolerations) == 0) {
				t.Errorf("placement = %v for nodeSelector %v and tolerations %v", cached.placement, full.Spec.NodeSelector, full.Spec.Tolerations)
			}
		})
	}
	a, b := compactPod(placedPod("a", nil, defaultTolerations...)), compactPod(placedPod("b", nil, defaultTolerations...))
	if a.placement != b.placement {
		t.Errorf("two pods with equal tolerations keep two placements, want one shared")
	}
	if c := compactPod(pods["seconds differ"]); c.placement == a.placement {
		t.Errorf("tolerations that differ in their seconds share a placement")
	}
}

// An admission on a flavor: the patch puts the pod on the flavor's nodes, and the event
// says which. A pod whose nodeSelector grew to contradict the flavor is not patched;
// the charge is given back (NotSent) and the pod is decided again after a backoff.
func TestUngateOnFlavor(t *testing.T) {
	tests := map[string]struct {
		pod          *corev1.Pod
		wantGated    bool
		wantSelector map[string]string
		wantEvent    string
	}{
		"the flavor's labels and toleration are added": {
			pod:          placedPod("p1", map[string]string{"disk": "ssd"}, defaultTolerations...),
			wantSelector: map[string]string{"disk": "ssd", "pool.example.com/kind": "spot", "zone": "a"},
			wantEvent:    "Normal Admitted Admitted on flavor spot after 0s: ",
		},
		"a contradicting selector: no patch": {
			pod:          placedPod("p1", map[string]string{"zone": "b"}, defaultTolerations...),
			wantGated:    true,
			wantSelector: map[string]string{"zone": "b"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			tc.pod.ResourceVersion = ""
			patches := 0
			api := fake.NewClientBuilder().WithObjects(tc.pod).WithInterceptorFuncs(interceptor.Funcs{
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					patches++
					return c.Patch(ctx, obj, patch, opts...)
				},
			}).Build()
			c, err := New(Options{Gate: v1alpha1.SchedulingGate, Workers: 1, Clock: clk, PodAdmittedEvents: true})
			if err != nil {
				t.Fatal(err)
			}
			rec := events.NewFakeRecorder(10)
			useAPI(c, api, false, rec)
			c.core.SetNamespace("ns", map[string]string{v1alpha1.EnabledLabel: "true"})
			c.core.UpsertBudget(quota.Budget{Key: quota.BudgetKey{Namespace: "ns", Name: "b"}, Hard: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}})
			showCore(ctx, t, c, api, clk.Now(), tc.pod)
			adm := c.core.Admit()
			if len(adm) != 1 {
				t.Fatalf("Admit = %v, want p1", adm)
			}
			// The budget holds no flavors; the admission is put on one as a flavored
			// budget's would be, so that only the controller's side is under test.
			adm[0].Flavor = spotFlavor
			c.ungate(ctx, adm[0])

			got := &corev1.Pod{}
			if err := api.Get(ctx, client.ObjectKeyFromObject(tc.pod), got); err != nil {
				t.Fatal(err)
			}
			if gated := gates.HasGate(got, v1alpha1.SchedulingGate); gated != tc.wantGated {
				t.Errorf("gated in the API server = %v, want %v (%d patches sent)", gated, tc.wantGated, patches)
			}
			if tc.wantGated && patches != 0 {
				t.Errorf("%d patches sent, want none", patches)
			}
			if diff := cmp.Diff(tc.wantSelector, got.Spec.NodeSelector); diff != "" {
				t.Errorf("nodeSelector (-want +got):\n%s", diff)
			}
			wantTolerations := defaultTolerations
			if !tc.wantGated {
				wantTolerations = append(slices.Clone(defaultTolerations), spotFlavor.Tolerations...)
			}
			if diff := cmp.Diff(wantTolerations, got.Spec.Tolerations); diff != "" {
				t.Errorf("tolerations (-want +got):\n%s", diff)
			}
			var events []string
			for len(rec.Events) > 0 {
				events = append(events, <-rec.Events)
			}
			if tc.wantEvent == "" && len(events) > 0 || tc.wantEvent != "" && (len(events) != 1 || !strings.HasPrefix(events[0], tc.wantEvent)) {
				t.Errorf("events %q, want one starting with %q", events, tc.wantEvent)
			}
			if tc.wantGated {
				clk.Step(quota.DefaultInitialBackoff)
				if st, _ := c.core.Reader().Status(quota.BudgetKey{Namespace: "ns", Name: "b"}); st.AdmittedPods != 0 {
					t.Errorf("after NotSent the budget still charges %d pods, want the charge given back", st.AdmittedPods)
				}
				if again := c.core.Admit(); len(again) != 1 {
					t.Errorf("after a backoff Admit = %v, want the pod decided again", again)
				}
			}
		})
	}
}
