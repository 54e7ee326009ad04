package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSummarize(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(100 - i) // 100..1, unsorted
	}
	tests := map[string]struct {
		samples []float64
		want    Summary
	}{
		"none":    {samples: nil, want: Summary{}},
		"one":     {samples: []float64{7}, want: Summary{N: 1, P50: 7, P99: 7, Min: 7, Max: 7}},
		"three":   {samples: []float64{3, 1, 2}, want: Summary{N: 3, P50: 2, P99: 3, Min: 1, Max: 3}},
		"even":    {samples: []float64{4, 1, 3, 2}, want: Summary{N: 4, P50: 2, P99: 4, Min: 1, Max: 4}},
		"hundred": {samples: hundred, want: Summary{N: 100, P50: 50, P99: 99, Min: 1, Max: 100}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, summarize(tc.samples)); diff != "" {
				t.Errorf("summarize(%v) (-want +got):\n%s", tc.samples, diff)
			}
		})
	}
}

func TestSummarizeLeavesSamplesAlone(t *testing.T) {
	samples := []float64{3, 1, 2}
	summarize(samples)
	if diff := cmp.Diff([]float64{3, 1, 2}, samples); diff != "" {
		t.Errorf("summarize reordered its input (-want +got):\n%s", diff)
	}
}

func TestMillis(t *testing.T) {
	got := millis([]time.Duration{1500 * time.Microsecond, 2 * time.Second})
	if diff := cmp.Diff([]float64{1.5, 2000}, got); diff != "" {
		t.Errorf("millis (-want +got):\n%s", diff)
	}
}

func TestRatio(t *testing.T) {
	tests := map[string]struct {
		a, b, want float64
	}{
		"half":        {a: 1, b: 2, want: 0.5},
		"zero divide": {a: 1, b: 0, want: 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := ratio(tc.a, tc.b); got != tc.want {
				t.Errorf("ratio(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
		})
	}
}
