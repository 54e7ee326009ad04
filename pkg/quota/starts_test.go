package quota

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota/window"
)

// waitOf returns why the pod waits, failing the test when the core does not hold it.
func waitOf(t *testing.T, q *AdmissionQueue, uid string) Reason {
	t.Helper()
	r, ok := q.Reader().WaitReason(types.UID(uid))
	if !ok {
		t.Fatalf("%s: not waiting", uid)
	}
	return r
}

// A not-before pod waits, uncharged, until its instant and not a nanosecond less; then
// it is admitted in its usual order, ahead of a pod created after it.
func TestNotBeforeHoldsUntilItsInstantThenKeepsItsOrder(t *testing.T) {
	q, clk := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=1").Obj())
	at := t0.Add(90 * time.Second)
	q.UpsertPod(makePod("early").Req("cpu=1").Annotation(v1alpha1.NotBeforeAnnotation, at.Format(time.RFC3339)).Created(1).Pod())
	q.UpsertPod(makePod("blocker").Req("cpu=1").Created(2).Pod())
	q.UpsertPod(makePod("later").Req("cpu=1").Created(3).Pod())

	if got := admitNames(q); !slices.Equal(got, []string{"blocker"}) {
		t.Fatalf("admitted %v at t0, want only blocker: early may not start before %s", got, at)
	}
	r := waitOf(t, q, "early")
	if r.Code != CodeStartLater || !strings.Contains(r.Message, "not before "+at.Format(time.RFC3339)) {
		t.Errorf("early waits with %+v, want StartLater naming %s", r, at)
	}
	if next, ok := q.NextWakeup(); !ok || next.After(at) {
		t.Errorf("NextWakeup = %v, %v; want at most %s, so that the manager looks again then", next, ok, at)
	}

	q.UpsertPod(makePod("blocker").Req("cpu=1").Created(2).Phase("Succeeded").Ungated().Pod())
	clk.SetTime(at.Add(-time.Nanosecond))
	if got := admitNames(q); !slices.Equal(got, []string{"later"}) {
		t.Fatalf("admitted %v 1ns before the instant, want later (early may not start yet)", got)
	}
	q.UpsertPod(makePod("later").Req("cpu=1").Created(3).Phase("Succeeded").Ungated().Pod())
	q.UpsertPod(makePod("last").Req("cpu=1").Created(4).Pod())
	clk.SetTime(at)
	if got := admitNames(q); !slices.Equal(got, []string{"early"}) {
		t.Fatalf("admitted %v at the instant, want early: created first, it goes before last", got)
	}
}

// A schedule lets a pod start only while a window is open: one still waiting for quota
// when the window closes waits for the next, even when quota frees meanwhile.
func TestStartScheduleAdmitsOnlyInsideItsWindows(t *testing.T) {
	q, clk := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=1").Obj())
	q.UpsertPod(makePod("running").Req("cpu=1").Ungated().Pod())
	// t0 is 01:00 in Berlin: the window 22:00-06:00 is open, until 05:00 UTC.
	nightly := func(b *podBuilder) *podBuilder {
		return b.Annotation(v1alpha1.StartScheduleAnnotation, "0 22 * * *").
			Annotation(v1alpha1.StartDurationAnnotation, "8h").
			Annotation(v1alpha1.StartTimeZoneAnnotation, "Europe/Berlin")
	}
	q.UpsertPod(nightly(makePod("night").Req("cpu=1")).Pod())
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v, want none: the budget is full", got)
	}
	if r := waitOf(t, q, "night"); r.Code != CodeInsufficient {
		t.Errorf("night waits with %+v inside its window, want InsufficientQuota", r)
	}

	closes := time.Date(2026, 1, 1, 5, 0, 0, 0, time.UTC)
	clk.SetTime(closes)
	q.UpsertPod(makePod("running").Req("cpu=1").Ungated().Phase("Succeeded").Pod())
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v after the window closed, want none", got)
	}
	r := waitOf(t, q, "night")
	if r.Code != CodeStartLater || !strings.Contains(r.Message, "opens 2026-01-01 22:00 CET") {
		t.Errorf("night waits with %+v, want StartLater saying the window opens 2026-01-01 22:00 CET", r)
	}
	opens := time.Date(2026, 1, 1, 21, 0, 0, 0, time.UTC)
	if next, ok := q.NextWakeup(); !ok || next.After(opens) {
		t.Errorf("NextWakeup = %v, %v; want at most %s", next, ok, opens)
	}
	clk.SetTime(opens)
	if got := admitNames(q); !slices.Equal(got, []string{"night"}) {
		t.Fatalf("admitted %v when the window opened, want night", got)
	}
}

