package quota

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// TestWaitReasons: the one canonical sentence for each reason a pod waits.
func TestWaitReasons(t *testing.T) {
	tests := map[string]struct {
		budgets []Budget
		pods    []Pod
		ask     string
		want    Reason
	}{
		"insufficient quota, with free and position": {
			budgets: []Budget{makeBudget("team-a", "team-a").Hard("cpu=2500m").Obj()},
			pods: []Pod{
				makePod("p1").Created(1).Req("cpu=2").Pod(),
				makePod("p2").Created(2).Req("cpu=2").Pod(),
				makePod("p3").Created(3).Req("cpu=2").Pod(),
			},
			ask:  "p3",
			want: Reason{Code: CodeInsufficient, Message: "requests.cpu: 2 requested, 500m free in Budget team-a/team-a; position 2 of 2"},
		},
		"closed budget": {
			budgets: []Budget{makeBudget("team-a", "team-a").Hard("cpu=2").Closed().Obj()},
			pods:    []Pod{makePod("p").Req("cpu=1").Pod()},
			ask:     "p",
			want:    Reason{Code: CodeBudgetClosed, Message: "Budget team-a/team-a is Closed"},
		},
		"closing parent": {
			budgets: []Budget{
				makeBudget("", "ml").Hard("cpu=2").Closed().Obj(),
				makeBudget("team-a", "team-a").Hard("cpu=2").Parent("ml").Obj(),
			},
			pods: []Pod{
				makePod("running").Req("cpu=1").Ungated().Pod(),
				makePod("p").Req("cpu=1").Pod(),
			},
			ask:  "p",
			want: Reason{Code: CodeBudgetClosed, Message: "ClusterBudget ml is Closing (parent of Budget team-a/team-a)"},
		},
		"behind a StrictFIFO head": {
			budgets: []Budget{makeBudget("team-a", "team-a").Hard("cpu=2").Strict().Obj()},
			pods: []Pod{
				makePod("running").Req("cpu=1").Ungated().Pod(),
				makePod("head").Created(1).Req("cpu=2").Pod(),
				makePod("p").Created(2).Req("cpu=1").Pod(),
			},
			ask:  "p",
			want: Reason{Code: CodeBehindHead, Message: "behind pod team-a/head in StrictFIFO Budget team-a/team-a; position 2 of 2"},
		},
		"behind a StrictFIFO head of another namespace: not named": {
			budgets: []Budget{makeBudget("", "ml").Hard("cpu=2").Strict().Namespaces(labels.Everything()).Obj()},
			pods: []Pod{
				makePod("running").NS("team-c").Req("cpu=1").Ungated().Pod(),
				makePod("secret-project-x-trainer").NS("team-b").Created(1).Priority(5).Req("cpu=2").Pod(),
				makePod("p").Created(2).Req("cpu=1").Pod(),
			},
			ask:  "p",
			want: Reason{Code: CodeBehindHead, Message: "behind a pod of higher priority in another namespace in StrictFIFO ClusterBudget ml; position 2 of 2"},
		},
		"behind a StrictFIFO head of another namespace, same priority": {
			budgets: []Budget{makeBudget("", "ml").Hard("cpu=2").Strict().Namespaces(labels.Everything()).Obj()},
			pods: []Pod{
				makePod("running").NS("team-c").Req("cpu=1").Ungated().Pod(),
				makePod("secret-project-x-trainer").NS("team-b").Created(1).Req("cpu=2").Pod(),
				makePod("p").Created(2).Req("cpu=1").Pod(),
			},
			ask:  "p",
			want: Reason{Code: CodeBehindHead, Message: "behind a pod of the same priority in another namespace in StrictFIFO ClusterBudget ml; position 2 of 2"},
		},
		"not evaluated yet": {
			budgets: []Budget{makeBudget("team-a", "team-a").Hard("cpu=2").Obj()},
			pods:    []Pod{makePod("p").Req("cpu=1").Pod()},
			ask:     "p",
			want:    Reason{Code: CodeQueued, Message: "queued, not evaluated yet; position 1 of 1 in Budget team-a/team-a"},
		},
		"never fits": {
			budgets: []Budget{makeBudget("team-a", "team-a").Hard("nvidia.com/gpu=4").Obj()},
			pods:    []Pod{makePod("p").Req("nvidia.com/gpu=8").Pod()},
			ask:     "p",
			want:    Reason{Code: CodeNeverFits, Message: "requests.nvidia.com/gpu: 8 requested, more than the 4 hard of Budget team-a/team-a: it can never fit"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			q, _ := newTestQueue()
			for _, b := range tc.budgets {
				q.UpsertBudget(b)
			}
			for _, p := range tc.pods {
				q.UpsertPod(p)
			}
			if tc.want.Code != CodeQueued {
				admitNames(q)
			}
			got, ok := q.Reader().WaitReason(types.UID(tc.ask))
			if !ok {
				t.Fatalf("pod %s does not wait", tc.ask)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("WaitReason (-want +got):\n%s", diff)
			}
			if code, _ := q.Reader().WaitCode(types.UID(tc.ask)); code != tc.want.Code {
				t.Errorf("WaitCode = %q, want %q", code, tc.want.Code)
			}
		})
	}
}

