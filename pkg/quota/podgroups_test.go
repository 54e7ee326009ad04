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

// A CompositePodGroup's gang of minGroupCount 2 over three PodGroups (gangs of 2) is
// admitted once two of them are complete and fit together: only their pods, never a
// PodGroup's pods short of its minCount; the third PodGroup follows once complete.
// A parent that does not exist holds its PodGroups' pods.
func TestCompositePodGroupsAdmitCompleteChildren(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=5").Obj())
	root := CompositePodGroupInfo{Name: "trainer", Exists: true, MinGroupCount: 2}
	child := PodGroupInfo{Exists: true, MinCount: 2, Parents: []CompositePodGroupInfo{root}}
	member := func(name, pg string, info PodGroupInfo) Pod {
		return ResolvePodGroup(makePod(name).Req("cpu=1").PodGroup(pg).Pod(), info)
	}
	q.UpsertPod(member("a-0", "a", PodGroupInfo{Exists: true, MinCount: 2, Parents: []CompositePodGroupInfo{{Name: "trainer"}}}))
	admitNames(q)
	if r := waitOf(t, q, "a-0"); r.Code != CodePodGroupPending || !strings.Contains(r.Message, "CompositePodGroup trainer (above PodGroup a), which does not exist yet") {
		t.Errorf("a-0 waits with %+v", r)
	}
	q.UpsertPod(member("a-0", "a", child))
	q.UpsertPod(member("a-1", "a", child))
	q.UpsertPod(member("b-0", "b", child))
	q.UpsertPod(member("c-0", "c", child))
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v with one complete child of the two the gang needs", got)
	}
	if r := waitOf(t, q, "b-0"); r.Code != CodeGroupIncomplete || !strings.Contains(r.Message, CompositePodGroupPrefix+"trainer: 1 of 2 child groups complete") {
		t.Errorf("b-0 waits with %+v", r)
	}
	// a and b together need 4 cpus (c-0, whose PodGroup is not complete, is not
	// counted): under a hard of 3 the gang can never fit.
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=3").Obj())
	q.UpsertPod(member("b-1", "b", child))
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v over the hard", got)
	}
	if r := waitOf(t, q, "b-1"); r.Code != CodeNeverFits || !strings.Contains(r.Message, "requests.cpu: 4 requested, more than the 3 hard") {
		t.Errorf("b-1 waits with %+v", r)
	}
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=5").Obj())
	got := admitNames(q)
	slices.Sort(got)
	if !slices.Equal(got, []string{"a-0", "a-1", "b-0", "b-1"}) {
		t.Fatalf("admitted %v, want the complete PodGroups a and b and not c's lone pod", got)
	}
	if r := waitOf(t, q, "c-0"); r.Code != CodeGroupPartIncomplete || !strings.Contains(r.Message, "PodGroup/c: 1 of the 2 pods its gang needs ready") {
		t.Errorf("c-0 waits with %+v", r)
	}
	// c completes, but only one cpu is left: it waits for room, whole.
	q.UpsertPod(member("c-1", "c", child))
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v, over the budget", got)
	}
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=6").Obj())
	got = admitNames(q)
	slices.Sort(got)
	if !slices.Equal(got, []string{"c-0", "c-1"}) {
		t.Fatalf("admitted %v once there is room, want PodGroup c whole", got)
	}
}

