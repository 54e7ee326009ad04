package app

import (
	"testing"
	"time"
)

// An estimate's times are whole seconds, rounded: one less than a second away is due
// now, not "1s" ahead of a clock that is a fraction of a second behind it.
func TestUntil(t *testing.T) {
	now := time.Date(2026, 12, 7, 9, 0, 0, 600_000_000, time.UTC)
	for _, tc := range []struct {
		at   time.Duration
		want string
	}{
		{-time.Minute, "now"},
		{0, "now"},
		{400 * time.Millisecond, "now"}, // a start at now, rounded up to 09:00:01
		{time.Second, "1s"},
		{90 * time.Second, "90s"},
	} {
		if got := until(now, now.Add(tc.at)); got != tc.want {
			t.Errorf("until %v ahead: %q, want %q", tc.at, got, tc.want)
		}
	}
}
