package quota

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
)

// UnsetResources answers what kube's podEvaluator.Constraints checks: every container
// and init container (sidecars included) must set each tracked cpu and memory value,
// unless the pod sets pod-level resources.
func TestUnsetResources(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	ctr := func(name, requests, limits string) corev1.Container {
		c := corev1.Container{Name: name}
		if requests != "" {
			c.Resources.Requests = parseList(requests)
		}
		if limits != "" {
			c.Resources.Limits = parseList(limits)
		}
		return c
	}
	pod := func(init []corev1.Container, ctrs ...corev1.Container) *corev1.Pod {
		return podtest.New("").Spec(corev1.PodSpec{InitContainers: init, Containers: ctrs}).Obj()
	}
	sidecar := ctr("proxy", "cpu=100m", "")
	sidecar.RestartPolicy = &always
	podLevel := pod(nil, ctr("app", "", ""))
	podLevel.Spec.Resources = &corev1.ResourceRequirements{Limits: parseList("memory=1Gi")}
	all := "cpu=1,memory=1Gi"

	tests := map[string]struct {
		pod  *corev1.Pod
		want []UnsetResource
	}{
		"BestEffort leaves all four unset": {
			pod: pod(nil, ctr("app", "", "")),
			want: []UnsetResource{
				{"limits.cpu", "app"}, {"limits.memory", "app"}, {"requests.cpu", "app"}, {"requests.memory", "app"},
			},
		},
		"requests without limits": {
			pod:  pod(nil, ctr("app", all, "")),
			want: []UnsetResource{{"limits.cpu", "app"}, {"limits.memory", "app"}},
		},
		"everything set": {pod: pod(nil, ctr("app", all, all))},
		"zero is set":    {pod: pod(nil, ctr("app", "cpu=0,memory=0", "cpu=0,memory=0"))},
		"ephemeral-storage, hugepages and GPUs are never required": {
			pod: pod(nil, ctr("app", all+",ephemeral-storage=1Gi", all)),
		},
		"containers are named in order, joined by commas, each once": {
			pod:  pod([]corev1.Container{ctr("init", "cpu=1", all)}, ctr("b", all, all), ctr("a", "memory=1Gi", all)),
			want: []UnsetResource{{"requests.cpu", "a"}, {"requests.memory", "init"}},
		},
		"init containers and sidecars count": {
			pod: pod([]corev1.Container{ctr("init", all, ""), sidecar}, ctr("app", all, all)),
			want: []UnsetResource{
				{"limits.cpu", "init,proxy"}, {"limits.memory", "init,proxy"}, {"requests.memory", "proxy"},
			},
		},
		"pod-level resources skip the rule, as in ResourceQuota": {pod: podLevel},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, UnsetResources(tc.pod)); diff != "" {
				t.Errorf("UnsetResources (-want +got):\n%s", diff)
			}
		})
	}
}

// A pod that leaves unset what a covering budget tracks is held (never admitted charged
// nothing for it), parked in the budget's never-fit list, with ResourceQuota's words;
// it is admitted once no covering budget tracks it any more.
func TestPodThatLeavesTrackedResourcesUnsetIsHeld(t *testing.T) {
	key := BudgetKey{Namespace: "team-a", Name: "team-a"}
	parent := BudgetKey{Name: "org"}
	tests := map[string]struct {
		budgets   []Budget
		pod       *podBuilder
		wantCode  ReasonCode
		wantMsg   string
		wantUnset string // in the never-fit list of team-a (or org)
		// relax is the hard that, given to the budget that holds the pod, admits it.
		relax string
	}{
		"BestEffort under requests.memory": {
			budgets:   []Budget{makeBudget("team-a", "team-a").Hard("memory=1Gi,pods=5").Obj()},
			pod:       makePod("be"),
			wantCode:  CodeMustSpecify,
			wantMsg:   "must specify requests.memory for: main (Budget team-a/team-a tracks it; as in ResourceQuota, every container must set what a budget tracks): set it, or give the namespace a LimitRange with defaults, and recreate the pod",
			wantUnset: "must specify requests.memory for: main",
			relax:     "pods=5",
		},
		"no limits under limits.cpu and limits.memory": {
			budgets:   []Budget{makeBudget("team-a", "team-a").Hard("cpu=1,memory=1Gi,limits.cpu=1,limits.memory=1Gi").Obj()},
			pod:       makePod("nolimits").Req("cpu=100m,memory=100Mi"),
			wantCode:  CodeMustSpecify,
			wantMsg:   "must specify limits.cpu for: main; limits.memory for: main (Budget team-a/team-a tracks them; as in ResourceQuota, every container must set what a budget tracks): set them, or give the namespace a LimitRange with defaults, and recreate the pod",
			wantUnset: "must specify limits.cpu for: main; limits.memory for: main",
			relax:     "cpu=1,memory=1Gi",
		},
		"a parent that tracks what the child does not": {
			budgets: []Budget{
				makeBudget("", "org").Hard("limits.cpu=10").Obj(),
				makeBudget("team-a", "team-a").Hard("cpu=4").Parent("org").Obj(),
			},
			pod:       makePod("nolimits").Req("cpu=1"),
			wantCode:  CodeMustSpecify,
			wantUnset: "must specify limits.cpu for: main",
			relax:     "cpu=10",
		},
		"what no budget tracks is not required": {
			budgets:  []Budget{makeBudget("team-a", "team-a").Hard("cpu=4,pods=5").Obj()},
			pod:      makePod("nomemory").Req("cpu=1"),
			wantCode: "",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			q, _ := newTestQueue()
			q.SetNamespace("team-a", map[string]string{v1alpha1.EnabledLabel: "true"})
			for _, b := range tc.budgets {
				q.UpsertBudget(b)
			}
			pod := tc.pod.Pod()
			q.UpsertPod(pod)
			got := admitNames(q)
			if tc.wantCode == "" {
				if diff := cmp.Diff([]string{pod.Name}, got); diff != "" {
					t.Fatalf("admitted (-want +got):\n%s", diff)
				}
				return
			}
			if len(got) > 0 {
				t.Fatalf("admitted %v, want it held", got)
			}
			r, _ := q.Reader().WaitReason(pod.UID)
			if r.Code != tc.wantCode || (tc.wantMsg != "" && r.Message != tc.wantMsg) {
				t.Errorf("WaitReason = %s: %s, want %s: %s", r.Code, r.Message, tc.wantCode, tc.wantMsg)
			}
			holder := key
			if len(tc.budgets) > 1 {
				holder = parent
			}
			st := mustStatus(t, q, holder)
			if len(st.NeverFit) != 1 || st.NeverFit[0].Unset != tc.wantUnset || st.NeverFit[0].Pod.Name != pod.Name {
				t.Errorf("%s NeverFit = %+v, want %s with %q", holder.Describe(), st.NeverFit, pod.Name, tc.wantUnset)
			}
			if st.GatedPods != 1 || st.AdmittedPods != 0 {
				t.Errorf("%s gated %d, admitted %d; want 1 and 0", holder.Describe(), st.GatedPods, st.AdmittedPods)
			}

			// The budget stops tracking it: the pod is woken and admitted.
			for _, b := range tc.budgets {
				if b.Key == holder {
					b.Hard = parseList(tc.relax)
					q.UpsertBudget(b)
				}
			}
			if diff := cmp.Diff([]string{pod.Name}, admitNames(q)); diff != "" {
				t.Errorf("after hard stops tracking it, admitted (-want +got):\n%s", diff)
			}
			if st := mustStatus(t, q, holder); len(st.NeverFit) != 0 {
				t.Errorf("%s NeverFit after admission = %+v", holder.Describe(), st.NeverFit)
			}
		})
	}
}

