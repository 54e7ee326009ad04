package hours

import (
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

const cpu corev1.ResourceName = "requests.cpu"

func same(r corev1.ResourceName) corev1.ResourceName {
	if r == "cpu" {
		return cpu
	}
	return r
}

func spec(t *testing.T, u v1alpha1.UsageLimits) Spec {
	t.Helper()
	s, problem := FromAPI(&u, same)
	if problem != "" {
		t.Fatalf("FromAPI(%+v): %s", u, problem)
	}
	return s
}

func hoursOf(q string) corev1.ResourceList { return corev1.ResourceList{"cpu": resource.MustParse(q)} }

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9*math.Max(1, math.Abs(b)) }

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// A month of 10 CPU-hours: two pods of 2 CPUs with 2h maxima fit (8 reserved), a third
// does not; as they run, used + reserved stays 8; one that ends early gives back the
// rest; the next month starts at zero with the running pod's reservation kept.
func TestLedgerMonth(t *testing.T) {
	s := spec(t, v1alpha1.UsageLimits{Hours: hoursOf("10"), Period: v1alpha1.PeriodMonth, TimeZone: "Europe/Berlin", DefaultMaxRuntime: &metav1.Duration{Duration: 2 * time.Hour}})
	t0 := at("2026-12-31T22:30:00+01:00")
	l := NewLedger(s, t0, nil)
	two := map[corev1.ResourceName]float64{cpu: 2}
	for _, uid := range []string{"a", "b"} {
		if sf, ok := l.Check(Need(two, 2*time.Hour), t0); !ok {
			t.Fatalf("pod %s: %+v, want it to fit", uid, sf)
		}
		l.Start(types.UID(uid), two, 2*time.Hour, t0, t0)
	}
	sf, ok := l.Check(Need(two, 2*time.Hour), t0)
	if ok || sf.Used != 0 || sf.Reserved != 8 || sf.Need != 4 || sf.Limit != 10 || sf.Never {
		t.Fatalf("third pod: %+v fits=%v, want used 0 reserved 8 need 4 of 10", sf, ok)
	}
	t1 := t0.Add(time.Hour)
	if u, r := l.Used(t1)[cpu], l.Reserved(t1)[cpu]; !near(u, 4) || !near(r, 4) {
		t.Fatalf("after an hour: used %v reserved %v, want 4 and 4", u, r)
	}
	l.End("a", t1) // an hour early: 2 CPU-hours back
	// used 4 + reserved 2 (b): 4 CPU-hours are free.
	if _, ok := l.Check(Need(two, 2*time.Hour), t1); !ok {
		t.Fatal("a 4 CPU-hour pod does not fit in the 4 free")
	}
	if _, ok := l.Check(Need(two, 121*time.Minute), t1); ok {
		t.Fatal("a pod of a little more than 4 CPU-hours fits in 4")
	}
	// 2027-01-01 00:00 in Berlin: used starts again; b's last 30 minutes count in January.
	t2 := at("2027-01-01T00:15:00+01:00")
	st := l.Snapshot(t2)
	if st.Period != "2027-01" || !st.PeriodStart.Equal(at("2027-01-01T00:00:00+01:00")) || !st.ResetAt.Equal(at("2027-02-01T00:00:00+01:00")) {
		t.Fatalf("period %q from %v to %v, want 2027-01 from Jan 1 to Feb 1 (Berlin)", st.Period, st.PeriodStart, st.ResetAt)
	}
	if !near(st.Used[cpu], 0.5) || !near(st.Reserved[cpu], 0.5) {
		t.Fatalf("January: used %v reserved %v, want 0.5 and 0.5", st.Used[cpu], st.Reserved[cpu])
	}
	if got := l.NextChange(t2); !got.Equal(st.ResetAt) {
		t.Errorf("next change %v, want the period's end %v", got, st.ResetAt)
	}
}

