package estimate

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/quotagate/quotagate/pkg/quota"
)

// What a waiting pod's start depends on is not only the pods already there: pods
// created while it waits go ahead of it when their priority is higher, and in a family
// a member's new pods take back what another member borrowed. Arrivals learns how often
// each workload creates pods, at each priority, and a simulation draws the pods still
// to come from that (World.Arrivals), so that the estimate of a pod that typically is
// overtaken is not early by construction, and its range is as wide as the arrivals
// make it unsure.

// Bounds of what Arrivals keeps and what it extrapolates.
const (
	// MinArrivals is how many creations (distinct moments) a stream needs before a
	// simulation draws pods from it.
	MinArrivals = 3
	// arrivalWindow is how many creation moments a stream keeps: the most recent.
	arrivalWindow = 32
	// arrivalQuiet is how many of its mean gaps a stream may go without a creation
	// before it is taken to have stopped (a Poisson stream stays that long without one
	// with odds e⁻⁴, under 2%).
	arrivalQuiet = 4
	// maxArrivalAhead is the furthest a stream is extrapolated: no further ahead than
	// its history reaches back, and at most this.
	maxArrivalAhead = 24 * time.Hour
)

// ArrivalKey is a stream of pod creations: one workload (as Key's LevelOwner names it)
// at one priority.
type ArrivalKey struct {
	Namespace, OwnerKind, Owner string
	Priority                    int32
}

// Arrivals learns, per ArrivalKey, when pods were created: the last arrivalWindow
// moments (pods created in the same second are one moment, a Job's parallel pods) with
// how many pods each, and the last pod as the template of those to come. At most
// maxKeys streams are kept, the least recently created going first. It is safe for
// concurrent use.
type Arrivals struct {
	mu      sync.Mutex
	streams *lru[ArrivalKey, stream] // recorded: a pod created last
}

// stream is one ArrivalKey's recent creations.
type stream struct {
	// moments are the creation moments, oldest first, each with its pod count.
	moments []moment
	// template is the last pod created (as a gated pod) and facts its Facts.
	template quota.Pod
	facts    Facts
}

// newest is the last creation moment (zero for none).
func (s *stream) newest() time.Time {
	if len(s.moments) == 0 {
		return time.Time{}
	}
	return s.moments[len(s.moments)-1].at
}

type moment struct {
	at   time.Time
	pods int
}

// NewArrivals returns an Arrivals that keeps at most maxKeys streams (DefaultMaxKeys
// when maxKeys < 1).
func NewArrivals(maxKeys int) *Arrivals {
	if maxKeys < 1 {
		maxKeys = DefaultMaxKeys
	}
	return &Arrivals{streams: newLRU[ArrivalKey, stream](maxKeys)}
}

// Observe records a pod's creation (p.Created), once per pod: p is the core's view of
// it and f its Facts. A pod seen first long after its creation (the manager starting)
// is recorded at its creation, in order.
func (a *Arrivals) Observe(p quota.Pod, f *Facts) {
	if p.Created.IsZero() {
		return
	}
	key := ArrivalKey{Namespace: f.Namespace, OwnerKind: f.OwnerKind, Owner: f.Owner, Priority: p.Priority}
	at := p.Created.Truncate(time.Second)
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.streams.get(key)
	if !ok || !at.Before(s.newest()) {
		s = a.streams.record(key) // a new stream, or a creation no older than its last
	}
	i, found := slices.BinarySearchFunc(s.moments, at, func(m moment, t time.Time) int { return m.at.Compare(t) })
	switch {
	case found:
		s.moments[i].pods++
	case i == 0 && len(s.moments) == arrivalWindow:
		return // older than the window keeps
	default:
		s.moments = slices.Insert(s.moments, i, moment{at: at, pods: 1})
		if len(s.moments) > arrivalWindow {
			s.moments = slices.Delete(s.moments, 0, 1)
		}
	}
	if i < len(s.moments)-1 {
		return // not the newest: the template stays
	}
	s.template, s.facts = asTemplate(p), *f
}

