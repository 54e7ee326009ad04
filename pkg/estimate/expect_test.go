package estimate

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
)

func metaTime(t time.Time) metav1.Time { return metav1.NewTime(t) }

// The order of trust: the pod's deadline, its declared duration, the learned ones.
func TestExpect(t *testing.T) {
	started := t0.Add(time.Minute)
	running := func() *podtest.Builder {
		b := podtest.New("p").NS("team-a").Owner("batch/v1", "Job", "train", true).
			Annotation(v1alpha1.AdmittedAtAnnotation, t0.Format(time.RFC3339))
		st := metaTime(started)
		b.Obj().Status.StartTime = &st
		return b
	}
	deadline := func(b *podtest.Builder, s int64) *podtest.Builder { b.Obj().Spec.ActiveDeadlineSeconds = &s; return b }
	declare := func(b *podtest.Builder, v string) *podtest.Builder {
		return b.Annotation(v1alpha1.ExpectedDurationAnnotation, v)
	}
	learned := func(l *Learner) {
		for _, m := range []int{10, 20, 30} {
			l.Record(KeysOf(running().Obj(), nil), time.Duration(m)*time.Minute)
		}
	}
	for name, tc := range map[string]struct {
		pod   *podtest.Builder
		learn bool
		now   time.Time // zero: t0
		want  Expectation
	}{
		"nothing known": {
			pod:  running(),
			want: Expectation{},
		},
		"learned, from admitted-at": {
			pod:   running(),
			learn: true,
			want: Expectation{Source: SourceLearned, Start: t0, Duration: Duration{
				Median: 20 * time.Minute, Mean: 20 * time.Minute, Low: 10 * time.Minute, High: 30 * time.Minute, Samples: 3, Basis: "durations of 3 runs of Job team-a/train"}},
		},
		"learned, after it ran past its kind's low: the longer runs": {
			pod:   running(),
			learn: true,
			now:   t0.Add(25 * time.Minute),
			want: Expectation{Source: SourceLearned, Start: t0, Duration: Duration{
				Median: 30 * time.Minute, Mean: 30 * time.Minute, Low: 30 * time.Minute, High: 30 * time.Minute, Samples: 1, Basis: "durations of 1 run of Job team-a/train longer than 25m0s"}},
		},
		"learned, after it ran longer than every run: all of them": {
			pod:   running(),
			learn: true,
			now:   t0.Add(40 * time.Minute),
			want: Expectation{Source: SourceLearned, Start: t0, Duration: Duration{
				Median: 20 * time.Minute, Mean: 20 * time.Minute, Low: 10 * time.Minute, High: 30 * time.Minute, Samples: 3, Basis: "durations of 3 runs of Job team-a/train"}},
		},
		"declared beats learned, from startTime": {
			pod:   declare(running(), "45m"),
			learn: true,
			want: Expectation{Source: SourceDeclared, Start: started, Duration: Duration{
				Median: 45 * time.Minute, Mean: 45 * time.Minute, Low: 45 * time.Minute, High: 45 * time.Minute,
				Basis: "annotation " + v1alpha1.ExpectedDurationAnnotation}},
		},
		"a deadline beats both; its range reaches the learned low": {
			pod:   deadline(declare(running(), "45m"), 3600),
			learn: true,
			want: Expectation{Source: SourceDeadline, Start: started, Duration: Duration{
				Median: time.Hour, Mean: time.Hour, Low: 10 * time.Minute, High: time.Hour, Samples: 3, Basis: "spec.activeDeadlineSeconds"}},
		},
		"a deadline alone": {
			pod: deadline(running(), 60),
			want: Expectation{Source: SourceDeadline, Start: started, Duration: Duration{
				Median: time.Minute, Mean: time.Minute, Low: time.Minute, High: time.Minute, Basis: "spec.activeDeadlineSeconds"}},
		},
		"a bad annotation is ignored with a reason": {
			pod:   declare(running(), "an hour"),
			learn: true,
			want: Expectation{Source: SourceLearned, Start: t0, Ignored: `annotation quotagate.io/expected-duration="an hour" is not a duration (like 90m or 2h30m): ignored`,
				Duration: Duration{Median: 20 * time.Minute, Mean: 20 * time.Minute, Low: 10 * time.Minute, High: 30 * time.Minute, Samples: 3, Basis: "durations of 3 runs of Job team-a/train"}},
		},
		"a negative annotation is ignored with a reason": {
			pod:  declare(running(), "-5m"),
			want: Expectation{Ignored: `annotation quotagate.io/expected-duration="-5m" is not positive: ignored`},
		},
		"a gated pod's duration counts from its admission": {
			pod: declare(podtest.New("p").NS("team-a").Gated(), "5m"),
			want: Expectation{Source: SourceDeclared, Duration: Duration{
				Median: 5 * time.Minute, Mean: 5 * time.Minute, Low: 5 * time.Minute, High: 5 * time.Minute,
				Basis: "annotation " + v1alpha1.ExpectedDurationAnnotation}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			l := NewLearner(0)
			if tc.learn {
				learned(l)
			}
			now := tc.now
			if now.IsZero() {
				now = t0
			}
			got := l.Expect(tc.pod.Obj(), nil, now)
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreUnexported(Duration{})); diff != "" {
				t.Errorf("Expect (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEnds(t *testing.T) {
	e := Expectation{Source: SourceLearned, Start: t0, Duration: Duration{Median: 20 * time.Minute, Low: 10 * time.Minute, High: 30 * time.Minute}}
	now := t0.Add(15 * time.Minute)
	median, low, high := e.Ends(now)
	if want := t0.Add(20 * time.Minute); !median.Equal(want) {
		t.Errorf("median end %v, want %v", median, want)
	}
	if !low.Equal(now) {
		t.Errorf("a low end already past is now: got %v, want %v", low, now)
	}
	if want := t0.Add(30 * time.Minute); !high.Equal(want) {
		t.Errorf("high end %v, want %v", high, want)
	}
	gated := Expectation{Source: SourceDeclared, Duration: Duration{Median: time.Minute}}
	if m, _, _ := gated.Ends(now); !m.Equal(now.Add(time.Minute)) {
		t.Errorf("a pod not started ends at now + its duration: got %v", m)
	}
}
