package window

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

func TestStartAt(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time {
		v, err := time.ParseInLocation("2006-01-02 15:04", s, berlin)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	nightly := func(notBefore time.Time) *Start {
		s, p := NewStart(notBefore, "0 22 * * *", 8*time.Hour, "Europe/Berlin")
		if p != nil {
			t.Fatal(p)
		}
		return s
	}
	once, p := NewStart(at("2026-12-06 12:00"), "", 0, "")
	if p != nil {
		t.Fatal(p)
	}
	for _, tc := range []struct {
		name     string
		rule     *Start
		now      time.Time
		open     bool
		next     time.Time
		describe string
	}{
		{"no rule", nil, at("2026-12-06 11:00"), true, time.Time{}, ""},
		{"before notBefore", once, at("2026-12-06 11:59"), false, at("2026-12-06 12:00"), "not before 2026-12-06T11:00:00Z"},
		{"at notBefore", once, at("2026-12-06 12:00"), true, time.Time{}, ""},
		{"between windows", nightly(time.Time{}), at("2026-12-06 12:00"), false, at("2026-12-06 22:00"), "opens 2026-12-06 22:00 CET"},
		{"inside a window", nightly(time.Time{}), at("2026-12-07 05:59"), true, at("2026-12-07 06:00"), "closes 2026-12-07 06:00 CET"},
		{"at a window's end", nightly(time.Time{}), at("2026-12-07 06:00"), false, at("2026-12-07 22:00"), ""},
		{"notBefore inside a window", nightly(at("2026-12-07 02:00")), at("2026-12-06 23:00"), false, at("2026-12-07 02:00"), "not before 2026-12-07T01:00:00Z, then"},
		{"notBefore between windows", nightly(at("2026-12-07 12:00")), at("2026-12-06 23:00"), false, at("2026-12-07 22:00"), ""},
		{"after notBefore, inside", nightly(at("2026-12-07 02:00")), at("2026-12-07 03:00"), true, at("2026-12-07 06:00"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			open, next := tc.rule.At(tc.now)
			if open != tc.open || !next.Equal(tc.next) {
				t.Errorf("At(%s) = %v, %s; want %v, %s", tc.now, open, next, tc.open, tc.next)
			}
			if tc.describe != "" && !strings.Contains(tc.rule.Describe(tc.now), tc.describe) {
				t.Errorf("Describe = %q, want it to say %q", tc.rule.Describe(tc.now), tc.describe)
			}
		})
	}
}

func TestNewStartRefuses(t *testing.T) {
	for _, tc := range []struct {
		name     string
		schedule string
		d        time.Duration
		zone     string
		want     string
	}{
		{"duration without schedule", "", time.Hour, "", "needs a schedule"},
		{"unknown zone", "0 22 * * *", time.Hour, "Mars/Olympus", "not an IANA time zone"},
		{"no duration", "0 22 * * *", 0, "", "duration greater than zero"},
		{"bad field", "0 25 * * *", time.Hour, "", "schedule"},
		{"never fires", "0 0 30 2 *", time.Hour, "", "fires at no instant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, p := NewStart(time.Time{}, tc.schedule, tc.d, tc.zone)
			if p == nil || s != nil || !strings.Contains(p.Message, tc.want) {
				t.Errorf("NewStart = %v, %v; want a problem saying %q", s, p, tc.want)
			}
		})
	}
	if s, p := NewStart(time.Time{}, "", 0, ""); s != nil || p != nil {
		t.Errorf("NewStart with nothing = %v, %v; want no rule and no problem", s, p)
	}
}

// A schedule that fires every minute, each window open for weeks, costs At a bounded
// walk: it reports the window open until at most startChained firings ahead, and is
// still open there, so the pod is looked at again and stays startable.
func TestStartAtBoundsOverlappingWindows(t *testing.T) {
	s, p := NewStart(time.Time{}, "* * * * *", 21*24*time.Hour, "")
	if p != nil {
		t.Fatal(p)
	}
	now := time.Date(2026, 12, 6, 12, 0, 30, 0, time.UTC)
	open, next := s.At(now)
	if !open || next.After(now.Add(21*24*time.Hour+(startChained+1)*time.Minute)) {
		t.Fatalf("At = %v, %s; want open, the next look within %d firings", open, next, startChained)
	}
	if again, _ := s.At(next); !again {
		t.Errorf("At(%s) = closed: the window of a schedule firing every minute never closes", next)
	}
	w := v1alpha1.BudgetWindowSpec{Schedule: "* * * * *", Duration: &metav1.Duration{Duration: 21 * 24 * time.Hour}}
	if st := StateAt(w, now); !st.Open || !st.Next.After(next) {
		t.Errorf("StateAt = %+v; a BudgetWindow follows more firings than a start rule (%s)", st, next)
	}
}