// asTemplate is a created pod as the pods to come of its stream are: gated, in no
// group, with no claims, dependencies, schedule or admission of their own.
func asTemplate(p quota.Pod) quota.Pod {
	return quota.Pod{
		PodRef:          quota.PodRef{Namespace: p.Namespace},
		Labels:          p.Labels,
		NodeSelector:    p.NodeSelector,
		NodeAffinity:    p.NodeAffinity,
		Tolerations:     p.Tolerations,
		Priority:        p.Priority,
		Usage:           p.Usage,
		Uncountable:     p.Uncountable,
		Unset:           p.Unset,
		Gated:           true,
		ActiveDeadline:  p.ActiveDeadline,
		DeclaredRuntime: p.DeclaredRuntime,
	}
}

// Stream is a stream of pod creations a simulation draws the pods to come from.
type Stream struct {
	Key ArrivalKey
	// Template is the pod each creation makes (gated; its name, UID and creation time
	// are the simulation's), Expect how long it runs once admitted.
	Template quota.Pod
	Expect   Expectation
	// Facts are the Facts of the stream's last pod as they were before it was admitted,
	// what Expect is learned from.
	Facts Facts
	// Gap is the mean time between two creation moments: Span (from the first moment
	// kept to now) over Gaps (the moments after the first). Pods is how many pods a
	// moment creates: the median of the recent moments' counts (a Job's parallelism),
	// so that a burst once (a backlog submitted at once) does not make every moment a
	// burst.
	Gap, Span time.Duration
	Gaps      int
	Pods      int
	// Until is how far ahead the stream is drawn: as far as its history reaches back,
	// at most maxArrivalAhead.
	Until time.Time
}

// Streams returns the streams still creating pods at now: with at least MinArrivals
// moments, the last of them no more than arrivalQuiet mean gaps ago. Their Expect is
// left to the caller (WorldBuilder.AddArrivals).
func (a *Arrivals) Streams(now time.Time) []Stream {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []Stream
	for key, s := range a.streams.all() {
		n := len(s.moments)
		if n < MinArrivals {
			continue
		}
		first, last := s.moments[0].at, s.moments[n-1].at
		if !now.After(first) || !last.After(first) {
			continue
		}
		active := last.Sub(first) / time.Duration(n-1)
		if now.Sub(last) > arrivalQuiet*active {
			continue // stopped
		}
		// The gap, from every creation after the first up to now: a stream that has
		// been quiet since its last is slower than its moments alone say.
		span := now.Sub(first)
		pods := make([]int, n)
		for i, m := range s.moments {
			pods[i] = m.pods
		}
		slices.Sort(pods)
		f := s.facts
		f.Started, f.Held, f.Finished, f.Ended = time.Time{}, time.Time{}, time.Time{}, false
		out = append(out, Stream{
			Key: key, Template: s.template, Facts: f, Pods: pods[(n-1)/2],
			Gap: span / time.Duration(n-1), Span: span, Gaps: n - 1,
			Until: now.Add(min(span, maxArrivalAhead)),
		})
	}
	slices.SortFunc(out, func(x, y Stream) int {
		return cmp.Or(strings.Compare(x.Key.Namespace, y.Key.Namespace), strings.Compare(x.Key.OwnerKind, y.Key.OwnerKind),
			strings.Compare(x.Key.Owner, y.Key.Owner), cmp.Compare(x.Key.Priority, y.Key.Priority))
	})
	return out
}

// gapOf draws a run's mean gap of the stream: its rate is uncertain, as few moments
// leave it (the rate of a Poisson stream that made Gaps creations in Span, with a flat
// prior, is Gamma(Gaps, Span)), and every pod of the run shares it, as the runs of a
// workload share its spread (spreadFrom).
func (st *Stream) gapOf(rng *rand.Rand) time.Duration {
	var sum float64 // Gamma(Gaps, 1), as a sum of Gaps exponentials
	for range st.Gaps {
		sum += rng.ExpFloat64()
	}
	if sum <= 0 {
		return st.Gap
	}
	return time.Duration(min(float64(st.Span)/sum, float64(maxArrivalAhead)))
}

// nextArrival draws when the stream's next moment after t comes, at a mean gap of gap
// (exponential gaps: creations as a Poisson stream).
func (st *Stream) nextArrival(rng *rand.Rand, t time.Time, gap time.Duration) time.Time {
	return t.Add(time.Duration(rng.ExpFloat64() * float64(gap)))
}
