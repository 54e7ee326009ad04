package quota

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota/hours"
)

// hourBudget is Budget team-a/b of hard cpu=10 with usageLimits u.
func hourBudget(t *testing.T, u v1alpha1.UsageLimits) Budget {
	t.Helper()
	b := makeBudget("team-a", "b").Hard("cpu=10").Obj()
	spec, problem := hours.FromAPI(&u, normalizedName)
	if problem != "" {
		t.Fatal(problem)
	}
	b.Hours = &spec
	return b
}

func sixCPUMinutes(maxRuntime time.Duration, exhaustion v1alpha1.UsageExhaustion) v1alpha1.UsageLimits {
	return v1alpha1.UsageLimits{Hours: corev1.ResourceList{"cpu": resource.MustParse("100m")}, Period: v1alpha1.PeriodDay,
		DefaultMaxRuntime: &metav1.Duration{Duration: maxRuntime}, Exhaustion: exhaustion}
}

// Six CPU-minutes a day, pods of 1 CPU for at most 2 minutes: three are admitted, the
// fourth waits with its reason in hours; it goes once two of them end early and give
// back what they did not use; the next day starts from zero.
func TestHoursHoldAndReset(t *testing.T) {
	q, clk := newTestQueue()
	q.UpsertBudget(hourBudget(t, sixCPUMinutes(2*time.Minute, "")))
	for i := range 4 {
		q.UpsertPod(makePod("p" + string(rune('0'+i))).NS("team-a").Created(i).Req("cpu=1").Pod())
	}
	if got := admitNames(q); !slices.Equal(got, []string{"p0", "p1", "p2"}) {
		t.Fatalf("admitted %v, want p0 to p2", got)
	}
	p3 := makePod("p3").NS("team-a").Pod()
	r, _ := q.Reader().WaitReason(p3.UID)
	if want := "requests.cpu: 0.1 of 0.1 resource-hours used or reserved in 2026-01-01 of Budget team-a/b; this pod may use 0.03333; the period resets at 2026-01-02T00:00:00Z"; r.Code != CodeHoursExhausted || r.Message != want {
		t.Fatalf("p3 waits with %s %q, want %s %q", r.Code, r.Message, CodeHoursExhausted, want)
	}
	clk.Step(time.Minute)
	q.UpsertPod(makePod("p0").NS("team-a").Req("cpu=1").Phase(corev1.PodSucceeded).Ungated().Pod())
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("with one CPU-minute given back, admitted %v (p3 needs two)", got)
	}
	q.UpsertPod(makePod("p1").NS("team-a").Req("cpu=1").Phase(corev1.PodSucceeded).Ungated().Pod())
	if got := admitNames(q); !slices.Equal(got, []string{"p3"}) {
		t.Fatalf("with two CPU-minutes given back, admitted %v, want p3", got)
	}
	st := mustStatus(t, q, BudgetKey{Namespace: "team-a", Name: "b"}).Usage
	// p0 and p1 used a minute each, p2 and p3 a minute and nothing: 3 used, 3 reserved.
	if st == nil || !closeTo(st.Used["requests.cpu"]*60, 3) || !closeTo(st.Reserved["requests.cpu"]*60, 3) {
		t.Fatalf("status usage %+v, want 3 CPU-minutes used and 3 reserved", st)
	}
	// The next day: what was used is forgotten; the reservations stay.
	q.UpsertPod(makePod("p4").NS("team-a").Created(4).Req("cpu=1").Pod())
	if got := admitNames(q); len(got) != 0 {
		t.Fatalf("admitted %v while the day's hours are all used or reserved", got)
	}
	clk.SetTime(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC))
	if next, ok := q.NextWakeup(); !ok || next.After(clk.Now()) {
		t.Fatalf("next wakeup %v, want the period's end %v at the latest", next, clk.Now())
	}
	if got := admitNames(q); !slices.Equal(got, []string{"p4"}) {
		t.Fatalf("on the next day admitted %v, want p4", got)
	}
}

func closeTo(a, b float64) bool { return a-b < 1e-6 && b-a < 1e-6 }

// A pod with no maximum runtime in a budget with no default waits, and says what to
// set; one whose annotation does not parse says so.
func TestHoursNoMaxRuntime(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(hourBudget(t, v1alpha1.UsageLimits{Hours: corev1.ResourceList{"cpu": resource.MustParse("1")}, Period: v1alpha1.PeriodMonth}))
	q.UpsertPod(makePod("none").NS("team-a").Req("cpu=1").Pod())
	q.UpsertPod(makePod("bad").NS("team-a").Req("cpu=1").Annotation(v1alpha1.MaxRuntimeAnnotation, "soon").Pod())
	q.UpsertPod(makePod("ok").NS("team-a").Req("cpu=1").Annotation(v1alpha1.MaxRuntimeAnnotation, "30m").Pod())
	q.UpsertPod(makePod("idle").NS("team-a").Req("cpu=0").Pod())
	if got := admitNames(q); !slices.Equal(got, []string{"idle", "ok"}) {
		t.Fatalf("admitted %v, want idle (no CPU) and ok (30m declared)", got)
	}
	for name, want := range map[string]string{
		"none": "Budget team-a/b has hours (usageLimits) and no defaultMaxRuntime, and it declares no maximum runtime: set spec.activeDeadlineSeconds or the annotation quotagate.io/max-runtime (say 2h)",
		"bad":  `Budget team-a/b has hours (usageLimits), and it: annotation quotagate.io/max-runtime="soon" is not a positive duration (say 2h or 90m)`,
	} {
		r, _ := q.Reader().WaitReason(makePod(name).NS("team-a").Pod().UID)
		if r.Code != CodeNoMaxRuntime || r.Message != want {
			t.Errorf("%s waits with %s %q, want %s %q", name, r.Code, r.Message, CodeNoMaxRuntime, want)
		}
	}
}

