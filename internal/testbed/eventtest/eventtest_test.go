package eventtest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodRecorderTakesSortedLines(t *testing.T) {
	var r PodRecorder
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name}}
	}
	r.Eventf(pod("b"), nil, corev1.EventTypeNormal, "EstimateChanged", "Estimate", "moved later by %s", "5m")
	r.Eventf(pod("a"), nil, corev1.EventTypeWarning, "Waiting", "Wait", "no room")
	r.Eventf(&corev1.Node{}, nil, corev1.EventTypeNormal, "Other", "Other", "about a node")
	want := []string{
		"*v1.Node: Normal Other about a node",
		"team-a/a: Warning Waiting no room",
		"team-a/b: Normal EstimateChanged moved later by 5m",
	}
	if diff := cmp.Diff(want, r.Take()); diff != "" {
		t.Errorf("Take (-want +got):\n%s", diff)
	}
	if got := r.Take(); len(got) != 0 {
		t.Errorf("a second Take returned %q, want nothing: the first took them", got)
	}
}
