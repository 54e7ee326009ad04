package gates

import (
	"encoding/json"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestAddOps(t *testing.T) {
	tests := map[string]struct {
		pod  *corev1.Pod
		want string
	}{
		"no gates": {
			pod:  makePod(),
			want: `[{"op":"add","path":"/spec/schedulingGates","value":[{"name":"quotagate.io/budget"}]}]`,
		},
		"other gate": {
			pod:  makePod("a.io/x"),
			want: `[{"op":"add","path":"/spec/schedulingGates/-","value":{"name":"quotagate.io/budget"}}]`,
		},
		"already gated": {pod: makePod("a.io/x", quotaGate), want: `null`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := json.Marshal(AddOps(tc.pod, quotaGate))
			if err != nil {
				t.Fatalf("marshalling ops: %v", err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("AddOps() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRemoveOps(t *testing.T) {
	tests := map[string]struct {
		pod  *corev1.Pod
		want string
	}{
		"no gates":   {pod: makePod(), want: `null`},
		"other gate": {pod: makePod("a.io/x"), want: `null`},
		"only the gate": {
			pod:  makePod(quotaGate),
			want: `[{"op":"test","path":"/spec/schedulingGates/0/name","value":"quotagate.io/budget"},{"op":"remove","path":"/spec/schedulingGates/0"}]`,
		},
		"third of three": {
			pod:  makePod("a.io/x", "b.io/y", quotaGate),
			want: `[{"op":"test","path":"/spec/schedulingGates/2/name","value":"quotagate.io/budget"},{"op":"remove","path":"/spec/schedulingGates/2"}]`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := json.Marshal(RemoveOps(tc.pod, quotaGate))
			if err != nil {
				t.Fatalf("marshalling ops: %v", err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("RemoveOps() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUngatePatch(t *testing.T) {
	admitted := map[string]string{
		"quotagate.io/admitted-at": "2026-11-30T02:00:00Z",
		"quotagate.io/admitted-by": "team-a/team-a,ml",
	}
	withAnnotations := func(pod *corev1.Pod, a map[string]string) *corev1.Pod {
		pod.Annotations = a
		return pod
	}
	withVersion := func(pod *corev1.Pod, rv string) *corev1.Pod {
		pod.ResourceVersion = rv
		return pod
	}
	tests := map[string]struct {
		pod         *corev1.Pod
		annotations map[string]string
		wantOK      bool
		want        string
	}{
		"not gated": {pod: makePod("a.io/x"), annotations: admitted, wantOK: false},
		"no annotations yet": {
			pod:         makePod(quotaGate),
			annotations: admitted,
			wantOK:      true,
			want: `[{"op":"test","path":"/spec/schedulingGates/0/name","value":"quotagate.io/budget"},` +
				`{"op":"remove","path":"/spec/schedulingGates/0"},` +
				`{"op":"add","path":"/metadata/annotations","value":{"quotagate.io/admitted-at":"2026-11-30T02:00:00Z","quotagate.io/admitted-by":"team-a/team-a,ml"}}]`,
		},
		"existing annotations": {
			pod:         withAnnotations(makePod("a.io/x", quotaGate), map[string]string{"x": "y"}),
			annotations: admitted,
			wantOK:      true,
			want: `[{"op":"test","path":"/spec/schedulingGates/1/name","value":"quotagate.io/budget"},` +
				`{"op":"remove","path":"/spec/schedulingGates/1"},` +
				`{"op":"add","path":"/metadata/annotations/quotagate.io~1admitted-at","value":"2026-11-30T02:00:00Z"},` +
				`{"op":"add","path":"/metadata/annotations/quotagate.io~1admitted-by","value":"team-a/team-a,ml"}]`,
		},
		"no annotations asked for": {
			pod:    makePod(quotaGate),
			wantOK: true,
			want: `[{"op":"test","path":"/spec/schedulingGates/0/name","value":"quotagate.io/budget"},` +
				`{"op":"remove","path":"/spec/schedulingGates/0"}]`,
		},
		"fenced on the version seen": {
			pod:    withVersion(makePod(quotaGate), "42"),
			wantOK: true,
			want: `[{"op":"test","path":"/metadata/resourceVersion","value":"42"},` +
				`{"op":"test","path":"/spec/schedulingGates/0/name","value":"quotagate.io/budget"},` +
				`{"op":"remove","path":"/spec/schedulingGates/0"}]`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := UngatePatch(tc.pod, quotaGate, tc.annotations)
			if ok != tc.wantOK {
				t.Fatalf("UngatePatch() ok = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("UngatePatch() (-want +got):\n%s", diff)
			}
		})
	}
}

// A patch built from a stale copy of the pod must be refused, not remove the
// wrong gate: here another controller's gate was inserted in front of ours.
func TestUngatePatchRefusedWhenGateMoved(t *testing.T) {
	seen := makePod("a.io/x", quotaGate)
	patch, ok := UngatePatch(seen, quotaGate, nil)
	if !ok {
		t.Fatal("UngatePatch() ok = false for a gated pod")
	}
	now := makePod("a.io/x", "z.io/new", quotaGate)
	if _, err := applyPatch(t, now, patch); err == nil {
		t.Error("applying a patch built before the gate moved succeeded, want the test op to fail")
	}
}

// A pod seen without annotations gets the whole annotations map added; if
// someone annotated it since, the resourceVersion test refuses the patch rather
// than replacing their annotations.
func TestUngatePatchRefusedWhenAnnotatedSince(t *testing.T) {
	seen := makePod(quotaGate)
	seen.ResourceVersion = "10"
	patch, ok := UngatePatch(seen, quotaGate, map[string]string{"quotagate.io/admitted-by": "b"})
	if !ok {
		t.Fatal("UngatePatch() ok = false for a gated pod")
	}
	if _, err := applyPatch(t, seen.DeepCopy(), patch); err != nil {
		t.Fatalf("applying the patch to the pod it was built from: %v", err)
	}
	now := seen.DeepCopy()
	now.ResourceVersion = "11"
	now.Annotations = map[string]string{"someone.io/else": "x"}
	if _, err := applyPatch(t, now, patch); err == nil {
		t.Error("applying a patch built before the pod was annotated succeeded, want the resourceVersion test to fail")
	}
}

// A patch whose answer was lost must never land later: once the pod has moved
// on to a newer version (here, only its labels changed), the patch built from
// the older version is refused although the gate is still where it was.
func TestUngatePatchFencedOnResourceVersion(t *testing.T) {
	seen := makePod(quotaGate)
	seen.ResourceVersion = "10"
	patch, ok := UngatePatch(seen, quotaGate, nil)
	if !ok {
		t.Fatal("UngatePatch() ok = false for a gated pod")
	}
	now := seen.DeepCopy()
	now.ResourceVersion = "11"
	now.Labels = map[string]string{"relabelled": "true"}
	if _, err := applyPatch(t, now, patch); err == nil {
		t.Error("applying a patch built from version 10 to version 11 succeeded, want the resourceVersion test to fail")
	}
}

func TestEscapePointer(t *testing.T) {
	tests := map[string]string{
		"plain":                    "plain",
		"quotagate.io/admitted-at": "quotagate.io~1admitted-at",
		"a~b/c":                    "a~0b~1c",
		"~1":                       "~01",
		"/~":                       "~1~0",
	}
	for in, want := range tests {
		if got := EscapePointer(in); got != want {
			t.Errorf("EscapePointer(%q) = %q, want %q", in, got, want)
		}
	}
}

// applyPatch applies a JSON patch to pod the way the API server does, and
// returns the patched pod.
func applyPatch(t *testing.T, pod *corev1.Pod, patch []byte) (*corev1.Pod, error) {
	t.Helper()
	doc, err := json.Marshal(pod)
	if err != nil {
		t.Fatalf("marshalling pod: %v", err)
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		t.Fatalf("decoding patch %s: %v", patch, err)
	}
	patched, err := p.Apply(doc)
	if err != nil {
		return nil, err
	}
	out := &corev1.Pod{}
	if err := json.Unmarshal(patched, out); err != nil {
		t.Fatalf("unmarshalling patched pod: %v", err)
	}
	return out, nil
}
