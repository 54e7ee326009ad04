package quota

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

func TestNewPod(t *testing.T) {
	grace := int64(30)
	deleting := func(at time.Time) *corev1.Pod {
		p := makePod("p").Ungated().Obj()
		ts := metav1.NewTime(at)
		p.DeletionTimestamp = &ts
		p.DeletionGracePeriodSeconds = &grace
		return p
	}
	tests := map[string]struct {
		pod  *corev1.Pod
		want Pod
	}{
		"gated pod, priority defaults to 0": {
			pod:  makePod("p").Obj(),
			want: Pod{PodRef: PodRef{UID: "p", Namespace: "team-a", Name: "p"}, Created: t0, Gated: true},
		},
		"priority and labels": {
			pod:  makePod("p").Priority(100).Label("app", "x").Ungated().Obj(),
			want: Pod{PodRef: PodRef{UID: "p", Namespace: "team-a", Name: "p"}, Created: t0, Priority: 100, Labels: map[string]string{"app": "x"}},
		},
		"another controller's gate is not ours": {
			pod: func() *corev1.Pod {
				p := makePod("p").Obj()
				p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/other"}}
				return p
			}(),
			want: Pod{PodRef: PodRef{UID: "p", Namespace: "team-a", Name: "p"}, Created: t0},
		},
		"succeeded is terminal": {
			pod:  makePod("p").Ungated().Phase(corev1.PodSucceeded).Obj(),
			want: Pod{PodRef: PodRef{UID: "p", Namespace: "team-a", Name: "p"}, Created: t0, Terminal: true},
		},
		"failed is terminal": {
			pod:  makePod("p").Ungated().Phase(corev1.PodFailed).Obj(),
			want: Pod{PodRef: PodRef{UID: "p", Namespace: "team-a", Name: "p"}, Created: t0, Terminal: true},
		},
		"terminating within its grace period still counts, until ReleaseAt": {
			pod:  deleting(t0),
			want: Pod{PodRef: PodRef{UID: "p", Namespace: "team-a", Name: "p"}, Created: t0, ReleaseAt: t0.Add(30 * time.Second)},
		},
		"terminating past its grace period is terminal": {
			pod:  deleting(t0.Add(-31 * time.Second)),
			want: Pod{PodRef: PodRef{UID: "p", Namespace: "team-a", Name: "p"}, Created: t0, Terminal: true},
		},
		"group member": {
			pod: makePod("p").Group("g1", 4).Obj(),
			want: Pod{PodRef: PodRef{UID: "p", Namespace: "team-a", Name: "p"}, Created: t0, Gated: true,
				Labels: map[string]string{v1alpha1.GroupLabel: "g1"}, Group: "g1", GroupSize: 4},
		},
		"group without size": {
			pod: makePod("p").Label(v1alpha1.GroupLabel, "g1").Obj(),
			want: Pod{PodRef: PodRef{UID: "p", Namespace: "team-a", Name: "p"}, Created: t0, Gated: true,
				Labels: map[string]string{v1alpha1.GroupLabel: "g1"}, Group: "g1",
				GroupError: "annotation quotagate.io/group-size is missing"},
		},
		"group with a bad size": {
			pod: makePod("p").Group("g1", 0).Obj(),
			want: Pod{PodRef: PodRef{UID: "p", Namespace: "team-a", Name: "p"}, Created: t0, Gated: true,
				Labels: map[string]string{v1alpha1.GroupLabel: "g1"}, Group: "g1",
				GroupError: `annotation quotagate.io/group-size="0" is not a whole number of at least 1`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := NewPod(tc.pod, v1alpha1.SchedulingGate, t0)
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(Pod{}, "Usage")); diff != "" {
				t.Errorf("NewPod (-want +got):\n%s", diff)
			}
		})
	}
}

// A manager run with --gate owns that gate only: the default one on a pod is someone
// else's.
func TestNewPodReadsTheGateItIsGiven(t *testing.T) {
	p := makePod("p").Ungated().Obj()
	p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/hold"}, {Name: "batch.example.com/quota"}}
	for gate, want := range map[string]bool{
		"batch.example.com/quota": true,
		"example.com/hold":        true,
		v1alpha1.SchedulingGate:   false,
	} {
		if got := NewPod(p, gate, t0).Gated; got != want {
			t.Errorf("NewPod(gate %s).Gated = %v, want %v", gate, got, want)
		}
	}
}