// Exhaustion Evict: a pod that runs past its maximum is evicted, with no preemptor;
// under Hold it runs on.
func TestHoursEvictOverrun(t *testing.T) {
	for _, policy := range []v1alpha1.UsageExhaustion{v1alpha1.ExhaustionEvict, v1alpha1.ExhaustionHold} {
		t.Run(string(policy), func(t *testing.T) {
			q, clk := newTestQueue()
			q.UpsertBudget(hourBudget(t, sixCPUMinutes(2*time.Minute, policy)))
			q.UpsertPod(makePod("p0").NS("team-a").Req("cpu=1").Pod())
			admitNames(q)
			clk.Step(119 * time.Second)
			admitNames(q)
			if got := q.Preemptions(); len(got) != 0 {
				t.Fatalf("before its maximum: %+v", got)
			}
			if next, ok := q.NextWakeup(); policy == v1alpha1.ExhaustionEvict && (!ok || next.After(t0.Add(2*time.Minute))) {
				t.Fatalf("next wakeup %v, want its maximum %v at the latest", next, t0.Add(2*time.Minute))
			}
			clk.Step(time.Second)
			admitNames(q)
			var got []string
			for _, p := range q.Preemptions() {
				if p.Reason != PreemptMaxRuntime || p.Preemptor.Name != "" || !strings.Contains(p.VictimMessage, "ran past the maximum runtime") || !q.PreemptionNeeded(p.Victim.UID) {
					t.Errorf("preemption %+v", p)
				}
				got = append(got, p.Victim.Name)
			}
			want := []string{"p0"}
			if policy == v1alpha1.ExhaustionHold {
				want = nil
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("victims (-want +got):\n%s", diff)
			}
		})
	}
}

// A budget new to the core (a manager that starts) takes up what its status held; a
// pod seen running counts from the status' asOf, not from its admission.
func TestHoursRestore(t *testing.T) {
	q, clk := newTestQueue()
	b := hourBudget(t, sixCPUMinutes(10*time.Minute, ""))
	asOf := t0.Add(-time.Minute)
	b.HoursRestore = &hours.State{AsOf: asOf, PeriodStart: t0, Used: map[corev1.ResourceName]float64{"requests.cpu": 2.0 / 60}}
	clk.SetTime(t0.Add(time.Minute)) // two minutes after the write: nothing counted twice
	q.UpsertBudget(b)
	running := makePod("r").NS("team-a").Req("cpu=1").Ungated().Annotation(v1alpha1.AdmittedAtAnnotation, t0.Add(-5*time.Minute).Format(time.RFC3339)).Pod()
	q.UpsertPod(running)
	admitNames(q)
	st := mustStatus(t, q, BudgetKey{Namespace: "team-a", Name: "b"}).Usage
	// asOf is before the period: used counts from the period's start (t0): 2 restored
	// (from this period) + 1 minute of r.
	if st == nil || !closeTo(st.Used["requests.cpu"]*60, 3) {
		t.Fatalf("usage after the restart %+v, want 3 CPU-minutes", st)
	}
}

// The maximum runtime a pod reserves hours for is fixed at its admission: the
// admission carries it (for the ungate patch's admitted-max-runtime), and a pod that
// carries that record is read with it, whatever its own annotation says since.
func TestHoursMaxRuntimeFixedAtAdmission(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(hourBudget(t, sixCPUMinutes(time.Minute, "")))
	q.UpsertPod(makePod("p").NS("team-a").Req("cpu=1").Annotation(v1alpha1.MaxRuntimeAnnotation, "3m").Pod())
	got := q.Admit()
	if len(got) != 1 || got[0].MaxRuntime != 3*time.Minute {
		t.Fatalf("admissions %+v, want p with its 3m", got)
	}
	tampered := makePod("p").NS("team-a").Req("cpu=1").Ungated().
		Annotation(v1alpha1.MaxRuntimeAnnotation, "1s").Annotation(v1alpha1.AdmittedMaxRuntimeAnnotation, "3m0s").Pod()
	if tampered.DeclaredRuntime != 3*time.Minute || tampered.RuntimeError != "" {
		t.Errorf("a pod admitted with 3m and changed to 1s reads as %v (%q), want 3m", tampered.DeclaredRuntime, tampered.RuntimeError)
	}
}