// A restart: the State written at asOf is given back; a pod still running counts from
// asOf, so nothing is lost or counted twice; one admitted after asOf counts from its
// admission.
func TestLedgerRestore(t *testing.T) {
	s := spec(t, v1alpha1.UsageLimits{Hours: hoursOf("100"), Period: v1alpha1.PeriodDay})
	t0 := at("2026-12-06T08:00:00Z")
	one := map[corev1.ResourceName]float64{cpu: 1}
	l := NewLedger(s, t0, nil)
	l.Start("a", one, 4*time.Hour, t0, t0)
	asOf := t0.Add(time.Hour)
	st := l.Snapshot(asOf)
	// The manager dies; 30 minutes later a new one starts and sees a still running and
	// b, admitted after the write.
	now := asOf.Add(30 * time.Minute)
	m := NewLedger(s, now, &st)
	m.Start("a", one, 4*time.Hour, t0, now)
	m.Start("b", one, 4*time.Hour, asOf.Add(10*time.Minute), now)
	if got := m.Used(now)[cpu]; !near(got, 1.5+20.0/60) {
		t.Fatalf("used after restart = %v, want 1.5 (a) + 0.333 (b)", got)
	}
	if got := m.Reserved(now)[cpu]; !near(got, 2.5+(4-20.0/60)) {
		t.Fatalf("reserved after restart = %v, want 2.5 (a) + 3.667 (b)", got)
	}
	// Charged again (a coverage change): counted from where it was left.
	m.End("a", now)
	m.Start("a", one, 4*time.Hour, t0, now)
	if got := m.Used(now)[cpu]; !near(got, 1.5+20.0/60) {
		t.Fatalf("used after a is charged again = %v, want it unchanged", got)
	}
	// A State of yesterday's period is forgotten.
	old := st
	old.PeriodStart = old.PeriodStart.Add(-24 * time.Hour)
	if got := NewLedger(s, now, &old).Used(now)[cpu]; got != 0 {
		t.Errorf("used restored from yesterday = %v, want 0", got)
	}
}

// Half-life: an hour used a half-life ago counts half, and used + the pod's own use
// integrates the decay.
func TestLedgerHalfLife(t *testing.T) {
	s := spec(t, v1alpha1.UsageLimits{Hours: hoursOf("10"), HalfLife: &metav1.Duration{Duration: 10 * time.Hour}})
	t0 := at("2026-12-06T00:00:00Z")
	l := NewLedger(s, t0, &State{AsOf: t0, Used: map[corev1.ResourceName]float64{cpu: 8}})
	if got := l.Used(t0.Add(10 * time.Hour))[cpu]; !near(got, 4) {
		t.Fatalf("8 CPU-hours a half-life later = %v, want 4", got)
	}
	l = NewLedger(s, t0, nil)
	l.Start("a", map[corev1.ResourceName]float64{cpu: 1}, 100*time.Hour, t0, t0)
	// ∫0..10h 2^(-(10-τ)/10) dτ = 10/ln2 · (1 - 1/2)
	if got, want := l.Used(t0.Add(10 * time.Hour))[cpu], 10/math.Ln2/2; !near(got, want) {
		t.Fatalf("1 CPU for a half-life = %v, want %v", got, want)
	}
	if st := l.Snapshot(t0); st.Period != "decayed, half-life 10h0m0s" || !st.ResetAt.IsZero() {
		t.Errorf("snapshot period %q reset %v, want decayed and no reset", st.Period, st.ResetAt)
	}
}

// Rolling: per UTC day; a day is forgotten once it is more than rollingDays before
// today.
func TestLedgerRolling(t *testing.T) {
	s := spec(t, v1alpha1.UsageLimits{Hours: hoursOf("100"), RollingDays: 2})
	t0 := at("2026-12-06T23:00:00Z")
	l := NewLedger(s, t0, nil)
	l.Start("a", map[corev1.ResourceName]float64{cpu: 1}, 2*time.Hour, t0, t0)
	l.End("a", t0.Add(2*time.Hour))
	st := l.Snapshot(t0.Add(2 * time.Hour))
	if len(st.Days) != 2 || st.Days[0].Date != "2026-12-06" || !near(st.Days[0].Used[cpu], 1) || !near(st.Days[1].Used[cpu], 1) {
		t.Fatalf("days = %+v, want an hour on the 6th and one on the 7th", st.Days)
	}
	for _, c := range []struct {
		now  string
		want float64
	}{{"2026-12-08T23:59:00Z", 2}, {"2026-12-09T00:00:00Z", 1}, {"2026-12-10T00:00:00Z", 0}} {
		if got := NewLedger(s, at(c.now), &st).Used(at(c.now))[cpu]; !near(got, c.want) {
			t.Errorf("used at %s = %v, want %v", c.now, got, c.want)
		}
	}
	if got := l.NextChange(t0); !got.Equal(at("2026-12-07T00:00:00Z")) {
		t.Errorf("next change = %v, want the next UTC midnight", got)
	}
}

