package visibility

import (
	"testing"
	"time"

	"github.com/quotagate/quotagate/pkg/estimate"
)

// The API's times are whole seconds: the median is rounded to the nearest one, the
// range widened to hold the range estimated, and a range of one instant stays one.
func TestEstimatedStartOfRoundsToSeconds(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name                       string
		median, low, high          time.Duration
		wantMedian, wantLow, wantH time.Duration
	}{
		{"the median past the half second rounds up; the range widens", 10600 * time.Millisecond, 8800 * time.Millisecond, 13200 * time.Millisecond, 11 * time.Second, 8 * time.Second, 14 * time.Second},
		{"the median before the half second rounds down", 10400 * time.Millisecond, 8200 * time.Millisecond, 13500 * time.Millisecond, 10 * time.Second, 8 * time.Second, 14 * time.Second},
		{"a narrow range at the head keeps what it held", 2300 * time.Millisecond, 1700 * time.Millisecond, 2900 * time.Millisecond, 2 * time.Second, 1 * time.Second, 3 * time.Second},
		{"one instant stays one", 10600 * time.Millisecond, 10600 * time.Millisecond, 10600 * time.Millisecond, 11 * time.Second, 11 * time.Second, 11 * time.Second},
		{"whole seconds stay", 10 * time.Second, 9 * time.Second, 12 * time.Second, 10 * time.Second, 9 * time.Second, 12 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := EstimatedStartOf(estimate.Start{Known: true, Median: t0.Add(tc.median), Low: t0.Add(tc.low), High: t0.Add(tc.high)})
			if m, l, h := got.Median.Sub(t0), got.Low.Sub(t0), got.High.Sub(t0); m != tc.wantMedian || l != tc.wantLow || h != tc.wantH {
				t.Errorf("median %v, range %v to %v; want %v, %v to %v", m, l, h, tc.wantMedian, tc.wantLow, tc.wantH)
			}
		})
	}
}
