package quota

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// The model's start rules (docs/start-control.md), computed on their own, not with
// package window: a pod of the world may say not-before (up to 20 s ahead), or start
// only in the first 30 s of every even minute (UTC), or carry a not-before that does
// not parse. The checks: no pod is admitted while its rule is closed (admitAndCheck),
// and in a calm world every pod whose rule opens is admitted (calmDown, with
// neverAdmissible for the one that does not parse).

// evenMinutes is the schedule of the world's windowed pods, and windowOpen its window.
const (
	evenMinutes = "*/2 * * * *"
	windowOpen  = 30 * time.Second
)

// randomStart gives a pod one of the world's start rules.
func (w *world) randomStart(b *podBuilder) {
	switch w.rng.IntN(3) {
	case 0:
		at := w.clk.Now().Add(time.Duration(w.rng.IntN(20_000)) * time.Millisecond)
		b.Annotation(v1alpha1.NotBeforeAnnotation, at.UTC().Format(time.RFC3339))
	case 1:
		b.Annotation(v1alpha1.StartScheduleAnnotation, evenMinutes)
		b.Annotation(v1alpha1.StartDurationAnnotation, windowOpen.String())
	default:
		b.Annotation(v1alpha1.NotBeforeAnnotation, "soon")
	}
}

// startOpen says whether the pod's start rule lets it start at now, and whether its
// rule parses at all.
func (w *world) startOpen(pod *corev1.Pod, now time.Time) (open, valid bool) {
	if v, ok := pod.Annotations[v1alpha1.NotBeforeAnnotation]; ok {
		at, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return false, false
		}
		return !now.Before(at), true
	}
	if pod.Annotations[v1alpha1.StartScheduleAnnotation] == evenMinutes {
		u := now.UTC()
		minute := u.Truncate(time.Minute)
		return u.Minute()%2 == 0 && u.Sub(minute) < windowOpen, true
	}
	return true, true
}