// A CompositePodGroup that is no gang between a gang root and its PodGroups counts as
// complete with one complete child; a gang root above basic PodGroups needs
// minGroupCount of them with a pod each. A root that is no gang groups nothing
// itself: its PodGroups are gangs of their own.
func TestNestedCompositePodGroups(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=10").Obj())
	top := CompositePodGroupInfo{Name: "top", Exists: true, MinGroupCount: 2}
	loose := func(name string) CompositePodGroupInfo { return CompositePodGroupInfo{Name: name, Exists: true} }
	pod := func(name, pg string, info PodGroupInfo) Pod {
		return ResolvePodGroup(makePod(name).Req("cpu=1").PodGroup(pg).Pod(), info)
	}
	// top (gang of 2) > mid-x, mid-y (basic) > PodGroups x, y (basic).
	x := PodGroupInfo{Exists: true, Parents: []CompositePodGroupInfo{loose("mid-x"), top}}
	y := PodGroupInfo{Exists: true, Parents: []CompositePodGroupInfo{loose("mid-y"), top}}
	p := pod("x-0", "x", x)
	if !slices.Equal(p.GroupParts, []GroupPart{{CompositePodGroupPrefix + "mid-x", 1}, {PodGroupPrefix + "x", 1}}) || p.Group != CompositePodGroupPrefix+"top" || p.GroupSize != 2 {
		t.Fatalf("x-0 resolved to group %q size %d parts %v", p.Group, p.GroupSize, p.GroupParts)
	}
	q.UpsertPod(p)
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v with one of top's two children", got)
	}
	q.UpsertPod(pod("y-0", "y", y))
	got := admitNames(q)
	slices.Sort(got)
	if !slices.Equal(got, []string{"x-0", "y-0"}) {
		t.Fatalf("admitted %v, want x-0 and y-0 together", got)
	}

	// A basic root: each gang PodGroup below it is its own group.
	z := PodGroupInfo{Exists: true, MinCount: 2, Parents: []CompositePodGroupInfo{loose("free")}}
	if p := pod("z-0", "z", z); p.Group != PodGroupPrefix+"z" || p.GroupSize != 2 || p.GroupParts != nil {
		t.Fatalf("z-0 resolved to group %q size %d parts %v", p.Group, p.GroupSize, p.GroupParts)
	}
	q.UpsertPod(pod("z-0", "z", z))
	q.UpsertPod(pod("z-1", "z", z))
	got = admitNames(q)
	slices.Sort(got)
	if !slices.Equal(got, []string{"z-0", "z-1"}) {
		t.Fatalf("admitted %v, want z's gang", got)
	}
	// A layout the manager refuses holds the pod.
	if p := pod("bad", "w", PodGroupInfo{Exists: true, Problem: "its CompositePodGroups form a cycle"}); p.PodGroup.Problem == "" {
		t.Fatalf("a PodGroup with a problem does not hold its pod: %+v", p.PodGroup)
	}
}

// A gang whose only covered member waits in a PodGroup that is not complete, while a
// complete PodGroup's members are covered by no budget: no budget's queue holds a
// member that may go (the covered one is parked by its part), so the complete part is
// admitted at once, as a group no budget covers is, and the incomplete part waits.
// And when the only covered member of the part that goes stops being covered, the
// part left is admitted the same way. (Seed 5094 of TestRandomizedAdmission stranded
// such a pod "queued, not evaluated yet".) Uncovered pods are let go here, as the
// manager's --hold-uncovered=false does.
func TestCompositeGangWhosePartsThatGoAreUncovered(t *testing.T) {
	q, _ := newTestQueue(WithHoldUncovered(false))
	q.UpsertBudget(makeBudget("team-a", "b").Selector("app", "web").Hard("cpu=200").Obj())
	root := CompositePodGroupInfo{Name: "cpg", Exists: true, MinGroupCount: 1}
	member := func(name, pg string, minCount int, app string) Pod {
		b := makePod(name).Req("cpu=1").PodGroup(pg)
		if app != "" {
			b = b.Label("app", app)
		}
		return ResolvePodGroup(b.Pod(), PodGroupInfo{Exists: true, MinCount: minCount, Parents: []CompositePodGroupInfo{root}})
	}
	q.UpsertPod(member("covered-0", "c", 2, "web")) // PodGroup c needs 2: incomplete
	q.UpsertPod(member("loose-0", "b", 1, ""))      // PodGroup b needs 1: complete, no budget covers it
	if got := admitNames(q); !slices.Equal(got, []string{"loose-0"}) {
		t.Fatalf("admitted %v, want PodGroup b's uncovered pod at once", got)
	}
	if r := waitOf(t, q, "covered-0"); r.Code != CodeGroupPartIncomplete {
		t.Errorf("covered-0 waits with %+v, want its PodGroup incomplete", r)
	}

	// A second gang: its part that goes has one covered member, which then loses its
	// label; another covered member waits in a part that does not go.
	root = CompositePodGroupInfo{Name: "cpg2", Exists: true, MinGroupCount: 1}
	q.UpsertPod(member("go-web", "g", 2, "web"))
	q.UpsertPod(member("go-loose", "g", 2, ""))
	q.UpsertPod(member("stall-web", "s", 2, "web"))
	q.UpsertBudget(makeBudget("team-a", "b").Selector("app", "web").Hard("cpu=0").Obj())
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v with no room", got)
	}
	q.UpsertPod(member("go-web", "g", 2, "api"))
	got := admitNames(q)
	slices.Sort(got)
	if !slices.Equal(got, []string{"go-loose", "go-web"}) {
		t.Fatalf("admitted %v, want PodGroup g, covered by no budget now", got)
	}
	if r := waitOf(t, q, "stall-web"); r.Code != CodeGroupPartIncomplete {
		t.Errorf("stall-web waits with %+v, want its PodGroup incomplete", r)
	}
}