// A budget that starts tracking a value parks the pods waiting in it that leave it
// unset, even those that were queued for capacity; pods that set it stay queued.
func TestBudgetThatStartsTrackingParksThePodsThatLeaveItUnset(t *testing.T) {
	q, _ := newTestQueue()
	q.SetNamespace("team-a", map[string]string{v1alpha1.EnabledLabel: "true"})
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=1").Obj())
	q.UpsertPod(makePod("running").Ungated().Req("cpu=1").Pod())
	q.UpsertPod(makePod("nomem").Created(1).Req("cpu=1").Pod())
	q.UpsertPod(makePod("withmem").Created(2).Req("cpu=1,memory=1Gi").Pod())
	if got := admitNames(q); len(got) > 0 {
		t.Fatalf("admitted %v with no room", got)
	}
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=1,memory=4Gi").Obj())
	admitNames(q)
	for name, want := range map[string]ReasonCode{"nomem": CodeMustSpecify, "withmem": CodeInsufficient} {
		if code, _ := q.Reader().WaitCode(makePod(name).Pod().UID); code != want {
			t.Errorf("%s waits with %s, want %s", name, code, want)
		}
	}
}

// A group is all or nothing: one member that leaves a tracked value unset holds the
// whole group, each member saying which member it waits for; the group goes once the
// budget stops tracking it.
func TestGroupMemberThatLeavesTrackedResourcesUnsetHoldsTheGroup(t *testing.T) {
	q, _ := newTestQueue()
	q.SetNamespace("team-a", map[string]string{v1alpha1.EnabledLabel: "true"})
	q.UpsertBudget(makeBudget("team-a", "b").Hard("memory=4Gi,pods=4").Obj())
	q.UpsertPod(makePod("a").Group("g", 2).Req("memory=1Gi").Pod())
	q.UpsertPod(makePod("b").Group("g", 2).Created(1).Pod())
	if got := admitNames(q); len(got) > 0 {
		t.Fatalf("admitted %v, want the group held", got)
	}
	for _, name := range []string{"a", "b"} {
		r, _ := q.Reader().WaitReason(makePod(name).Pod().UID)
		want := "group g: pod b must specify requests.memory for: main (Budget team-a/b tracks it; as in ResourceQuota, every container must set what a budget tracks): set it, or give the namespace a LimitRange with defaults, and recreate the pod"
		if r.Code != CodeMustSpecify || r.Message != want {
			t.Errorf("%s waits with %s: %s\nwant %s: %s", name, r.Code, r.Message, CodeMustSpecify, want)
		}
	}
	if st := mustStatus(t, q, BudgetKey{Namespace: "team-a", Name: "b"}); len(st.NeverFit) != 2 || st.NeverFit[0].Member != "b" {
		t.Errorf("NeverFit = %+v, want both members, for member b", st.NeverFit)
	}
	q.UpsertBudget(makeBudget("team-a", "b").Hard("pods=4").Obj())
	if diff := cmp.Diff([]string{"a", "b"}, admitNames(q)); diff != "" {
		t.Errorf("admitted (-want +got):\n%s", diff)
	}
}
