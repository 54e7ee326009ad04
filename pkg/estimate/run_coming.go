package estimate

import (
	"container/heap"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// A run's pods still to come (World.Arrivals, doc.go): each stream's next moment in a
// heap, the pods created at it, and when a run stops creating them.

// coming is a stream's next moment in one run.
type coming struct {
	st     *Stream
	stream int           // its index in World.Arrivals
	gap    time.Duration // this run's mean gap (Stream.gapOf)
	at     time.Time
	seq    int // pods made so far
}

// before orders the streams' next moments, the earliest first (of two at one moment,
// the stream first in World.Arrivals).
func (c coming) before(o coming) bool {
	return c.at.Before(o.at) || (c.at.Equal(o.at) && c.stream < o.stream)
}

// minCreate is the fewest pods a run may create from the world's Arrivals; it may
// create as many as the world has pods.
const minCreate = 64

// nextCreate is the earliest moment a stream creates pods, if any still does.
func (s *sim) nextCreate() (time.Time, bool) {
	if s.mayCreate <= 0 || s.ending <= 0 || len(s.coming.items) == 0 {
		return time.Time{}, false
	}
	return s.coming.items[0].at, true
}

// createDue creates the pods of every stream whose moment has come, gated and created
// now, and draws each such stream's next moment (a stream whose next is past its Until
// creates no more).
func (s *sim) createDue() {
	for s.mayCreate > 0 && len(s.coming.items) > 0 && !s.coming.items[0].at.After(s.clk.now) {
		if s.quiet++; s.quiet >= quietMoments && s.hopeless() {
			s.mayCreate = 0
			return
		}
		c := &s.coming.items[0]
		for range c.st.Pods {
			if s.mayCreate <= 0 {
				break
			}
			p := c.st.Template
			c.seq++
			p.Name = fmt.Sprintf("%s-coming-%d-%d", stemOrPod(c.st.Key.Owner), c.stream, c.seq)
			p.UID = types.UID(fmt.Sprintf("coming/%d/%d", c.stream, c.seq))
			p.Created = s.clk.now
			s.made[p.UID] = c.st
			s.mayCreate--
			s.q.UpsertPod(p)
		}
		if c.at = c.st.nextArrival(s.pick.rng, c.at, c.gap); c.at.After(c.st.Until) {
			heap.Pop(&s.coming)
		} else {
			heap.Fix(&s.coming, 0)
		}
	}
}

// quietMoments is how many moments a run creates pods at with no pod asked about
// starting before it looks whether those still waiting wait for room at all.
const quietMoments = 16

// hopeless reports whether no pod asked about that has not started waits for room that
// ends bring (it never fits, its budget is closed, it waits for its group or a claim):
// then the pods still to come change nothing for them, and a run that created them
// would go on until its bounds. Otherwise it looks again quietMoments moments later.
func (s *sim) hopeless() bool {
	s.quiet = 0
	var uids []types.UID
	for _, p := range s.w.Waiting[s.asked:] {
		if !s.out[s.waiting[p.Pod.UID]].started {
			uids = append(uids, p.Pod.UID)
		}
	}
	for _, r := range s.q.Reader().WaitReasons(uids) {
		if waitsForRoom(r.Code) {
			return false
		}
	}
	return true
}

// stemOrPod is a stream owner's name as a pod name's start ("pod" for none).
func stemOrPod(owner string) string {
	if owner == "" {
		return "pod"
	}
	return owner
}
