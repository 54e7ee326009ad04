package gates

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// The flavor of these tests: two node labels, one with a "/" to escape, and a toleration
// of its nodes' taint.
var (
	flavorLabels = map[string]string{"pool.example.com/kind": "spot", "zone": "a"}
	spotTaint    = corev1.Toleration{Key: "pool.example.com/spot", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	notReady     = corev1.Toleration{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists,
		Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}
)

// onNodes gives pod a nodeSelector and tolerations.
func onNodes(pod *corev1.Pod, selector map[string]string, tolerations ...corev1.Toleration) *corev1.Pod {
	pod.Spec.NodeSelector = selector
	pod.Spec.Tolerations = tolerations
	return pod
}

func TestUngatePatchOnFlavor(t *testing.T) {
	const (
		fence  = `{"op":"test","path":"/metadata/resourceVersion","value":"7"},`
		remove = `{"op":"test","path":"/spec/schedulingGates/0/name","value":"quotagate.io/budget"},` +
			`{"op":"remove","path":"/spec/schedulingGates/0"}`
		spotJSON = `{"key":"pool.example.com/spot","operator":"Exists","effect":"NoSchedule"}`
	)
	tests := map[string]struct {
		pod         *corev1.Pod
		labels      map[string]string
		tolerations []corev1.Toleration
		want        string
		wantOK      bool
		// wantSelector and wantTolerations are the pod's once the patch is applied.
		wantSelector    map[string]string
		wantTolerations []corev1.Toleration
	}{
		"neither nodeSelector nor tolerations: both added whole": {
			pod: makePod(quotaGate), labels: flavorLabels, tolerations: []corev1.Toleration{spotTaint}, wantOK: true,
			want: `[` + fence + remove + `,` +
				`{"op":"add","path":"/spec/nodeSelector","value":{"pool.example.com/kind":"spot","zone":"a"}},` +
				`{"op":"add","path":"/spec/tolerations","value":[` + spotJSON + `]}]`,
			wantSelector: flavorLabels, wantTolerations: []corev1.Toleration{spotTaint},
		},
		"an unrelated selector and toleration: added key by key and appended": {
			pod:    onNodes(makePod(quotaGate), map[string]string{"disk": "ssd"}, notReady),
			labels: flavorLabels, tolerations: []corev1.Toleration{spotTaint}, wantOK: true,
			want: `[` + fence + remove + `,` +
				`{"op":"add","path":"/spec/nodeSelector/pool.example.com~1kind","value":"spot"},` +
				`{"op":"add","path":"/spec/nodeSelector/zone","value":"a"},` +
				`{"op":"add","path":"/spec/tolerations/-","value":` + spotJSON + `}]`,
			wantSelector:    map[string]string{"disk": "ssd", "pool.example.com/kind": "spot", "zone": "a"},
			wantTolerations: []corev1.Toleration{notReady, spotTaint},
		},
		"a label the pod has with the same value is left alone": {
			pod:    onNodes(makePod(quotaGate), map[string]string{"zone": "a"}),
			labels: flavorLabels, wantOK: true,
			want: `[` + fence + remove + `,` +
				`{"op":"add","path":"/spec/nodeSelector/pool.example.com~1kind","value":"spot"}]`,
			wantSelector: flavorLabels,
		},
		"the pod has every label and the toleration: only the gate goes": {
			pod:    onNodes(makePod(quotaGate), map[string]string{"zone": "a", "pool.example.com/kind": "spot"}, spotTaint),
			labels: flavorLabels, tolerations: []corev1.Toleration{spotTaint}, wantOK: true,
			want:         `[` + fence + remove + `]`,
			wantSelector: flavorLabels, wantTolerations: []corev1.Toleration{spotTaint},
		},
		"a toleration differing in one field is another toleration": {
			pod:         onNodes(makePod(quotaGate), nil, notReady),
			tolerations: []corev1.Toleration{notReady, {Key: notReady.Key, Operator: notReady.Operator, Effect: notReady.Effect, TolerationSeconds: ptr.To[int64](60)}},
			wantOK:      true,
			want: `[` + fence + remove + `,` +
				`{"op":"add","path":"/spec/tolerations/-","value":{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":60}}]`,
			wantTolerations: []corev1.Toleration{notReady, {Key: notReady.Key, Operator: notReady.Operator, Effect: notReady.Effect, TolerationSeconds: ptr.To[int64](60)}},
		},
		"a toleration the flavor lists twice is added once": {
			pod: makePod(quotaGate), tolerations: []corev1.Toleration{spotTaint, spotTaint}, wantOK: true,
			want:            `[` + fence + remove + `,{"op":"add","path":"/spec/tolerations","value":[` + spotJSON + `]}]`,
			wantTolerations: []corev1.Toleration{spotTaint},
		},
		"a label the pod has with another value: no patch": {
			pod:    onNodes(makePod(quotaGate), map[string]string{"zone": "b"}),
			labels: flavorLabels, tolerations: []corev1.Toleration{spotTaint}, wantOK: false,
		},
		"not gated: no patch, whatever the selector": {
			pod:    onNodes(makePod("a.io/x"), map[string]string{"zone": "b"}),
			labels: flavorLabels, wantOK: false,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tc.pod.ResourceVersion = "7"
			got, ok, err := UngatePatchOnFlavor(tc.pod, quotaGate, nil, tc.labels, tc.tolerations)
			if ok != tc.wantOK {
				t.Fatalf("UngatePatchOnFlavor() ok = %v (error %v), want %v", ok, err, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("UngatePatchOnFlavor() (-want +got):\n%s", diff)
			}
			var conflict *SelectorConflictError
			wantConflict := !ok && HasGate(tc.pod, quotaGate)
			if errors.As(err, &conflict) != wantConflict || (err != nil) != wantConflict {
				t.Fatalf("UngatePatchOnFlavor() error = %v, want a conflict: %v", err, wantConflict)
			}
			if !ok {
				return
			}
			patched, err := applyPatch(t, tc.pod, got)
			if err != nil {
				t.Fatalf("applying %s: %v", got, err)
			}
			if HasGate(patched, quotaGate) {
				t.Errorf("patched pod still has the gate")
			}
			if diff := cmp.Diff(tc.wantSelector, patched.Spec.NodeSelector, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("nodeSelector after the patch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantTolerations, patched.Spec.Tolerations, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("tolerations after the patch (-want +got):\n%s", diff)
			}
		})
	}
}

// The conflict names the key and both values, so that the manager's log says why.
func TestSelectorConflictError(t *testing.T) {
	pod := onNodes(makePod(quotaGate), map[string]string{"zone": "b", "pool.example.com/kind": "on-demand"})
	_, _, err := UngatePatchOnFlavor(pod, quotaGate, nil, flavorLabels, nil)
	want := "the pod's nodeSelector has pool.example.com/kind=on-demand, the flavor's node label is pool.example.com/kind=spot"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q (the first conflicting key in order)", err, want)
	}
}

// Without a flavor the patch is UngatePatch's, byte for byte, whatever the pod carries.
func TestUngatePatchOnNoFlavorIsUngatePatch(t *testing.T) {
	ann := map[string]string{"quotagate.io/admitted-by": "ns/b"}
	for _, pod := range []*corev1.Pod{
		makePod(quotaGate),
		onNodes(makePod("a.io/x", quotaGate), map[string]string{"zone": "b"}, notReady),
		makePod("a.io/x"),
	} {
		pod.ResourceVersion = "3"
		want, wantOK := UngatePatch(pod, quotaGate, ann)
		for _, tolerations := range [][]corev1.Toleration{nil, {}} {
			got, ok, err := UngatePatchOnFlavor(pod, quotaGate, ann, map[string]string{}, tolerations)
			if err != nil || ok != wantOK || string(got) != string(want) {
				t.Errorf("UngatePatchOnFlavor(no flavor) = %s, %v, %v; want UngatePatch's %s, %v", got, ok, err, want, wantOK)
			}
		}
	}
}

// A flavor patch built from an older version of the pod is refused whole: the gate stays
// and no label is added, even though the gate is still where it was.
func TestUngatePatchOnFlavorFencedOnResourceVersion(t *testing.T) {
	seen := makePod(quotaGate)
	seen.ResourceVersion = "10"
	patch, ok, err := UngatePatchOnFlavor(seen, quotaGate, nil, flavorLabels, []corev1.Toleration{spotTaint})
	if !ok || err != nil {
		t.Fatalf("UngatePatchOnFlavor() = %v, %v for a gated pod", ok, err)
	}
	now := seen.DeepCopy()
	now.ResourceVersion = "11"
	now.Spec.NodeSelector = map[string]string{"disk": "ssd"}
	if _, err := applyPatch(t, now, patch); err == nil {
		t.Error("applying a patch built from version 10 to version 11 succeeded, want the resourceVersion test to fail")
	}
}

// The flavor patch, applied as the API server applies it, must remove the gate, leave
// the pod's nodeSelector with every flavor label added and nothing else changed, and
// its tolerations with each of the flavor's it lacked appended once; or, when a label
// contradicts the pod's selector, there must be no patch.
func FuzzUngatePatchOnFlavor(f *testing.F) {
	f.Add("", "zone=a", "", "spot")
	f.Add("disk=ssd", "zone=a\na/b=c", "x", "spot\nx\nspot")
	f.Add("zone=a", "zone=a", "spot", "spot")
	f.Add("zone=b", "zone=a", "", "")
	f.Fuzz(func(t *testing.T, selector, labels, podTolerations, flavorTolerations string) {
		pod := makePod("a.io/x", quotaGate)
		var ok1, ok2 bool
		pod.Spec.NodeSelector, ok1 = fuzzAnnotations(selector)
		flavor, ok2 := fuzzAnnotations(labels)
		pts, ok3 := fuzzTolerations(podTolerations)
		fts, ok4 := fuzzTolerations(flavorTolerations)
		if !ok1 || !ok2 || !ok3 || !ok4 {
			return // not valid UTF-8: no API server would hold it
		}
		pod.Spec.Tolerations = pts

		patch, ok, err := UngatePatchOnFlavor(pod, quotaGate, nil, flavor, fts)
		contradicts := false
		for k, v := range flavor {
			if have, has := pod.Spec.NodeSelector[k]; has && have != v {
				contradicts = true
			}
		}
		if contradicts {
			if ok || patch != nil || err == nil {
				t.Fatalf("UngatePatchOnFlavor() = %s, %v, %v for a contradicting selector, want no patch and an error", patch, ok, err)
			}
			return
		}
		if !ok || err != nil {
			t.Fatalf("UngatePatchOnFlavor() ok = %v, error %v for a gated pod", ok, err)
		}
		got, err := applyPatch(t, pod, patch)
		if err != nil {
			t.Fatalf("applying %s: %v", patch, err)
		}
		want := pod.DeepCopy()
		Ungate(want, quotaGate)
		if len(flavor) > 0 {
			if want.Spec.NodeSelector == nil {
				want.Spec.NodeSelector = map[string]string{}
			}
			maps.Copy(want.Spec.NodeSelector, flavor)
		}
		for _, tol := range fts {
			if !slices.Contains(want.Spec.Tolerations, tol) {
				want.Spec.Tolerations = append(want.Spec.Tolerations, tol)
			}
		}
		if diff := cmp.Diff(roundTrip(t, want), got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("patched pod (-want +got):\n%s", diff)
		}
	})
}

// fuzzTolerations turns lines into tolerations of the taints named by them (NoSchedule,
// Exists); it reports false for input that is not valid UTF-8.
func fuzzTolerations(lines string) ([]corev1.Toleration, bool) {
	if !utf8.ValidString(lines) {
		return nil, false
	}
	var ts []corev1.Toleration
	for _, l := range strings.Split(lines, "\n") {
		if l != "" {
			ts = append(ts, corev1.Toleration{Key: l, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
		}
	}
	return ts, true
}
