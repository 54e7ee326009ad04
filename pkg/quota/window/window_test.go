package window

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func absolute(t *testing.T, start, end string) v1alpha1.BudgetWindowSpec {
	s, e := metav1.NewTime(at(t, start)), metav1.NewTime(at(t, end))
	return v1alpha1.BudgetWindowSpec{BudgetName: "b", Start: &s, End: &e}
}

func scheduled(schedule string, d time.Duration, zone string) v1alpha1.BudgetWindowSpec {
	return v1alpha1.BudgetWindowSpec{BudgetName: "b", Schedule: schedule, Duration: &metav1.Duration{Duration: d}, TimeZone: zone}
}

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func TestStateAt(t *testing.T) {
	tests := map[string]struct {
		spec    v1alpha1.BudgetWindowSpec
		now     string
		want    State
		wantErr string // the Problem's reason
	}{
		"absolute, before": {
			spec: absolute(t, "2026-12-05T10:00:00Z", "2026-12-05T12:00:00Z"), now: "2026-12-05T09:00:00Z",
			want: State{Next: at(t, "2026-12-05T10:00:00Z")},
		},
		"absolute, at its start it is open": {
			spec: absolute(t, "2026-12-05T10:00:00Z", "2026-12-05T12:00:00Z"), now: "2026-12-05T10:00:00Z",
			want: State{Open: true, Next: at(t, "2026-12-05T12:00:00Z")},
		},
		"absolute, at its end it is closed for good": {
			spec: absolute(t, "2026-12-05T10:00:00Z", "2026-12-05T12:00:00Z"), now: "2026-12-05T12:00:00Z",
			want: State{},
		},
		"nightly in Berlin, across midnight: open at 23:30 CET": {
			spec: scheduled("0 22 * * *", 8*time.Hour, "Europe/Berlin"), now: "2026-12-05T22:30:00Z", // 23:30 CET
			want: State{Open: true, Next: at(t, "2026-12-06T05:00:00Z")}, // 06:00 CET
		},
		"nightly in Berlin, across midnight: open after midnight": {
			spec: scheduled("0 22 * * *", 8*time.Hour, "Europe/Berlin"), now: "2026-12-06T01:00:00Z", // 02:00 CET
			want: State{Open: true, Next: at(t, "2026-12-06T05:00:00Z")},
		},
		"nightly in Berlin, closed in the day, opens at 22:00 CET": {
			spec: scheduled("0 22 * * *", 8*time.Hour, "Europe/Berlin"), now: "2026-12-06T12:00:00Z",
			want: State{Next: at(t, "2026-12-06T21:00:00Z")},
		},
		"nightly in Berlin in summer: 22:00 CEST is 20:00 UTC": {
			spec: scheduled("0 22 * * *", 8*time.Hour, "Europe/Berlin"), now: "2026-07-01T12:00:00Z",
			want: State{Next: at(t, "2026-07-01T20:00:00Z")},
		},
		"the night clocks go forward (2026-03-29) is an hour shorter in UTC terms": {
			// Opens 22:00 CET (21:00 UTC) on the 28th; 8 hours later is 05:00 UTC, 07:00 CEST.
			spec: scheduled("0 22 * * *", 8*time.Hour, "Europe/Berlin"), now: "2026-03-28T23:00:00Z",
			want: State{Open: true, Next: at(t, "2026-03-29T05:00:00Z")},
		},
		"a firing in the gap when clocks go forward (02:30 on 2026-03-29 in Berlin) is skipped that day": {
			spec: scheduled("30 2 * * *", time.Hour, "Europe/Berlin"), now: "2026-03-28T12:00:00Z",
			want: State{Next: at(t, "2026-03-30T00:30:00Z")}, // 02:30 CEST the day after
		},
		"a firing in the hour repeated when clocks go back (02:30 on 2026-10-25) fires once": {
			spec: scheduled("30 2 * * *", 30*time.Minute, "Europe/Berlin"), now: "2026-10-25T00:45:00Z", // 02:45 CEST
			want: State{Open: true, Next: at(t, "2026-10-25T01:00:00Z")},
		},
		"overlapping firings hold it open until duration after the last": {
			spec: scheduled("0 9,10 * * *", 90*time.Minute, ""), now: "2026-12-05T10:10:00Z",
			want: State{Open: true, Next: at(t, "2026-12-05T11:30:00Z")},
		},
		"unknown time zone": {
			spec: scheduled("0 22 * * *", time.Hour, "Europe/Atlantis"), now: "2026-12-05T10:00:00Z",
			wantErr: v1alpha1.ReasonUnknownTimeZone,
		},
		"Local is not a zone": {
			spec: scheduled("0 22 * * *", time.Hour, "Local"), now: "2026-12-05T10:00:00Z",
			wantErr: v1alpha1.ReasonUnknownTimeZone,
		},
		"a field out of range": {
			spec: scheduled("0 25 * * *", time.Hour, ""), now: "2026-12-05T10:00:00Z",
			wantErr: v1alpha1.ReasonInvalidSchedule,
		},
		"a descriptor": {
			spec: scheduled("@daily", time.Hour, ""), now: "2026-12-05T10:00:00Z",
			wantErr: v1alpha1.ReasonInvalidSchedule,
		},
		"a zone prefix": {
			spec: scheduled("CRON_TZ=UTC 0 1 * * *", time.Hour, ""), now: "2026-12-05T10:00:00Z",
			wantErr: v1alpha1.ReasonInvalidSchedule,
		},
		"the 30th of February never fires": {
			spec: scheduled("0 0 30 2 *", time.Hour, ""), now: "2026-12-05T10:00:00Z",
			wantErr: v1alpha1.ReasonScheduleNeverFires,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := StateAt(tc.spec, at(t, tc.now))
			if tc.wantErr != "" {
				if got.Problem == nil || got.Problem.Reason != tc.wantErr {
					t.Fatalf("StateAt() = %+v, want the problem %s", got, tc.wantErr)
				}
				if got.Problem.Message == "" {
					t.Errorf("problem %s has no message", got.Problem.Reason)
				}
				return
			}
			if got.Problem != nil {
				t.Fatalf("StateAt(): unexpected problem %v", got.Problem)
			}
			if got.Open != tc.want.Open || !got.Next.Equal(tc.want.Next) {
				t.Errorf("StateAt() = open %v next %v, want open %v next %v", got.Open, got.Next.UTC(), tc.want.Open, tc.want.Next.UTC())
			}
		})
	}
}

