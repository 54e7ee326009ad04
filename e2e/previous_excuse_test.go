//go:build e2e

package e2e

import (
	"errors"
	"testing"
	"time"

	"github.com/quotagate/quotagate/test/localinstall"
)

// Only a webhook call cut off (EOF, or a reset) while the previous release's webhook
// process was stopping is excused; a failure of another kind, at another time, or
// while the working tree's webhook stopped is not.
func TestExcuseStops(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 21, 0, 0, 0, time.UTC)
	stops := func() []localinstall.ProcessStop {
		return []localinstall.ProcessStop{
			{Component: "webhook", Binary: "/prev/bin/webhook", Began: t0, Ended: t0.Add(100 * time.Millisecond)},
			{Component: "manager", Binary: "/prev/bin/manager", Began: t0.Add(time.Minute), Ended: t0.Add(61 * time.Second)},
			{Component: "webhook", Binary: "/next/bin/webhook", Began: t0.Add(2 * time.Minute), Ended: t0.Add(2*time.Minute + 3*time.Second)},
		}
	}
	excuse := excuseStops(stops, "/prev/bin", "quotagate-0.2.0.tgz")
	eof := errors.New(`creating pod upgrade-7: Internal error occurred: failed calling webhook "gate.quotagate.io": failed to call webhook: Post "https://127.0.0.1:1/gate?timeout=10s": EOF`)
	reset := errors.New(`creating pod upgrade-8: Internal error occurred: failed calling webhook "gate.quotagate.io": failed to call webhook: Post "https://127.0.0.1:1/gate": read tcp: connection reset by peer`)
	refused := errors.New(`creating pod upgrade-9: Internal error occurred: failed calling webhook "gate.quotagate.io": failed to call webhook: Post "https://127.0.0.1:1/gate": dial tcp: connect: connection refused`)
	for _, tc := range []struct {
		name    string
		at      time.Time
		err     error
		excused bool
	}{
		{"EOF as the previous webhook stopped", t0.Add(50 * time.Millisecond), eof, true},
		{"a reset just after it exited", t0.Add(time.Second), reset, true},
		{"EOF long after", t0.Add(10 * time.Second), eof, false},
		{"EOF before it was stopped", t0.Add(-time.Second), eof, false},
		{"connection refused as it stopped", t0.Add(50 * time.Millisecond), refused, false},
		{"EOF as the previous manager stopped", t0.Add(time.Minute), eof, false},
		{"EOF as the working tree's webhook stopped", t0.Add(2*time.Minute + time.Second), eof, false},
	} {
		if got := excuse(tc.at, tc.err); (got != "") != tc.excused {
			t.Errorf("%s: excuse %q, want excused %v", tc.name, got, tc.excused)
		}
	}
}