// Check: a pod that needs more than the limit never fits; a pod that charges nothing
// the budget counts always fits; Evict's next change is the first pod's maximum.
func TestLedgerCheckAndOverrun(t *testing.T) {
	s := spec(t, v1alpha1.UsageLimits{Hours: hoursOf("1"), Period: v1alpha1.PeriodWeek, Exhaustion: v1alpha1.ExhaustionEvict})
	t0 := at("2026-12-09T12:00:00Z") // a Wednesday
	l := NewLedger(s, t0, nil)
	if sf, ok := l.Check(Need(map[corev1.ResourceName]float64{cpu: 2}, time.Hour), t0); ok || !sf.Never {
		t.Fatalf("2 CPU-hours in a budget of 1: %+v fits=%v, want never", sf, ok)
	}
	if _, ok := l.Check(Need(map[corev1.ResourceName]float64{"requests.memory": 1 << 30}, time.Hour), t0); !ok {
		t.Fatal("a pod that uses no CPU does not fit a budget of CPU-hours")
	}
	l.Start("a", map[corev1.ResourceName]float64{cpu: 0.5}, time.Hour, t0, t0)
	if got := l.NextChange(t0); !got.Equal(t0.Add(time.Hour)) {
		t.Fatalf("next change = %v, want a's maximum runtime", got)
	}
	if got := l.Overrun(t0.Add(time.Hour)); len(got) != 1 || got[0] != "a" {
		t.Fatalf("overrun at its maximum = %v, want [a]", got)
	}
	if st := l.Snapshot(t0); st.Period != "2026-W50" || !st.PeriodStart.Equal(at("2026-12-07T00:00:00Z")) {
		t.Errorf("week %q from %v, want 2026-W50 from Monday the 7th", st.Period, st.PeriodStart)
	}
}

func TestFromAPIProblems(t *testing.T) {
	_, problem := FromAPI(&v1alpha1.UsageLimits{Hours: hoursOf("1"), Period: v1alpha1.PeriodDay, TimeZone: "Mars/Olympus"}, same)
	if want := `unknown time zone "Mars/Olympus": hours are counted in UTC`; problem != want {
		t.Errorf("problem = %q, want %q", problem, want)
	}
	s, problem := FromAPI(&v1alpha1.UsageLimits{Hours: hoursOf("1")}, same)
	if problem == "" || s.Period != v1alpha1.PeriodMonth {
		t.Errorf("no way of counting: problem %q, period %q; want a problem and a Month", problem, s.Period)
	}
}

// Under halfLife, what fits is looked at again every sixteenth of the half-life, at most
// ten minutes; with DecayStepsGrow (the estimator's simulations), at least every
// sixteenth of the time since the ledger was made.
func TestLedgerDecaySteps(t *testing.T) {
	t0 := at("2026-12-09T12:00:00Z")
	for name, tc := range map[string]struct {
		halfLife time.Duration
		grow     bool
		after    time.Duration // since t0
		want     time.Duration // from then to the next change
	}{
		"an hour":                  {time.Hour, false, 0, 225 * time.Second},
		"a week":                   {168 * time.Hour, false, 30 * 24 * time.Hour, 10 * time.Minute},
		"a week, growing, at once": {168 * time.Hour, true, 0, 10 * time.Minute},
		"a week, growing, 32h on":  {168 * time.Hour, true, 32 * time.Hour, 2 * time.Hour},
		"an hour, growing, 1m on":  {time.Hour, true, time.Minute, 225 * time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			s := spec(t, v1alpha1.UsageLimits{Hours: hoursOf("10"), HalfLife: &metav1.Duration{Duration: tc.halfLife}})
			s.DecayStepsGrow = tc.grow
			l := NewLedger(s, t0, nil)
			now := t0.Add(tc.after)
			if got := l.NextChange(now).Sub(now); got != tc.want {
				t.Errorf("next change %v after %v, want %v", got, now, tc.want)
			}
		})
	}
}