// A budget's spec.start holds every pod it covers, a ClusterBudget's the pods of the
// budgets under it too; removing it lets them go at once.
func TestBudgetStartHoldsItsPods(t *testing.T) {
	q, _ := newTestQueue()
	until := t0.Add(time.Hour)
	hold, problem := window.NewStart(until, "", 0, "")
	if problem != nil {
		t.Fatal(problem)
	}
	q.UpsertBudget(makeBudget("", "org").Hard("cpu=10").Start(hold).Obj())
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=4").Parent("org").Obj())
	q.UpsertPod(makePod("p").Req("cpu=1").Pod())
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v, want none before the parent's start", got)
	}
	r := waitOf(t, q, "p")
	if r.Code != CodeStartLater || !strings.Contains(r.Message, "ClusterBudget org starts its pods not before") {
		t.Errorf("p waits with %+v, want StartLater naming ClusterBudget org", r)
	}
	if st := mustStatus(t, q, BudgetKey{Namespace: "team-a", Name: "b"}); !st.Used.Cpu().IsZero() {
		t.Errorf("used %v while p waits for its start, want nothing charged", st.Used)
	}
	q.UpsertBudget(makeBudget("", "org").Hard("cpu=10").Obj())
	if got := admitNames(q); !slices.Equal(got, []string{"p"}) {
		t.Fatalf("admitted %v once the start rule was removed, want p", got)
	}
}

// Start annotations that do not parse hold the pod, saying which and why, until fixed;
// a pod no budget covers waits for its start too.
func TestStartAnnotationsThatDoNotParseHoldThePod(t *testing.T) {
	q, clk := newTestQueue(WithHoldUncovered(false))
	for _, tc := range []struct {
		name, key, value, want string
	}{
		{"bad-time", v1alpha1.NotBeforeAnnotation, "tomorrow", "is not an RFC 3339 time"},
		{"bad-zone", v1alpha1.StartTimeZoneAnnotation, "Mars/Olympus", "Mars/Olympus"},
		{"no-duration", v1alpha1.StartScheduleAnnotation, "0 22 * * *", "needs " + v1alpha1.StartDurationAnnotation},
	} {
		b := makePod(tc.name).Req("cpu=1").Annotation(tc.key, tc.value)
		if tc.name == "bad-zone" {
			b = b.Annotation(v1alpha1.StartScheduleAnnotation, "0 22 * * *").Annotation(v1alpha1.StartDurationAnnotation, "1h")
		}
		q.UpsertPod(b.Pod())
		r := waitOf(t, q, tc.name)
		if r.Code != CodeStartInvalid || !strings.Contains(r.Message, tc.want) {
			t.Errorf("%s waits with %+v, want InvalidStartRule saying %q", tc.name, r, tc.want)
		}
	}
	later := t0.Add(time.Minute)
	q.UpsertPod(makePod("uncovered").Req("cpu=1").Annotation(v1alpha1.NotBeforeAnnotation, later.Format(time.RFC3339)).Pod())
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v, want none: every pod waits for its start", got)
	}
	q.UpsertPod(makePod("bad-time").Req("cpu=1").RV(2).Annotation(v1alpha1.NotBeforeAnnotation, t0.Format(time.RFC3339)).Pod())
	if got := admitNames(q); !slices.Equal(got, []string{"bad-time"}) {
		t.Fatalf("admitted %v after bad-time's annotation was fixed, want bad-time", got)
	}
	clk.SetTime(later)
	if got := admitNames(q); !slices.Equal(got, []string{"uncovered"}) {
		t.Fatalf("admitted %v at uncovered's start, want it", got)
	}
}

// A group waits for the start of every gated member, and is then admitted whole.
func TestGroupWaitsForItsLatestMember(t *testing.T) {
	q, clk := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=4").Obj())
	at := t0.Add(time.Minute)
	q.UpsertPod(makePod("g-0").Req("cpu=1").Group("g", 3).Pod())
	q.UpsertPod(makePod("g-1").Req("cpu=1").Group("g", 3).Annotation(v1alpha1.NotBeforeAnnotation, at.Format(time.RFC3339)).Pod())
	q.UpsertPod(makePod("g-2").Req("cpu=1").Group("g", 3).Pod())
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v, want none: g-1 may not start yet", got)
	}
	r := waitOf(t, q, "g-0")
	if r.Code != CodeStartLater || !strings.Contains(r.Message, "member g-1") {
		t.Errorf("g-0 waits with %+v, want StartLater naming member g-1", r)
	}
	clk.SetTime(at)
	got := admitNames(q)
	slices.Sort(got)
	if !slices.Equal(got, []string{"g-0", "g-1", "g-2"}) {
		t.Fatalf("admitted %v at g-1's start, want the whole group", got)
	}
}

// Deleted pods leave no start record behind, however far their start: a tenant who
// creates and deletes them costs the core nothing that lasts.
func TestDeletedPodsLeaveNoStartRecord(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "b").Hard("cpu=1").Obj())
	for i := range 50 {
		name := "p-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		q.UpsertPod(makePod(name).Req("cpu=1").Annotation(v1alpha1.NotBeforeAnnotation, "9999-12-31T23:59:59Z").Pod())
		q.DeletePod(types.UID(name))
	}
	if n := len(q.place.starts); n != 0 || q.place.startDue.Len() != 0 {
		t.Errorf("%d start records and %d timers after every pod was deleted, want none", n, q.place.startDue.Len())
	}
	if _, ok := q.NextWakeup(); ok {
		t.Errorf("NextWakeup is set with no pod left to wake")
	}
}
