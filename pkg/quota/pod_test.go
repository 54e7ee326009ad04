package quota

import (
	"fmt"
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
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(Pod{}, "Usage", "Unset")); diff != "" {
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

// An in-place resize down frees the difference only once the kubelet has applied it:
// until then the pod is charged what its status says runs, as ResourceQuota charges it,
// and a pod waiting for that room stays gated.
func TestResizeDownFreesOnlyWhatTheKubeletApplied(t *testing.T) {
	q, _ := newTestQueue()
	q.SetNamespace("team-a", map[string]string{v1alpha1.EnabledLabel: "true"})
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=4").Obj())
	running := makePod("running").Ungated().Req("cpu=3").RV(1).Obj()
	q.UpsertPod(NewPod(running, v1alpha1.SchedulingGate, t0))
	q.UpsertPod(makePod("waiting").Created(1).Req("cpu=2").RV(2).Pod())

	steps := []struct {
		name         string
		spec         string
		allocated    string
		applied      string
		wantUsed     string
		wantAdmitted []string
	}{
		{name: "resized down in the spec only", spec: "cpu=1", allocated: "cpu=3", applied: "cpu=3", wantUsed: "requests.cpu=3"},
		{name: "allocated, not applied yet", spec: "cpu=1", allocated: "cpu=1", applied: "cpu=3", wantUsed: "requests.cpu=3"},
		{name: "applied by the kubelet", spec: "cpu=1", allocated: "cpu=1", applied: "cpu=1", wantUsed: "requests.cpu=3", wantAdmitted: []string{"waiting"}},
	}
	for i, s := range steps {
		p := running.DeepCopy()
		p.ResourceVersion = fmt.Sprint(10 + i)
		p.Spec.Containers[0].Resources.Requests = parseList(s.spec)
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", AllocatedResources: parseList(s.allocated),
			Resources: &corev1.ResourceRequirements{Requests: parseList(s.applied)}}}
		q.UpsertPod(NewPod(p, v1alpha1.SchedulingGate, t0))
		if diff := cmp.Diff(s.wantAdmitted, admitNames(q)); diff != "" {
			t.Errorf("%s: admitted (-want +got):\n%s", s.name, diff)
		}
		if diff := listDiff(parseList(s.wantUsed), mustStatus(t, q, BudgetKey{Namespace: "team-a", Name: "b"}).Used); diff != "" {
			t.Errorf("%s: used (-want +got):\n%s", s.name, diff)
		}
	}
}
