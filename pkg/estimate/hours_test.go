package estimate

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/quota"
)

// The estimates of pods in hour budgets (spec.usageLimits; docs/budgets.md, "Hour
// budgets"). A pod that waits with UsageExhausted starts when the hours let it in, and
// the simulated core's clock decides when: a period's end, a step of decay, a rolling
// day that drops out, or the end of a pod ahead, which gives back the rest of its
// reservation. Every budget here is team-a/a, with hard cpu=4, converted from the API
// as the manager converts it (quota.BudgetFromAPI), its status.usage included.

var berlin = func() *time.Location {
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		panic(err)
	}
	return loc
}()

// midnightBerlin is when t0's Day in Europe/Berlin ends: t0 is 01:00 on 2026-01-01
// there, so 00:00 on the 2nd, 23h after t0 (not the 24h of a Day in UTC).
var midnightBerlin = time.Date(2026, 1, 2, 0, 0, 0, 0, berlin)

// hourBudget is team-a/a with hard cpu=4, usageLimits u, and status.usage st (nil: none
// written yet).
func hourBudget(u v1alpha1.UsageLimits, st *v1alpha1.UsageStatus) quota.Budget {
	return quota.BudgetFromAPI(&v1alpha1.Budget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "a"},
		Spec:       v1alpha1.BudgetSpec{Hard: podtest.ParseList("cpu=4"), UsageLimits: &u},
		Status:     v1alpha1.BudgetStatus{Usage: st},
	})
}

// cpuHoursPerDay is usageLimits of limit cpu-hours per calendar Day in Europe/Berlin.
func cpuHoursPerDay(limit string) v1alpha1.UsageLimits {
	return v1alpha1.UsageLimits{Hours: podtest.ParseList("cpu=" + limit), Period: v1alpha1.PeriodDay, TimeZone: "Europe/Berlin"}
}

// usedToday is the status.usage the manager wrote at t0 of a Day in Europe/Berlin: used
// cpu-hours so far on 2026-01-01 there.
func usedToday(used string) *v1alpha1.UsageStatus {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, berlin)
	return &v1alpha1.UsageStatus{Period: "2026-01-01", PeriodStart: metaTimePtr(start), ResetAt: metaTimePtr(midnightBerlin),
		AsOf: metav1.NewMicroTime(t0), Used: podtest.ParseList("cpu=" + used)}
}

func metaTimePtr(t time.Time) *metav1.Time { m := metav1.NewTime(t); return &m }

// maxRuntime is b declaring that it runs at most d once admitted.
func maxRuntime(b *podtest.Builder, d time.Duration) *podtest.Builder {
	return b.Annotation(v1alpha1.MaxRuntimeAnnotation, d.String())
}

// runningSinceAt is a pod that holds quota since at, as its admitted-at annotation
// says, and is expected to end d after at.
func runningSinceAt(b *podtest.Builder, at time.Time, d time.Duration) Pod {
	e := runs(d)
	e.Start = at
	return Pod{Pod: view(b.Annotation(v1alpha1.AdmittedAtAnnotation, at.Format(time.RFC3339))), Expect: e}
}

// startsOf is each waiting pod's median start as its user reads it, in Berlin, or why
// it is unknown.
func startsOf(w World, o Options) map[string]string {
	out := map[string]string{}
	for i, s := range Simulate(w, o) {
		if s.Known {
			out[w.Waiting[i].Pod.Name] = s.Median.In(berlin).Format(time.DateTime)
		} else {
			out[w.Waiting[i].Pod.Name] = string(s.Unknown)
		}
	}
	return out
}

// inBerlin is t0 + d as startsOf shows it.
func inBerlin(d time.Duration) string { return t0.Add(d).In(berlin).Format(time.DateTime) }

// managerCore are the core options of the manager that bear on hours: it writes
// status.usage every 30s while pods of an hour budget run (Options.coreOptions in
// pkg/quota/controller passes the same to every simulation).
var managerCore = []quota.Option{quota.WithUsageWriteInterval(quota.DefaultUsageWriteInterval)}

