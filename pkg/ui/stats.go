package ui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Throughput and waits over the last hour, computed from the pods the watch holds: the
// admitted-at annotation says when quotagate ungated a pod, its creation time when it
// began to wait, and its PodScheduled condition when kube-scheduler placed it. No
// Prometheus: what the page shows is what the API server holds now, so pods deleted
// within the hour (a Job's cleaned-up pods) are not counted.

// statsWindow is how far back the statistics look, in statsBuckets buckets.
const (
	statsWindow  = time.Hour
	statsBuckets = 12
)

// hourStats are the admissions and waits of the last hour.
type hourStats struct {
	// Buckets count admissions per 5 minutes, the oldest first.
	Buckets [statsBuckets]bucket
	// Admitted counts the pods admitted within the hour; Gated the pods gated now.
	Admitted, Gated int
	// Wait is creation to admission of the pods admitted within the hour; Schedule is
	// admission to PodScheduled.
	Wait, Schedule percentiles
}

type bucket struct {
	// Label is the bucket's start, as the page shows it (15:05).
	Label string
	Count int
	// Percent is Count of the fullest bucket, for the bar's height.
	Percent int
	// Wait is the median wait of the pods admitted in the bucket (0 without any), and
	// WaitPercent its share of the longest such median, for the chart's line.
	Wait        time.Duration
	WaitPercent int
}

type percentiles struct {
	N                int
	P50, P90, Max    time.Duration
	P50s, P90s, Maxs string
}

// Summary is the percentiles in words.
func (p percentiles) Summary() string {
	if p.N == 0 {
		return "none in the last hour"
	}
	return fmt.Sprintf("median %s, p90 %s, longest %s (%d pods)", p.P50s, p.P90s, p.Maxs, p.N)
}

func percentilesOf(ds []time.Duration) percentiles {
	if len(ds) == 0 {
		return percentiles{}
	}
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[min(len(ds)-1, int(q*float64(len(ds))))] }
	p := percentiles{N: len(ds), P50: at(0.5), P90: at(0.9), Max: ds[len(ds)-1]}
	p.P50s, p.P90s, p.Maxs = humanDuration(p.P50), humanDuration(p.P90), humanDuration(p.Max)
	return p
}

// humanDuration is a duration as kubectl prints ages, with seconds below a minute.
func humanDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return duration.HumanDuration(d)
}

// lastHour computes the statistics at now over pods.
func lastHour(pods []*corev1.Pod, now time.Time) hourStats {
	var s hourStats
	start := now.Add(-statsWindow)
	width := statsWindow / statsBuckets
	for i := range s.Buckets {
		s.Buckets[i].Label = start.Add(time.Duration(i) * width).Local().Format("15:04")
	}
	var waits, schedules []time.Duration
	var bucketWaits [statsBuckets][]time.Duration
	for _, p := range pods {
		if podState(p) == stateGated {
			s.Gated++
			continue
		}
		at, ok := admittedAt(p)
		if !ok || at.Before(start) || at.After(now) {
			continue
		}
		s.Admitted++
		i := min(statsBuckets-1, int(at.Sub(start)/width))
		s.Buckets[i].Count++
		waits = append(waits, at.Sub(p.CreationTimestamp.Time))
		bucketWaits[i] = append(bucketWaits[i], at.Sub(p.CreationTimestamp.Time))
		if sched, ok := conditionTrueAt(p, corev1.PodScheduled); ok {
			// The annotation has seconds; the condition too: a pod scheduled within
			// the second of its admission waited 0.
			schedules = append(schedules, max(0, sched.Sub(at)))
		}
	}
	most, longest := 0, time.Duration(0)
	for i, b := range s.Buckets {
		most = max(most, b.Count)
		if len(bucketWaits[i]) > 0 {
			s.Buckets[i].Wait = max(0, percentilesOf(bucketWaits[i]).P50)
			longest = max(longest, s.Buckets[i].Wait)
		}
	}
	for i := range s.Buckets {
		if most > 0 {
			s.Buckets[i].Percent = s.Buckets[i].Count * 100 / most
		}
		if longest > 0 {
			s.Buckets[i].WaitPercent = int(s.Buckets[i].Wait * 100 / longest)
		}
	}
	s.Wait, s.Schedule = percentilesOf(waits), percentilesOf(schedules)
	return s
}

// The chart of the last hour: a bar per bucket for its admissions, and a line through
// the buckets' median waits, drawn by the server as SVG (no script, nothing fetched),
// with each bar's numbers in its tooltip and the whole in words for screen readers.
const (
	chartWidth  = 600
	chartHeight = 160
	chartTop    = 10
	chartBottom = 140 // the baseline; the hour's labels go below it
	barSlot     = chartWidth / statsBuckets
	barWidth    = barSlot - 10
)

// chartBar is one bucket as drawn.
type chartBar struct {
	X, Y, Height, Center int
	Label, Title         string
	// ShowLabel is set on every third bucket: twelve times do not fit under the bars.
	ShowLabel bool
	// HasWait is set on a bucket that admitted pods: the line has a dot at WaitY.
	HasWait bool
	WaitY   int
}

// statsChart is the chart's geometry.
type statsChart struct {
	Width, Height, Baseline int
	Bars                    []chartBar
	// WaitLine is the polyline's points through the median waits of the buckets that
	// admitted pods; LongestWait labels its top.
	WaitLine    string
	LongestWait string
	// Summary is the chart in words.
	Summary string
}

// Chart draws the statistics' buckets.
func (s hourStats) Chart() statsChart {
	c := statsChart{Width: chartWidth, Height: chartHeight, Baseline: chartBottom}
	span := chartBottom - chartTop
	var points, words []string
	var longest time.Duration
	for i, b := range s.Buckets {
		h := b.Percent * span / 100
		bar := chartBar{X: i*barSlot + 5, Y: chartBottom - h, Height: h, Center: i*barSlot + barSlot/2,
			Label: b.Label, ShowLabel: i%3 == 0}
		bar.Title = fmt.Sprintf("%s: %d admitted", b.Label, b.Count)
		if b.Count > 0 {
			bar.Title += ", median wait " + humanDuration(b.Wait)
			words = append(words, bar.Title)
			bar.HasWait, bar.WaitY = true, chartBottom-b.WaitPercent*span/100
			points = append(points, fmt.Sprintf("%d,%d", bar.Center, bar.WaitY))
			longest = max(longest, b.Wait)
		}
		c.Bars = append(c.Bars, bar)
	}
	c.WaitLine = strings.Join(points, " ")
	if longest > 0 {
		c.LongestWait = humanDuration(longest)
	}
	if len(words) == 0 {
		c.Summary = "No pod was admitted in the last hour."
	} else {
		c.Summary = "Admitted per 5 minutes, with the median wait: " + strings.Join(words, "; ") + "."
	}
	return c
}
