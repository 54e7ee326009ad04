package gates

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
)

// fuzzPod builds a pod from fuzz input: the other gates are the distinct
// non-empty lines of others, and the quotagate gate is inserted at position
// at modulo (number of other gates + 2), where the last position means "not
// gated". It reports false for input that no API server would hold.
func fuzzPod(others string, at uint8) (*corev1.Pod, bool) {
	if !utf8.ValidString(others) {
		return nil, false
	}
	var names []string
	for _, n := range strings.Split(others, "\n") {
		if n != "" && n != quotaGate && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if i := int(at) % (len(names) + 2); i <= len(names) {
		names = slices.Insert(names, i, quotaGate)
	}
	return makePod(names...), true
}

// fuzzAnnotations turns "k=v" lines into a map; it reports false for input
// that is not valid UTF-8, which JSON cannot carry unchanged.
func fuzzAnnotations(lines string) (map[string]string, bool) {
	if !utf8.ValidString(lines) {
		return nil, false
	}
	var m map[string]string
	for _, l := range strings.Split(lines, "\n") {
		k, v, _ := strings.Cut(l, "=")
		if k == "" {
			continue
		}
		if m == nil {
			m = map[string]string{}
		}
		m[k] = v
	}
	return m, true
}

// roundTrip returns pod as the API server would store it.
func roundTrip(t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	b, err := json.Marshal(pod)
	if err != nil {
		t.Fatalf("marshalling pod: %v", err)
	}
	out := &corev1.Pod{}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("unmarshalling pod: %v", err)
	}
	return out
}

// The add ops, applied as the API server applies them, must do exactly what
// Gate does in memory, and leave exactly one quotagate gate.
func FuzzAddOps(f *testing.F) {
	f.Add("", uint8(0))
	f.Add("", uint8(1))
	f.Add("a.io/x", uint8(0))
	f.Add("a.io/x\nb.io/y", uint8(2))
	f.Add("a.io/x\nb.io/y", uint8(3))
	f.Fuzz(func(t *testing.T, others string, at uint8) {
		pod, ok := fuzzPod(others, at)
		if !ok {
			return // not valid UTF-8: no API server would hold it
		}
		ops := AddOps(pod, quotaGate)
		patch, err := json.Marshal(ops)
		if err != nil {
			t.Fatalf("marshalling ops: %v", err)
		}

		want := pod.DeepCopy()
		changed := Gate(want, quotaGate)
		if changed != (len(ops) > 0) {
			t.Fatalf("Gate() changed = %v but AddOps() returned %d ops", changed, len(ops))
		}
		if !changed {
			return
		}
		got, err := applyPatch(t, pod, patch)
		if err != nil {
			t.Fatalf("applying %s: %v", patch, err)
		}
		if diff := cmp.Diff(roundTrip(t, want), got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("patched pod differs from Gate() (-want +got):\n%s", diff)
		}
		if n := strings.Count(strings.Join(gateNames(got), "\n")+"\n", quotaGate+"\n"); n != 1 {
			t.Errorf("patched pod has the gate %d times, want once: %v", n, gateNames(got))
		}
	})
}

// The ungate patch, applied as the API server applies it, must do exactly what
// Ungate does in memory plus set every annotation asked for, keeping the
// pod's other gates (in order) and other annotations.
func FuzzUngatePatch(f *testing.F) {
	f.Add("", uint8(0), "", "")
	f.Add("a.io/x", uint8(1), "x=y", "quotagate.io/admitted-at=now")
	f.Add("a.io/x\nb.io/y", uint8(1), "", "quotagate.io/admitted-by=a,b\na~b/c=d")
	f.Add("a.io/x", uint8(2), "", "k=v")
	f.Fuzz(func(t *testing.T, others string, at uint8, existing, annotate string) {
		pod, ok := fuzzPod(others, at)
		if !ok {
			return // not valid UTF-8: no API server would hold it
		}
		var ok1, ok2 bool
		pod.Annotations, ok1 = fuzzAnnotations(existing)
		annotations, ok2 := fuzzAnnotations(annotate)
		if !ok1 || !ok2 {
			return // not valid UTF-8: no API server would hold it
		}

		patch, ok := UngatePatch(pod, quotaGate, annotations)
		want := pod.DeepCopy()
		if changed := Ungate(want, quotaGate); changed != ok {
			t.Fatalf("Ungate() changed = %v but UngatePatch() ok = %v", changed, ok)
		}
		if !ok {
			if patch != nil {
				t.Errorf("UngatePatch() = %s with ok = false, want no patch", patch)
			}
			return
		}
		if len(annotations) > 0 {
			if want.Annotations == nil {
				want.Annotations = map[string]string{}
			}
			maps.Copy(want.Annotations, annotations)
		}
		got, err := applyPatch(t, pod, patch)
		if err != nil {
			t.Fatalf("applying %s: %v", patch, err)
		}
		if diff := cmp.Diff(roundTrip(t, want), got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("patched pod differs from Ungate() plus annotations (-want +got):\n%s", diff)
		}
		if HasGate(got, quotaGate) {
			t.Errorf("patched pod still has the gate: %v", gateNames(got))
		}
	})
}