// TestSimulateHoursExhausted: a pod whose hours do not fit beside what the budget's
// status says was used today starts when the Day ends, at midnight in the budget's
// time zone, though capacity has room now. With room in the hours, or a status of a
// Day that has ended, or none, it starts now.
func TestSimulateHoursExhausted(t *testing.T) {
	next := waiting(maxRuntime(podIn("team-a", "next", 1, "cpu=1"), 2*time.Hour), runs(time.Hour)) // may use 2
	yesterday := &v1alpha1.UsageStatus{Period: "2025-12-31", PeriodStart: metaTimePtr(time.Date(2025, 12, 31, 0, 0, 0, 0, berlin)),
		AsOf: metav1.NewMicroTime(t0.Add(-2 * time.Hour)), Used: podtest.ParseList("cpu=9")}
	for name, tc := range map[string]struct {
		status *v1alpha1.UsageStatus
		want   string
	}{
		"9 of 10 used today":  {usedToday("9"), "2026-01-02 00:00:00"},
		"8 of 10 used today":  {usedToday("8"), "2026-01-01 01:00:00"},
		"no status yet":       {nil, "2026-01-01 01:00:00"},
		"9 used the day past": {yesterday, "2026-01-01 01:00:00"},
	} {
		t.Run(name, func(t *testing.T) {
			w := world([]quota.Budget{hourBudget(cpuHoursPerDay("10"), tc.status)}, nil, []Pod{next})
			if diff := cmp.Diff(map[string]string{"next": tc.want}, startsOf(w, Options{Core: managerCore})); diff != "" {
				t.Errorf("starts in Berlin (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSimulateHoursRunOut: the pod ahead reserves hours, so the next pod, which fits
// in capacity, waits: when the one ahead runs as long as its maximum it uses all it
// reserved and the next waits for the Day's end; when it ends early, the rest of its
// reservation comes back and the next starts then. What a pod uses is counted on the
// simulated clock: the pod ahead used what it ran there. The manager's core writes its
// status every 30s while pods run; the simulation's does not, or a half day of
// running would be more moments than it may take.
func TestSimulateHoursRunOut(t *testing.T) {
	h := time.Hour
	// first may use 2 cpu × 12h = 24 of 30; second 1 × 12h = 12: 24 + 12 > 30.
	for name, tc := range map[string]struct {
		first time.Duration // how long first runs
		want  map[string]string
	}{
		"first runs its 12h": {12 * h, map[string]string{"first": inBerlin(0), "second": "2026-01-02 00:00:00"}}, // 24 + 12 > 30
		"first ends at 2h":   {2 * h, map[string]string{"first": inBerlin(0), "second": inBerlin(2 * h)}},        // 4 + 12 ≤ 30
	} {
		t.Run(name, func(t *testing.T) {
			w := world([]quota.Budget{hourBudget(cpuHoursPerDay("30"), usedToday("0"))}, nil, []Pod{
				waiting(maxRuntime(podIn("team-a", "first", 1, "cpu=2"), 12*h), runs(tc.first)),
				waiting(maxRuntime(podIn("team-a", "second", 2, "cpu=1"), 12*h), runs(h)),
			})
			if diff := cmp.Diff(tc.want, startsOf(w, Options{Core: managerCore})); diff != "" {
				t.Errorf("starts in Berlin (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSimulateHoursOfRunningPods: a running pod reserves from its admission (its
// admitted-at), beside what the status says was used; what it uses from the status's
// asOf on is counted on the simulated clock, so what it used stays used once it ends.
func TestSimulateHoursOfRunningPods(t *testing.T) {
	h := time.Hour
	// r was admitted an hour before t0 at 2 cpu for at most 4h: the 2 used written at t0
	// are its hour, it reserves 6 more, and it ends 30m after t0, having used 3.
	r := runningSinceAt(maxRuntime(podIn("team-a", "r", -7200, "cpu=2"), 4*h), t0.Add(-h), 90*time.Minute)
	next := waiting(maxRuntime(podIn("team-a", "next", 1, "cpu=1"), 2*h), runs(h)) // may use 2
	for limit, want := range map[string]string{
		"10":  inBerlin(0),                // 2 + 6 + 2 ≤ 10
		"9":   inBerlin(30 * time.Minute), // 2 + 6 + 2 > 9 until r ends: 3 + 2 ≤ 9
		"4.5": "2026-01-02 00:00:00",      // 3 + 2 > 4.5 once r ended (2 + 2 would fit)
	} {
		t.Run("limit "+limit, func(t *testing.T) {
			w := world([]quota.Budget{hourBudget(cpuHoursPerDay(limit), usedToday("2"))}, []Pod{r}, []Pod{next})
			if diff := cmp.Diff(map[string]string{"next": want}, startsOf(w, Options{Core: managerCore})); diff != "" {
				t.Errorf("starts in Berlin (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSimulateHoursDecay: under halfLife, used decays, and a pod that does not fit
// starts once used + what it may use fits: with used u of 10 and a need of n, after
// log2(u/(10-n)) half-lives. The real core looks again every sixteenth of the
// half-life, at most every ten minutes; the simulation's steps grow with the simulated
// time (hours.Spec.DecayStepsGrow), so its start is late by at most one of those steps,
// and a wait of weeks fits in the moments it may take.
func TestSimulateHoursDecay(t *testing.T) {
	for name, tc := range map[string]struct {
		halfLife time.Duration
		need     float64 // cpu-hours: 1 cpu for need hours
	}{
		"half-life 1h, need 2":   {time.Hour, 2},
		"half-life 168h, need 2": {168 * time.Hour, 2}, // some 54h
		"half-life 168h, need 6": {168 * time.Hour, 6}, // some 222h: 1,300 steps of ten minutes
	} {
		t.Run(name, func(t *testing.T) {
			u := v1alpha1.UsageLimits{Hours: podtest.ParseList("cpu=10"), HalfLife: &metav1.Duration{Duration: tc.halfLife}}
			st := &v1alpha1.UsageStatus{Period: "decayed, half-life " + tc.halfLife.String(), AsOf: metav1.NewMicroTime(t0), Used: podtest.ParseList("cpu=10")}
			need := time.Duration(tc.need * float64(time.Hour))
			w := world([]quota.Budget{hourBudget(u, st)}, nil, []Pod{waiting(maxRuntime(podIn("team-a", "next", 1, "cpu=1"), need), runs(time.Hour))})
			s := Simulate(w, Options{Core: managerCore})[0]
			fits := time.Duration(math.Log2(10/(10-tc.need)) * float64(tc.halfLife))
			late := max(min(max(tc.halfLife/16, time.Second), 10*time.Minute), fits/16)
			if got := s.Median.Sub(t0); !s.Known || got < fits || got > fits+late {
				t.Errorf("next starts %v after t0 (%+v), want from %v to %v after", got, s, fits, late)
			}
		})
	}
}

// TestSimulateHoursRollingDays: under rollingDays 1, what was used on the UTC day
// before t0 counts until the end of t0's UTC day: the pod starts at the next UTC
// midnight.
func TestSimulateHoursRollingDays(t *testing.T) {
	u := v1alpha1.UsageLimits{Hours: podtest.ParseList("cpu=10"), RollingDays: 1}
	st := &v1alpha1.UsageStatus{Period: "last day", AsOf: metav1.NewMicroTime(t0), Used: podtest.ParseList("cpu=9"),
		Days: []v1alpha1.UsageDay{{Date: "2025-12-31", Used: podtest.ParseList("cpu=9")}}}
	next := waiting(maxRuntime(podIn("team-a", "next", 1, "cpu=1"), 2*time.Hour), runs(time.Hour))
	w := world([]quota.Budget{hourBudget(u, st)}, nil, []Pod{next})
	if diff := cmp.Diff(map[string]string{"next": inBerlin(24 * time.Hour)}, startsOf(w, Options{Core: managerCore})); diff != "" {
		t.Errorf("starts in Berlin (-want +got):\n%s", diff)
	}
}

// TestSimulateHoursUnknown: a pod that may use more than the budget's hours in a
// period on its own never starts (NeverFits); one whose period ends beyond what the
// simulation looks ahead starts after that (Capped), and its reason says when the
// period resets; neither is Blocked, as if nothing could bring it in.
func TestSimulateHoursUnknown(t *testing.T) {
	for name, tc := range map[string]struct {
		pod     *podtest.Builder
		status  *v1alpha1.UsageStatus
		horizon time.Duration
		want    got
	}{
		"more than a Day's hours": {maxRuntime(podIn("team-a", "next", 1, "cpu=2"), 6*time.Hour), nil, 0,
			got{Unknown: UnknownNeverFits, Reason: "more than Budget team-a/a allows in a period (10)"}},
		"the Day ends beyond the horizon": {maxRuntime(podIn("team-a", "next", 1, "cpu=1"), 2*time.Hour), usedToday("9"), time.Hour,
			got{Unknown: UnknownCapped, Reason: "the period resets at 2026-01-02T00:00:00+01:00"}},
	} {
		t.Run(name, func(t *testing.T) {
			w := world([]quota.Budget{hourBudget(cpuHoursPerDay("10"), tc.status)}, nil, []Pod{waiting(tc.pod, runs(time.Hour))})
			s := Simulate(w, Options{Core: managerCore, Horizon: tc.horizon})[0]
			if diff := cmp.Diff(tc.want, summarize(s, tc.want.Reason)); diff != "" {
				t.Errorf("start (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSupposeHours: a what-if says what the estimate says: a pod added to a budget
// whose hours a running pod has reserved waits with UsageExhausted, and starts at
// midnight in the budget's time zone.
func TestSupposeHours(t *testing.T) {
	h := time.Hour
	// r reserves 2 cpu × 4h = 8 of 10 from t0 and runs it all: 8 + 4 > 10 until the Day ends.
	r := runningSinceAt(maxRuntime(podIn("team-a", "r", -60, "cpu=2"), 4*h), t0, 4*h)
	w := world([]quota.Budget{hourBudget(cpuHoursPerDay("10"), usedToday("0"))}, []Pod{r},
		[]Pod{waiting(maxRuntime(podIn("team-a", "new", 0, "cpu=1"), 4*h), runs(h))})
	got := Suppose(w, Options{Core: managerCore}, 1, "")
	if pl := got.Placements[0]; pl.Admitted || pl.Reason.Code != quota.CodeHoursExhausted || !strings.Contains(pl.Reason.Message, "the period resets at 2026-01-02T00:00:00+01:00") {
		t.Errorf("new is placed %+v, want waiting with UsageExhausted until the period resets", pl)
	}
	if s := got.Starts[0]; !s.Known || !s.Median.Equal(midnightBerlin) {
		t.Errorf("new starts %+v, want at %v", s, midnightBerlin)
	}
}