// TestUncoveredPods: held by default until a budget covers them; admitted at once with
// WithHoldUncovered(false).
func TestUncoveredPods(t *testing.T) {
	q, _ := newTestQueue(WithHoldUncovered(false))
	q.UpsertPod(makePod("p").Pod())
	adm := q.Admit()
	want := []Admission{{
		Pod:     PodRef{UID: "p", Namespace: "team-a", Name: "p"},
		Reason:  Reason{Code: CodeNoBudget, Message: "no Budget or ClusterBudget covers it"},
		Created: t0,
	}}
	if diff := cmp.Diff(want, adm, cmpopts.IgnoreUnexported(Admission{})); diff != "" {
		t.Errorf("WithHoldUncovered(false) (-want +got):\n%s", diff)
	}

	held, _ := newTestQueue()
	held.UpsertPod(makePod("p").Req("cpu=1").Pod())
	if got := admitNames(held); len(got) != 0 {
		t.Fatalf("held queue admitted %v", got)
	}
	r, _ := held.Reader().WaitReason("p")
	if diff := cmp.Diff(Reason{Code: CodeUncovered, Message: "no Budget or ClusterBudget covers it, and uncovered pods are held"}, r); diff != "" {
		t.Errorf("wait reason (-want +got):\n%s", diff)
	}
	if n := len(held.Reader().Snapshot().Held); n != 1 {
		t.Errorf("snapshot holds %d pods, want 1", n)
	}
	held.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=1").Obj())
	if diff := cmp.Diff([]string{"p"}, admitNames(held)); diff != "" {
		t.Errorf("once covered (-want +got):\n%s", diff)
	}
}

// TestFairShareReasonNamesNoOtherNamespace: the pod a waiting pod yields to is named
// only when it is of the same namespace; otherwise by how its priority compares.
func TestFairShareReasonNamesNoOtherNamespace(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("", "org").Hard("cpu=100").Obj())
	q.UpsertBudget(makeBudget("team-a", "a").Hard("cpu=2").Borrow("cpu=10").Parent("org").Obj())
	q.UpsertBudget(makeBudget("team-b", "b").Hard("cpu=2").Borrow("cpu=10").Parent("org").Obj())
	q.UpsertPod(makePod("x").NS("team-a").Priority(10).Req("cpu=1").Pod())
	q.UpsertPod(makePod("x2").NS("team-a").Priority(10).Req("cpu=1").Pod())
	q.UpsertPod(makePod("secret-project-x-trainer").NS("team-b").Req("cpu=1").Pod())
	org := q.topology.Lookup(BudgetKey{Name: "org"})
	for ahead, want := range map[string]string{
		"secret-project-x-trainer": "it would borrow under ClusterBudget org, and a pod of lower priority in another namespace goes first: its budget's borrowing is a smaller share of what the family lends (fair sharing)",
		"x2":                       "it would borrow under ClusterBudget org, and pod team-a/x2 goes first: its budget's borrowing is a smaller share of what the family lends (fair sharing)",
	} {
		p := q.pods.get("x")
		p.wait = waitInfo{code: CodeFairShare, budget: org, ahead: q.pods.get(types.UID(ahead)).pod.PodRef}
		got, _ := q.Reader().WaitReason("x")
		if diff := cmp.Diff(Reason{Code: CodeFairShare, Message: want}, got); diff != "" {
			t.Errorf("yielding to %s (-want +got):\n%s", ahead, diff)
		}
	}
}