func TestEvaluate(t *testing.T) {
	written := v1alpha1.BudgetSpec{
		Hard:           rl("cpu", "10", "memory", "10Gi"),
		BorrowingLimit: rl("cpu", "2"),
		State:          v1alpha1.StateOpen,
	}
	now := "2026-12-05T11:00:00Z"
	open := func(name string, prio int32, set func(*v1alpha1.BudgetWindowSpec)) Window {
		s := absolute(t, "2026-12-05T10:00:00Z", "2026-12-05T12:00:00Z")
		s.Priority = prio
		set(&s)
		return Window{Name: name, Spec: s}
	}
	tests := map[string]struct {
		windows  []Window
		wantSpec v1alpha1.BudgetSpec
		wantOpen []string
		wantNext string
	}{
		"no windows: as written": {
			wantSpec: written,
		},
		"a window not yet open: as written, next change its start": {
			windows: []Window{{Name: "later", Spec: func() v1alpha1.BudgetWindowSpec {
				s := absolute(t, "2026-12-05T13:00:00Z", "2026-12-05T14:00:00Z")
				s.Hard = rl("cpu", "64")
				return s
			}()}},
			wantSpec: written, wantNext: "2026-12-05T13:00:00Z",
		},
		"hard replaces the resources it names, and limits a new one": {
			windows: []Window{open("deadline", 0, func(s *v1alpha1.BudgetWindowSpec) { s.Hard = rl("cpu", "20", "nvidia.com/gpu", "64") })},
			wantSpec: v1alpha1.BudgetSpec{Hard: rl("cpu", "20", "memory", "10Gi", "nvidia.com/gpu", "64"),
				BorrowingLimit: rl("cpu", "2"), State: v1alpha1.StateOpen},
			wantOpen: []string{"deadline"}, wantNext: "2026-12-05T12:00:00Z",
		},
		"add adds to the written hard; an unlimited resource stays unlimited": {
			windows: []Window{open("double", 0, func(s *v1alpha1.BudgetWindowSpec) { s.Add = rl("cpu", "10", "pods", "5") })},
			wantSpec: v1alpha1.BudgetSpec{Hard: rl("cpu", "20", "memory", "10Gi"),
				BorrowingLimit: rl("cpu", "2"), State: v1alpha1.StateOpen},
			wantOpen: []string{"double"}, wantNext: "2026-12-05T12:00:00Z",
		},
		"state and limits": {
			windows: []Window{open("weekend", 0, func(s *v1alpha1.BudgetWindowSpec) {
				s.State = v1alpha1.StateClosed
				s.BorrowingLimit = rl("cpu", "8")
				s.LendingLimit = rl("cpu", "1")
			})},
			wantSpec: v1alpha1.BudgetSpec{Hard: rl("cpu", "10", "memory", "10Gi"),
				BorrowingLimit: rl("cpu", "8"), LendingLimit: rl("cpu", "1"), State: v1alpha1.StateClosed},
			wantOpen: []string{"weekend"}, wantNext: "2026-12-05T12:00:00Z",
		},
		"overlap: the higher priority wins per resource; others fill what it leaves": {
			windows: []Window{
				open("low", 1, func(s *v1alpha1.BudgetWindowSpec) { s.Hard = rl("cpu", "30", "memory", "30Gi") }),
				open("high", 5, func(s *v1alpha1.BudgetWindowSpec) { s.Add = rl("cpu", "5") }),
			},
			wantSpec: v1alpha1.BudgetSpec{Hard: rl("cpu", "15", "memory", "30Gi"),
				BorrowingLimit: rl("cpu", "2"), State: v1alpha1.StateOpen},
			wantOpen: []string{"high", "low"}, wantNext: "2026-12-05T12:00:00Z",
		},
		"overlap at equal priority: the name that sorts first wins": {
			windows: []Window{
				open("b-window", 0, func(s *v1alpha1.BudgetWindowSpec) { s.Hard = rl("cpu", "40"); s.State = v1alpha1.StateOpen }),
				open("a-window", 0, func(s *v1alpha1.BudgetWindowSpec) { s.Hard = rl("cpu", "30"); s.State = v1alpha1.StateClosed }),
			},
			wantSpec: v1alpha1.BudgetSpec{Hard: rl("cpu", "30", "memory", "10Gi"),
				BorrowingLimit: rl("cpu", "2"), State: v1alpha1.StateClosed},
			wantOpen: []string{"a-window", "b-window"}, wantNext: "2026-12-05T12:00:00Z",
		},
		"an invalid window changes nothing, and does not hide a valid one's next change": {
			windows: []Window{
				{Name: "bad", Spec: func() v1alpha1.BudgetWindowSpec {
					s := scheduled("0 1 * * *", time.Hour, "Nowhere/Else")
					s.Hard = rl("cpu", "99")
					return s
				}()},
				open("good", 0, func(s *v1alpha1.BudgetWindowSpec) { s.Hard = rl("cpu", "11") }),
			},
			wantSpec: v1alpha1.BudgetSpec{Hard: rl("cpu", "11", "memory", "10Gi"),
				BorrowingLimit: rl("cpu", "2"), State: v1alpha1.StateOpen},
			wantOpen: []string{"good"}, wantNext: "2026-12-05T12:00:00Z",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := written.DeepCopy()
			got := Evaluate(written, tc.windows, at(t, now))
			if diff := cmp.Diff(before, &written); diff != "" {
				t.Fatalf("Evaluate changed the written spec (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSpec, got.Spec, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("effective spec (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantOpen, got.Open); diff != "" {
				t.Errorf("open windows (-want +got):\n%s", diff)
			}
			var wantNext time.Time
			if tc.wantNext != "" {
				wantNext = at(t, tc.wantNext)
			}
			if !got.Next.Equal(wantNext) {
				t.Errorf("next change = %v, want %v", got.Next, wantNext)
			}
		})
	}
}
