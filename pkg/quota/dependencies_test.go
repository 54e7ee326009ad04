package quota

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota/depend"
)

// states is what a test's cluster holds of the objects pods wait for.
type states map[depend.Dependency]depend.Status

func (s states) status(d depend.Dependency) depend.Status {
	if st, ok := s[d]; ok {
		return st
	}
	return depend.Missing(d)
}

// A pod that waits for a Job is held, uncharged, until it is resolved and the Job
// completed; the pods behind it in a full budget are not blocked by it meanwhile.
func TestDependencyHoldsUntilReady(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=2").Obj())
	after := makePod("after").Req("cpu=1").Created(1).Annotation(v1alpha1.WaitForAnnotation, "job/prepare, pvc/scratch")
	q.UpsertPod(after.Pod())
	q.UpsertPod(makePod("other").Req("cpu=1").Created(2).Pod())

	if got := admitNames(q); !slices.Equal(got, []string{"other"}) {
		t.Fatalf("admitted %v, want only other: after's dependencies were never checked", got)
	}
	if r := waitOf(t, q, "after"); r.Code != CodeDependencyPending || r.Message != "waiting for its dependencies to be checked" {
		t.Errorf("after waits with %+v before it is resolved", r)
	}
	st := states{}
	q.UpsertPod(ResolveDependencies(after.Pod(), st.status, ""))
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v, want none: Job prepare does not exist", got)
	}
	if r := waitOf(t, q, "after"); r.Code != CodeDependencyPending || r.Message != "waiting for Job prepare, which does not exist yet" {
		t.Errorf("after waits with %+v", r)
	}
	st[depend.Dependency{Kind: depend.Job, Name: "prepare"}] = depend.Status{State: depend.Ready}
	st[depend.Dependency{Kind: depend.PersistentVolumeClaim, Name: "scratch"}] = depend.Status{State: depend.Failed, Message: "PersistentVolumeClaim scratch lost its volume"}
	q.UpsertPod(ResolveDependencies(after.Pod(), st.status, ""))
	admitNames(q)
	if r := waitOf(t, q, "after"); r.Code != CodeDependencyFailed || r.Message != "PersistentVolumeClaim scratch lost its volume" {
		t.Errorf("after waits with %+v, want DependencyFailed", r)
	}
	st[depend.Dependency{Kind: depend.PersistentVolumeClaim, Name: "scratch"}] = depend.Status{State: depend.Ready}
	q.UpsertPod(ResolveDependencies(after.Pod(), st.status, ""))
	if got := admitNames(q); !slices.Equal(got, []string{"after"}) {
		t.Fatalf("admitted %v once both are ready, want after", got)
	}
}

// A cycle is reported; an annotation that does not parse holds the pod with why.
func TestDependencyCycleAndInvalid(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=4").Obj())
	a := makePod("a").Req("cpu=1").Annotation(v1alpha1.WaitForAnnotation, "job/b")
	q.UpsertPod(ResolveDependencies(a.Pod(), states{}.status, "Job a waits for Job b, which waits for Job a: a dependency cycle, none of them can start"))
	q.UpsertPod(makePod("bad").Req("cpu=1").Annotation(v1alpha1.WaitForAnnotation, "other/job/x").Pod())
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v", got)
	}
	if r := waitOf(t, q, "a"); r.Code != CodeDependencyCycle || !strings.Contains(r.Message, "dependency cycle") {
		t.Errorf("a waits with %+v", r)
	}
	r := waitOf(t, q, "bad")
	if r.Code != CodeDependencyInvalid || !strings.Contains(r.Message, v1alpha1.WaitForAnnotation+`: "other/job/x" is not kind/name`) ||
		!strings.HasSuffix(r.Message, "it waits until the annotation is fixed") {
		t.Errorf("bad waits with %+v", r)
	}
	// Resolving does not make a bad annotation good.
	q.UpsertPod(ResolveDependencies(makePod("bad").Req("cpu=1").Annotation(v1alpha1.WaitForAnnotation, "other/job/x").Pod(), states{}.status, ""))
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v after resolving an invalid annotation", got)
	}
}

// A group is admitted only once every member's dependencies are ready: the others wait
// for it, never admitted without it.
func TestGroupWaitsForItsMembersDependencies(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=4").Obj())
	q.UpsertPod(makePod("g-0").Req("cpu=1").Group("g", 2).Pod())
	waiter := makePod("g-1").Req("cpu=1").Group("g", 2).Annotation(v1alpha1.WaitForAnnotation, "secret/creds")
	q.UpsertPod(ResolveDependencies(waiter.Pod(), states{}.status, ""))
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v, want none: g-1 waits for Secret creds", got)
	}
	if r := waitOf(t, q, "g-1"); r.Code != CodeDependencyPending || !strings.HasSuffix(r.Message, ": waiting for Secret creds, which does not exist yet") {
		t.Errorf("g-1 waits with %+v", r)
	}
	if r := waitOf(t, q, "g-0"); r.Code != CodeDependencyPending || !strings.Contains(r.Message, "member g-1: waiting for Secret creds") {
		t.Errorf("g-0 waits with %+v, want it to name the member that waits", r)
	}
	q.UpsertPod(ResolveDependencies(waiter.Pod(), states{{Kind: depend.Secret, Name: "creds"}: depend.Exists()}.status, ""))
	got := admitNames(q)
	slices.Sort(got)
	if !slices.Equal(got, []string{"g-0", "g-1"}) {
		t.Fatalf("admitted %v once the Secret exists, want the whole group", got)
	}
}

// WaitingByCode counts the gated pods by why they wait, as WaitReason gives it.
func TestWaitingByCode(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=1").Obj())
	q.UpsertPod(makePod("runs").Req("cpu=1").Ungated().Pod())
	q.UpsertPod(makePod("waits").Req("cpu=1").Pod())
	q.UpsertPod(ResolveDependencies(makePod("after").Req("cpu=1").Annotation(v1alpha1.WaitForAnnotation, "job/x").Pod(), states{}.status, ""))
	q.UpsertPod(makePod("gang").Req("cpu=1").PodGroup("g").Pod())
	admitNames(q)
	want := map[ReasonCode]int{CodeInsufficient: 1, CodeDependencyPending: 1, CodePodGroupPending: 1}
	if got := q.Reader().WaitingByCode(); !maps.Equal(got, want) {
		t.Errorf("WaitingByCode = %v, want %v", got, want)
	}
	for _, name := range []string{"waits", "after", "gang"} {
		if r := waitOf(t, q, name); want[r.Code] == 0 {
			t.Errorf("%s waits with %s, which WaitingByCode does not count", name, r.Code)
		}
	}
}