// TestWaitConditions: the lasting sentence a pod's condition carries leaves out what
// moves while the reason holds (the position, the free amount, the pod ahead), and
// WaitCause stays the same while only those move.
func TestWaitConditions(t *testing.T) {
	tests := map[string]struct {
		budgets []Budget
		pods    []Pod
		ask     string
		want    Reason
	}{
		"insufficient quota": {
			budgets: []Budget{makeBudget("team-a", "team-a").Hard("cpu=2500m").Obj()},
			pods: []Pod{
				makePod("p1").Created(1).Req("cpu=2").Pod(),
				makePod("p2").Created(2).Req("cpu=2").Pod(),
			},
			ask:  "p2",
			want: Reason{Code: CodeInsufficient, Message: "requests.cpu: 2 requested, more than is free in Budget team-a/team-a"},
		},
		"behind a StrictFIFO head": {
			budgets: []Budget{makeBudget("team-a", "team-a").Hard("cpu=2").Strict().Obj()},
			pods: []Pod{
				makePod("running").Req("cpu=1").Ungated().Pod(),
				makePod("head").Created(1).Req("cpu=2").Pod(),
				makePod("p").Created(2).Req("cpu=1").Pod(),
			},
			ask:  "p",
			want: Reason{Code: CodeBehindHead, Message: "behind the head of StrictFIFO Budget team-a/team-a, which does not fit"},
		},
		"closed budget, as WaitReason says": {
			budgets: []Budget{makeBudget("team-a", "team-a").Hard("cpu=2").Closed().Obj()},
			pods:    []Pod{makePod("p").Req("cpu=1").Pod()},
			ask:     "p",
			want:    Reason{Code: CodeBudgetClosed, Message: "Budget team-a/team-a is Closed"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			q, _ := newTestQueue()
			for _, b := range tc.budgets {
				q.UpsertBudget(b)
			}
			for _, p := range tc.pods {
				q.UpsertPod(p)
			}
			admitNames(q)
			uid := types.UID(tc.ask)
			got := q.Reader().WaitConditions([]types.UID{uid})
			if diff := cmp.Diff(map[types.UID]Reason{uid: tc.want}, got); diff != "" {
				t.Errorf("WaitConditions (-want +got):\n%s", diff)
			}
			cause, ok := q.Reader().WaitCause(uid)
			if !ok || cause.Code() != tc.want.Code {
				t.Fatalf("WaitCause = %v, %v; want code %s", cause, ok, tc.want.Code)
			}
			// A pod of higher priority goes ahead: the position moves, the cause not.
			q.UpsertPod(makePod("ahead").Created(0).Priority(10).Req("cpu=1").Pod())
			admitNames(q)
			if again, _ := q.Reader().WaitCause(uid); again != cause {
				t.Errorf("WaitCause moved with the queue: %v, was %v", again, cause)
			}
		})
	}
}

// TestUncoveredReasonNamesNearBudgets: an uncovered pod's reason names the Budgets of its
// namespace and the ClusterBudgets that select its namespace, each with the label that
// differs; at most three, then how many more. A Budget of another namespace is never
// named.
func TestUncoveredReasonNamesNearBudgets(t *testing.T) {
	held := "no Budget or ClusterBudget covers it, and uncovered pods are held"
	tests := map[string]struct {
		budgets []Budget
		want    string
	}{
		"a typo in a value": {
			budgets: []Budget{
				makeBudget("team-a", "team").Hard("cpu=4").Selector("app", "train").Obj(),
				makeBudget("team-b", "other").Hard("cpu=4").Selector("app", "serve").Obj(),
			},
			want: held + ": Budget team-a/team selects app=train, the pod has app=trian",
		},
		"a label the pod lacks, and a ClusterBudget of the namespace": {
			budgets: []Budget{
				makeBudget("team-a", "gpu").Hard("cpu=4").Selector("gpu", "true").Obj(),
				makeBudget("", "org").Hard("cpu=4").Namespaces(labels.Everything()).Selector("tier", "batch").Obj(),
			},
			want: held + ": Budget team-a/gpu selects gpu=true, the pod has no label gpu; ClusterBudget org selects tier=batch, the pod has no label tier",
		},
		"at most three, then how many more": {
			budgets: []Budget{
				makeBudget("team-a", "a").Hard("cpu=4").Selector("app", "a").Obj(),
				makeBudget("team-a", "b").Hard("cpu=4").Selector("app", "b").Obj(),
				makeBudget("team-a", "c").Hard("cpu=4").Selector("app", "c").Obj(),
				makeBudget("team-a", "d").Hard("cpu=4").Selector("app", "d").Obj(),
				makeBudget("team-a", "e").Hard("cpu=4").Selector("app", "e").Obj(),
			},
			want: held + ": Budget team-a/a selects app=a, the pod has app=trian; Budget team-a/b selects app=b, the pod has app=trian; Budget team-a/c selects app=c, the pod has app=trian; and 2 more",
		},
		"no budget in the namespace": {
			budgets: []Budget{makeBudget("team-b", "other").Hard("cpu=4").Obj()},
			want:    held,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			q, _ := newTestQueue()
			q.SetNamespace("team-a", map[string]string{v1alpha1.EnabledLabel: "true"})
			for _, b := range tc.budgets {
				q.UpsertBudget(b)
			}
			q.UpsertPod(makePod("p").Label("app", "trian").Req("cpu=1").Pod())
			if got := admitNames(q); len(got) != 0 {
				t.Fatalf("admitted %v", got)
			}
			r, _ := q.Reader().WaitReason("p")
			if diff := cmp.Diff(Reason{Code: CodeUncovered, Message: tc.want}, r); diff != "" {
				t.Errorf("WaitReason (-want +got):\n%s", diff)
			}
			lasting := q.Reader().WaitConditions([]types.UID{"p"})["p"]
			if lasting != r {
				t.Errorf("the condition says %v, want what WaitReason says: %v", lasting, r)
			}
		})
	}
}
