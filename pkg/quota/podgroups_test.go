package quota

import (
	"slices"
	"strings"
	"testing"
)

// A pod that names a PodGroup waits until the manager resolved it, and while the
// PodGroup does not exist; a gang's pods are admitted together once minCount of them
// fit, whatever quotagate.io/group says; a PodGroup that is not a gang groups nothing.
func TestPodGroupsAreGroups(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=3").Obj())
	member := func(name string) *podBuilder {
		return makePod(name).Req("cpu=1").PodGroup("gang").Group("pair", 1)
	}
	q.UpsertPod(member("m-0").Pod())
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v before its PodGroup was read", got)
	}
	if r := waitOf(t, q, "m-0"); r.Code != CodePodGroupPending || r.Message != "waiting for PodGroup gang to be read" {
		t.Errorf("m-0 waits with %+v", r)
	}
	q.UpsertPod(ResolvePodGroup(member("m-0").Pod(), PodGroupInfo{}))
	admitNames(q)
	if r := waitOf(t, q, "m-0"); r.Code != CodePodGroupPending || r.Message != "waiting for PodGroup gang, which does not exist yet" {
		t.Errorf("m-0 waits with %+v", r)
	}

	gang := PodGroupInfo{Exists: true, MinCount: 3}
	q.UpsertPod(ResolvePodGroup(member("m-0").Pod(), gang))
	q.UpsertPod(ResolvePodGroup(member("m-1").Pod(), gang))
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v with 2 of the gang's 3 (the quotagate.io/group of size 1 is ignored)", got)
	}
	if r := waitOf(t, q, "m-1"); r.Code != CodeGroupIncomplete || !strings.Contains(r.Message, PodGroupPrefix+"gang: 2 of 3 members exist") {
		t.Errorf("m-1 waits with %+v", r)
	}
	// minCount lowered to 2: the two are the gang.
	smaller := PodGroupInfo{Exists: true, MinCount: 2}
	q.UpsertPod(ResolvePodGroup(member("m-0").Pod(), smaller))
	q.UpsertPod(ResolvePodGroup(member("m-1").Pod(), smaller))
	got := admitNames(q)
	slices.Sort(got)
	if !slices.Equal(got, []string{"m-0", "m-1"}) {
		t.Fatalf("admitted %v once minCount is 2, want both", got)
	}

	// A PodGroup whose policy is not a gang: its pods go one by one.
	basic := PodGroupInfo{Exists: true}
	q.UpsertPod(ResolvePodGroup(makePod("solo").Req("cpu=1").PodGroup("loose").Pod(), basic))
	if got := admitNames(q); !slices.Equal(got, []string{"solo"}) {
		t.Fatalf("admitted %v, want solo alone", got)
	}
}
